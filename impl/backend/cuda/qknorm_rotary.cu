// QK-norm then rotary, fused (backend.h qknorm_rotary_fwd/bwd): one warp per head row of
// (B, T, NH, HD), 8 rows per block. The arithmetic is rmsnorm.cu's and rotary.cu's, statement for
// statement and in the same order (the sum of squares and the backward's dot per lane over
// c = lane, lane + 32, ..., then gm_warp_sum), so the fused kernels give what the two separate
// kernels give, without storing the normed row: forward reads x once and writes out and rstd
// (2 N C + N elements where the pair of kernels moved 4 N C + N); backward reads dout, x and rstd
// and writes dinp (3 N C + N, plus the read of dinp when added into, where the pair moved 5 N C + N).
// The backward's rotated row waits in shared memory (HD floats per warp) so that its dot with x is
// summed in rmsnorm_bwd's order.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"

#define ROWS_PER_BLOCK 8

// Row `row` (a (b, t, h) index) of n; t selects the tables' row.
static __device__ __forceinline__ int row_time(size_t row, int T, int NH) { return (int)((row / NH) % T); }

__global__ static void qknorm_rotary_fwd_kernel(float *out, float *rstd, const float *inp, const float *cos_t,
                                                const float *sin_t, int rows, int T, int NH, int HD, double eps) {
    const size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    const int lane = threadIdx.x % 32, h2 = HD / 2;
    if (row >= (size_t)rows) return;  // whole warps leave together
    const float *x = inp + row * HD;
    float ss = 0;
    for (int c = lane; c < HD; c += 32) ss += x[c] * x[c];
    ss = gm_warp_sum(ss);  // every lane has read its x before any lane writes (out may alias inp)
    const float r = (float)(1.0 / sqrt((double)ss / HD + eps));
    const int t = row_time(row, T, NH);
    float *y = out + row * HD;
    for (int i = lane; i < h2; i += 32) {
        const float c = cos_t[(size_t)t * h2 + i], s = 1.0f * sin_t[(size_t)t * h2 + i];
        const float x1 = x[i] * r, x2 = x[i + h2] * r;
        y[i] = x1 * c + x2 * s, y[i + h2] = -x1 * s + x2 * c;
    }
    if (lane == 0) rstd[row] = r;
}

__global__ static void qknorm_rotary_bwd_kernel(float *dinp, gm_grad_write write, const float *dout, const float *inp,
                                                const float *rstd, const float *cos_t, const float *sin_t, int rows,
                                                int T, int NH, int HD) {
    extern __shared__ float srow[];  // (ROWS_PER_BLOCK, HD): each warp's rotated-back row
    const size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    const int lane = threadIdx.x % 32, h2 = HD / 2;
    if (row >= (size_t)rows) return;
    float *dy = srow + (size_t)(threadIdx.x / 32) * HD;
    const float *g = dout + row * HD, *x = inp + row * HD;
    const int t = row_time(row, T, NH);
    for (int i = lane; i < h2; i += 32) {  // rotary_bwd: the rotation by -theta
        const float c = cos_t[(size_t)t * h2 + i], s = -1.0f * sin_t[(size_t)t * h2 + i];
        const float g1 = g[i], g2 = g[i + h2];
        dy[i] = g1 * c + g2 * s, dy[i + h2] = -g1 * s + g2 * c;
    }
    __syncwarp();
    float dot = 0;
    for (int c = lane; c < HD; c += 32) dot += dy[c] * x[c];
    dot = gm_warp_sum(dot);
    const float r = rstd[row], k = r * r * r * dot / (float)HD;
    for (int c = lane; c < HD; c += 32) gm_grad_put(&dinp[row * HD + c], write, r * dy[c] - k * x[c]);
}

void gm_cuda_qknorm_rotary_fwd(const gm_backend *be, gm_actval *out_act, gm_real *rstd, const gm_actval *inp_act,
                               const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, double eps) {
    gm_real *out = (gm_real *)out_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    const int rows = B * T * NH;
    if (rows <= 0 || HD < 2) return;
    qknorm_rotary_fwd_kernel<<<(rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(
        out, rstd, inp, cos_t, sin_t, rows, T, NH, HD, eps);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_qknorm_rotary_bwd(const gm_backend *be, gm_actval *dinp_act, gm_grad_write dinp_write, const gm_actval *dout_act,
                               const gm_actval *inp_act, const gm_real *rstd, const gm_real *cos_t, const gm_real *sin_t,
                               int B, int T, int NH, int HD) {
    gm_real *dinp = (gm_real *)dinp_act;
    const gm_real *dout = (const gm_real *)dout_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    const int rows = B * T * NH;
    if (rows <= 0 || HD < 2) return;
    const size_t smem = sizeof(float) * ROWS_PER_BLOCK * (size_t)HD;
    qknorm_rotary_bwd_kernel<<<(rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, smem, c->stream>>>(
        dinp, dinp_write, dout, inp, rstd, cos_t, sin_t, rows, T, NH, HD);
    GM_CU_LAUNCHED(c);
}
