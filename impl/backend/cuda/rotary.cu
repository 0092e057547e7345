// Rotary embedding, half-split layout, on activations (B, T, NH, HD) with fp32 tables (T, HD/2):
// one thread per W rotated pairs (x[i..i+W), x[i+HD/2..i+HD/2+W)), i a multiple of W. W =
// GM_ACT_VEC (16-byte accesses to both halves and to the tables' rows) where HD/2 % GM_ACT_VEC ==
// 0, the token strides are multiples of it and every pointer is 16-byte aligned (HD 64 and 128 of
// the model), else W = 1. The backward rotates by -theta. inp (forward) and dinp (backward) may be
// views with token stride ld (rotary.cuh's gm_head_row_at); out and dout are tensors of their own.
#include <cuda_runtime.h>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rotary.cuh"

// sign = +1: y1 = x1 c + x2 s, y2 = -x1 s + x2 c; sign = -1: the transpose. out written as `write`
// says. Token strides ld_out and ld_in (NH HD for a tensor of its own).
template <int W>
__global__ static void rotary_kernel(gm_cuda_act *out, int ld_out, const gm_cuda_act *inp, int ld_in,
                                     const float *cos_t, const float *sin_t, int T, int NH, int HD, size_t ngroups,
                                     float sign, gm_grad_write write) {
    const int h2 = HD / 2, gph = h2 / W;  // groups per head
    for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < ngroups; p += (size_t)gridDim.x * blockDim.x) {
        const int i = (int)(p % gph) * W;
        const size_t head = p / gph;  // index of (b, t, h)
        const int t = (int)((head / NH) % T);
        const size_t in_at = gm_head_row_at(head, NH, HD, ld_in), out_at = gm_head_row_at(head, NH, HD, ld_out);
        float c[W], s[W], x1[W], x2[W];
        gm_f32_ldw<W>(cos_t, (size_t)t * h2 + i, c);
        gm_f32_ldw<W>(sin_t, (size_t)t * h2 + i, s);
        gm_act_ldw<W>(inp, in_at + i, x1);  // read both halves before writing (out may alias inp)
        gm_act_ldw<W>(inp, in_at + i + h2, x2);
        gm_rotate<W>(x1, x2, c, s, sign);
        gm_act_putw<W>(out, out_at + i, write, x1);
        gm_act_putw<W>(out, out_at + i + h2, write, x2);
    }
}

static void rotary(const gm_backend *be, gm_cuda_act *out, int ld_out, const gm_cuda_act *inp, int ld_in,
                   const float *cos_t, const float *sin_t, int B, int T, int NH, int HD, float sign,
                   gm_grad_write write) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (B <= 0 || T <= 0 || NH <= 0 || HD < 2) return;
    const bool vec = HD / 2 % GM_ACT_VEC == 0 && ld_out % GM_ACT_VEC == 0 && ld_in % GM_ACT_VEC == 0 &&
                     gm_vec_aligned_all(out, inp, cos_t, sin_t);
    const int W = vec ? GM_ACT_VEC : 1;
    const size_t ngroups = (size_t)B * T * NH * (HD / 2 / W);
    const auto kernel = vec ? rotary_kernel<GM_ACT_VEC> : rotary_kernel<1>;
    kernel<<<gm_cuda_blocks(ngroups, 256), 256, 0, c->stream>>>(out, ld_out, inp, ld_in, cos_t, sin_t, T, NH, HD,
                                                                ngroups, sign, write);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_rotary_fwd(const gm_backend *be, gm_actval *out, const gm_actval *inp, const gm_real *cos_t,
                        const gm_real *sin_t, int B, int T, int NH, int HD, int ld) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    rotary(be, o, NH * HD, x, ld, cos_t, sin_t, B, T, NH, HD, 1.0f, GM_GRAD_SET);
}

void gm_cuda_rotary_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                        const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, int ld) {
    gm_cuda_act *dx = (gm_cuda_act *)dinp;
    const gm_cuda_act *dy = (const gm_cuda_act *)dout;
    rotary(be, dx, ld, dy, NH * HD, cos_t, sin_t, B, T, NH, HD, -1.0f, dinp_write);
}
