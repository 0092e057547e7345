// A residual add or mix then RMSNorm, fused (backend.h lincomb_rmsnorm_fwd): one warp per row of the
// activations (N, C), 8 rows per block; pa, pb and rstd fp32. Each element is lincomb.cu's
// expression and the norm is rmsnorm.cu's, in the same order (the sum of squares per lane over its
// groups of W elements at c = (lane + 32 j) W, then gm_warp_sum; W = GM_ACT_VEC, 16-byte accesses,
// where C % GM_ACT_VEC == 0 and every pointer is 16-byte aligned, else W = 1, as rmsnorm.cu
// chooses), so with the fp32 element the fused kernel gives what the two separate kernels give.
// The norm is of the fp32 sum s, not of its stored rounding: the sum of squares of s and out = s * r,
// with sum = s rounded once to the activation element. With the bf16 element that is what
// cpu-bf16 computes (it rounds the fused CPU kernel's fp32 sum and out), where the two separate
// kernels would norm the rounded sum.
//
// Two passes over the row: the first computes s from x (and y) for the sum of squares and writes
// nothing; the second computes s again from the same reads (the same lane's elements, now from
// cache) and writes sum and out. So sum may alias x or y: every element is read before the lane
// that owns it writes it, and no lane writes before the warp sum (which follows every lane's
// first-pass reads). Memory: x (and y) read once from DRAM, sum and out written: (y ? 2 : 1) N C +
// 2 N C + N elements where the pair of kernels moved one more N C (the norm's read of sum).
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"

#define ROWS_PER_BLOCK 8

// s[0..W) = a*x + b*y over elements [i, i + W) (y NULL: no second term); lincomb.cu's expression.
template <int W>
static __device__ __forceinline__ void mix_group(float *s, float a, const gm_cuda_act *x, float b,
                                                 const gm_cuda_act *y, size_t i) {
    float yv[W];
    gm_act_ldw<W>(x, i, s);
    if (y) gm_act_ldw<W>(y, i, yv);
#pragma unroll
    for (int j = 0; j < W; j++) s[j] = a * s[j] + (y ? b * yv[j] : 0.0f);
}

template <int W>
__global__ static void lincomb_rmsnorm_kernel(gm_cuda_act *sum, gm_cuda_act *out, float *rstd, double ca,
                                              const float *pa, const gm_cuda_act *x, double cb, const float *pb,
                                              const gm_cuda_act *y, int N, int C, double eps) {
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;  // whole warps leave together
    const float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    const size_t base = (size_t)row * C;
    float ss = 0;
    for (int c = lane * W; c < C; c += 32 * W) {
        float s[W];
        mix_group<W>(s, a, x, b, y, base + c);
#pragma unroll
        for (int j = 0; j < W; j++) ss += s[j] * s[j];
    }
    ss = gm_warp_sum(ss);
    const float r = (float)(1.0 / sqrt((double)ss / C + eps));
    for (int c = lane * W; c < C; c += 32 * W) {
        float s[W];
        mix_group<W>(s, a, x, b, y, base + c);
        gm_act_stw<W>(sum, base + c, s);
#pragma unroll
        for (int j = 0; j < W; j++) s[j] *= r;
        gm_act_stw<W>(out, base + c, s);
    }
    if (lane == 0) rstd[row] = r;
}

void gm_cuda_lincomb_rmsnorm_fwd(const gm_backend *be, gm_actval *sum, gm_actval *out, gm_real *rstd, double ca,
                                 const gm_real *pa, const gm_actval *x, double cb, const gm_real *pb, const gm_actval *y,
                                 int N, int C, double eps) {
    gm_cuda_act *s = (gm_cuda_act *)sum, *o = (gm_cuda_act *)out;
    const gm_cuda_act *xa = (const gm_cuda_act *)x, *ya = (const gm_cuda_act *)y;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0) return;
    const auto kernel = C % GM_ACT_VEC == 0 && gm_vec_aligned_all(s, o, xa, ya) ? lincomb_rmsnorm_kernel<GM_ACT_VEC>
                                                                                : lincomb_rmsnorm_kernel<1>;
    kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(s, o, rstd, ca, pa, xa,
                                                                                             cb, pb, ya, N, C, eps);
    GM_CU_LAUNCHED(c);
}
