// RMSNorm without weight over activation rows (N, C): one warp per row, 8 rows per block; out, inp,
// dout, dinp in the activation element (act_elem.cuh), rstd (N) fp32, arithmetic fp32.
//
// Access and order: lane l owns the groups of W consecutive elements starting at c = (l + 32 j) W,
// j = 0, 1, ..., with W = GM_ACT_VEC (one 16-byte access per group) where C % GM_ACT_VEC == 0 and
// every row pointer is 16-byte aligned, else W = 1 (the scalar path: c = l, l + 32, ...). The sum
// of squares (and the backward's dot) is the lane's elements in that order, then gm_warp_sum's
// fixed tree, so results repeat bit for bit. The vector path sums each lane's share in another
// order than the scalar path (groups of W rather than a stride of 32: the price of 16-byte loads);
// both are C / 32 terms per lane then the 5-level tree, so their rounding is alike.
// qknorm_rotary.cu and lincomb_rmsnorm.cu follow the same order at the same W.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"

#define ROWS_PER_BLOCK 8

template <int W>
__global__ static void rmsnorm_fwd_kernel(gm_cuda_act *out, float *rstd, const gm_cuda_act *inp, int N, int C,
                                          double eps) {
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;  // whole warps leave together
    const size_t base = (size_t)row * C;
    float ss = 0;
    for (int c = lane * W; c < C; c += 32 * W) {
        float x[W];
        gm_act_ldw<W>(inp, base + c, x);
#pragma unroll
        for (int j = 0; j < W; j++) ss += x[j] * x[j];
    }
    ss = gm_warp_sum(ss);  // every lane has read its x before any lane writes (out may alias inp)
    const float r = (float)(1.0 / sqrt((double)ss / C + eps));
    for (int c = lane * W; c < C; c += 32 * W) {
        float x[W];
        gm_act_ldw<W>(inp, base + c, x);
#pragma unroll
        for (int j = 0; j < W; j++) x[j] *= r;
        gm_act_stw<W>(out, base + c, x);
    }
    if (lane == 0) rstd[row] = r;
}

// dx (+)= r*dy - x * r^3 * mean(dy*x)
template <int W>
__global__ static void rmsnorm_bwd_kernel(gm_cuda_act *dinp, gm_grad_write write, const gm_cuda_act *dout,
                                          const gm_cuda_act *inp, const float *rstd, int N, int C) {
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const size_t base = (size_t)row * C;
    float dot = 0;
    for (int c = lane * W; c < C; c += 32 * W) {
        float x[W], dy[W];
        gm_act_ldw<W>(inp, base + c, x);
        gm_act_ldw<W>(dout, base + c, dy);
#pragma unroll
        for (int j = 0; j < W; j++) dot += dy[j] * x[j];
    }
    dot = gm_warp_sum(dot);
    const float r = rstd[row], k = r * r * r * dot / (float)C;
    for (int c = lane * W; c < C; c += 32 * W) {
        float x[W], dy[W];
        gm_act_ldw<W>(inp, base + c, x);
        gm_act_ldw<W>(dout, base + c, dy);
#pragma unroll
        for (int j = 0; j < W; j++) dy[j] = r * dy[j] - k * x[j];
        gm_act_putw<W>(dinp, base + c, write, dy);
    }
}

void gm_cuda_rmsnorm_fwd(const gm_backend *be, gm_actval *out, gm_real *rstd, const gm_actval *inp, int N, int C,
                         double eps) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0) return;
    const auto kernel = C % GM_ACT_VEC == 0 && gm_vec_aligned_all(o, x) ? rmsnorm_fwd_kernel<GM_ACT_VEC>
                                                                        : rmsnorm_fwd_kernel<1>;
    kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(o, rstd, x, N, C, eps);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_rmsnorm_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                         const gm_actval *inp, const gm_real *rstd, int N, int C) {
    gm_cuda_act *dx = (gm_cuda_act *)dinp;
    const gm_cuda_act *dy = (const gm_cuda_act *)dout, *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0) return;
    const auto kernel = C % GM_ACT_VEC == 0 && gm_vec_aligned_all(dx, dy, x) ? rmsnorm_bwd_kernel<GM_ACT_VEC>
                                                                             : rmsnorm_bwd_kernel<1>;
    kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(dx, dinp_write, dy, x,
                                                                                             rstd, N, C);
    GM_CU_LAUNCHED(c);
}
