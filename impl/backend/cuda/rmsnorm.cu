// RMSNorm without weight over rows of length C: one warp per row, 8 rows per block. The sum of
// squares is a per-lane strided sum then a fixed-order warp tree, so results repeat bit for bit.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"

#define ROWS_PER_BLOCK 8

__global__ static void rmsnorm_fwd_kernel(float *out, float *rstd, const float *inp, int N, int C, double eps) {
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;  // whole warps leave together
    const float *x = inp + (size_t)row * C;
    float ss = 0;
    for (int c = lane; c < C; c += 32) ss += x[c] * x[c];
    ss = gm_warp_sum(ss);  // every lane has read its x before any lane writes (out may alias inp)
    float r = (float)(1.0 / sqrt((double)ss / C + eps));
    for (int c = lane; c < C; c += 32) out[(size_t)row * C + c] = x[c] * r;
    if (lane == 0) rstd[row] = r;
}

// dx (+)= r*dy - x * r^3 * mean(dy*x)
__global__ static void rmsnorm_bwd_kernel(float *dinp, gm_grad_write write, const float *dout, const float *inp,
                                          const float *rstd, int N, int C) {
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *dy = dout + (size_t)row * C;
    float dot = 0;
    for (int c = lane; c < C; c += 32) dot += dy[c] * x[c];
    dot = gm_warp_sum(dot);
    float r = rstd[row], k = r * r * r * dot / (float)C;
    for (int c = lane; c < C; c += 32) gm_grad_put(&dinp[(size_t)row * C + c], write, r * dy[c] - k * x[c]);
}

void gm_cuda_rmsnorm_fwd(const gm_backend *be, gm_actval *out_act, gm_real *rstd, const gm_actval *inp_act, int N, int C,
                         double eps) {
    gm_real *out = (gm_real *)out_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0) return;
    rmsnorm_fwd_kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(out, rstd, inp,
                                                                                                       N, C, eps);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_rmsnorm_bwd(const gm_backend *be, gm_actval *dinp_act, gm_grad_write dinp_write, const gm_actval *dout_act,
                         const gm_actval *inp_act, const gm_real *rstd, int N, int C) {
    gm_real *dinp = (gm_real *)dinp_act;
    const gm_real *dout = (const gm_real *)dout_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0) return;
    rmsnorm_bwd_kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(
        dinp, dinp_write, dout, inp, rstd, N, C);
    GM_CU_LAUNCHED(c);
}
