// Rotary embedding, half-split layout, on (B, T, NH, HD) with tables (T, HD/2): one thread per
// rotated pair (x[i], x[i + HD/2]). The backward rotates by -theta.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_common.cuh"

// sign = +1: y1 = x1 c + x2 s, y2 = -x1 s + x2 c; sign = -1: the transpose. out written as `write` says.
__global__ static void rotary_kernel(float *out, const float *inp, const float *cos_t, const float *sin_t, int T,
                                     int NH, int HD, size_t npairs, float sign, gm_grad_write write) {
    int h2 = HD / 2;
    for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < npairs; p += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(p % h2);
        size_t head = p / h2;  // index of (b, t, h)
        int t = (int)((head / NH) % T);
        size_t base = head * HD;
        float c = cos_t[(size_t)t * h2 + i], s = sign * sin_t[(size_t)t * h2 + i];
        float x1 = inp[base + i], x2 = inp[base + i + h2];  // read both before writing (out may alias)
        float y1 = x1 * c + x2 * s, y2 = -x1 * s + x2 * c;
        gm_grad_put(&out[base + i], write, y1);
        gm_grad_put(&out[base + i + h2], write, y2);
    }
}

static void rotary(const gm_backend *be, float *out, const float *inp, const float *cos_t, const float *sin_t, int B,
                   int T, int NH, int HD, float sign, gm_grad_write write) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (B <= 0 || T <= 0 || NH <= 0 || HD < 2) return;
    size_t npairs = (size_t)B * T * NH * (HD / 2);
    rotary_kernel<<<gm_cuda_blocks(npairs, 256), 256, 0, c->stream>>>(out, inp, cos_t, sin_t, T, NH, HD, npairs, sign,
                                                                      write);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_rotary_fwd(const gm_backend *be, gm_actval *out_act, const gm_actval *inp_act, const gm_real *cos_t,
                        const gm_real *sin_t, int B, int T, int NH, int HD) {
    gm_real *out = (gm_real *)out_act;
    const gm_real *inp = (const gm_real *)inp_act;
    rotary(be, out, inp, cos_t, sin_t, B, T, NH, HD, 1.0f, GM_GRAD_SET);
}

void gm_cuda_rotary_bwd(const gm_backend *be, gm_actval *dinp_act, gm_grad_write dinp_write, const gm_actval *dout_act,
                        const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD) {
    gm_real *dinp = (gm_real *)dinp_act;
    const gm_real *dout = (const gm_real *)dout_act;
    rotary(be, dinp, dout, cos_t, sin_t, B, T, NH, HD, -1.0f, dinp_write);
}
