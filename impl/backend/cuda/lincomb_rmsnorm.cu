// A residual add or mix then RMSNorm, fused (backend.h lincomb_rmsnorm_fwd): one warp per row,
// 8 rows per block. Each element is lincomb.cu's expression and the norm is rmsnorm.cu's, in the
// same order (the sum of squares per lane over c = lane, lane + 32, ..., then gm_warp_sum), so the
// fused kernel gives what the two separate kernels give. It reads x (and y) once and writes sum,
// out and rstd: (y ? 2 : 1) N C + 2 N C + N elements where the pair moved one more N C (the norm's
// read of sum). A lane reads back only the sums it wrote itself (from cache).
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"

#define ROWS_PER_BLOCK 8

__global__ static void lincomb_rmsnorm_kernel(float *sum, float *out, float *rstd, double ca, const float *pa,
                                              const float *x, double cb, const float *pb, const float *y, int N,
                                              int C, double eps) {
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;  // whole warps leave together
    const float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    const size_t base = (size_t)row * C;
    float ss = 0;
    for (int c = lane; c < C; c += 32) {
        const float s = a * x[base + c] + (y ? b * y[base + c] : 0.0f);
        sum[base + c] = s;
        ss += s * s;
    }
    ss = gm_warp_sum(ss);
    const float r = (float)(1.0 / sqrt((double)ss / C + eps));
    for (int c = lane; c < C; c += 32) out[base + c] = sum[base + c] * r;
    if (lane == 0) rstd[row] = r;
}

void gm_cuda_lincomb_rmsnorm_fwd(const gm_backend *be, gm_actval *sum_act, gm_actval *out_act, gm_real *rstd, double ca,
                                 const gm_real *pa, const gm_actval *x_act, double cb, const gm_real *pb, const gm_actval *y_act,
                                 int N, int C, double eps) {
    gm_real *sum = (gm_real *)sum_act;
    gm_real *out = (gm_real *)out_act;
    const gm_real *x = (const gm_real *)x_act;
    const gm_real *y = (const gm_real *)y_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0) return;
    lincomb_rmsnorm_kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(
        sum, out, rstd, ca, pa, x, cb, pb, y, N, C, eps);
    GM_CU_LAUNCHED(c);
}
