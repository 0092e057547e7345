// QK-norm then rotary, fused (backend.h qknorm_rotary_fwd/bwd): one warp per head row of the
// activations (B, T, NH, HD), 8 rows per block; rstd and the cos/sin tables fp32. The arithmetic is
// rmsnorm.cu's and rotary.cu's, statement for statement and in the same order (the sum of squares
// and the backward's dot per lane over its groups of W elements at c = (lane + 32 j) W, then
// gm_warp_sum), so the fused kernels give what the two separate kernels give where they take the
// same W, without storing the normed row: forward reads x once and writes out and rstd (2 N C + N
// elements where the pair of kernels moved 4 N C + N); backward reads dout, x and rstd and writes
// dinp (3 N C + N, plus the read of dinp when added into, where the pair moved 5 N C + N).
// The backward's rotated row waits in shared memory (HD floats per warp) so that its dot with x is
// summed in rmsnorm_bwd's order.
//
// W = GM_ACT_VEC (16-byte accesses within the row, to both rotated halves and to the tables' rows)
// where HD/2 % GM_ACT_VEC == 0 and every pointer is 16-byte aligned (the model's HD 64 and 128),
// else W = 1. rmsnorm.cu and rotary.cu take the same W for such a head size (HD % GM_ACT_VEC == 0,
// HD/2 % GM_ACT_VEC == 0); a head size with HD % GM_ACT_VEC == 0 but HD/2 % GM_ACT_VEC != 0 is
// summed here at W = 1 and in rmsnorm.cu at GM_ACT_VEC, equal to rounding only.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"

#define ROWS_PER_BLOCK 8

// Row `row` (a (b, t, h) index) of n; t selects the tables' row.
static __device__ __forceinline__ int row_time(size_t row, int T, int NH) { return (int)((row / NH) % T); }

template <int W>
__global__ static void qknorm_rotary_fwd_kernel(gm_cuda_act *out, float *rstd, const gm_cuda_act *inp,
                                                const float *cos_t, const float *sin_t, int rows, int T, int NH,
                                                int HD, double eps) {
    const size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    const int lane = threadIdx.x % 32, h2 = HD / 2;
    if (row >= (size_t)rows) return;  // whole warps leave together
    const size_t base = row * HD;
    float ss = 0;
    for (int c = lane * W; c < HD; c += 32 * W) {
        float x[W];
        gm_act_ldw<W>(inp, base + c, x);
#pragma unroll
        for (int j = 0; j < W; j++) ss += x[j] * x[j];
    }
    ss = gm_warp_sum(ss);  // every lane has read its x before any lane writes (out may alias inp)
    const float r = (float)(1.0 / sqrt((double)ss / HD + eps));
    const int t = row_time(row, T, NH);
    for (int i = lane * W; i < h2; i += 32 * W) {
        float c[W], s[W], x1[W], x2[W];
        gm_f32_ldw<W>(cos_t, (size_t)t * h2 + i, c);
        gm_f32_ldw<W>(sin_t, (size_t)t * h2 + i, s);
        gm_act_ldw<W>(inp, base + i, x1);
        gm_act_ldw<W>(inp, base + i + h2, x2);
#pragma unroll
        for (int j = 0; j < W; j++) {
            const float sj = 1.0f * s[j], n1 = x1[j] * r, n2 = x2[j] * r;
            x1[j] = n1 * c[j] + n2 * sj, x2[j] = -n1 * sj + n2 * c[j];
        }
        gm_act_stw<W>(out, base + i, x1);
        gm_act_stw<W>(out, base + i + h2, x2);
    }
    if (lane == 0) rstd[row] = r;
}

template <int W>
__global__ static void qknorm_rotary_bwd_kernel(gm_cuda_act *dinp, gm_grad_write write, const gm_cuda_act *dout,
                                                const gm_cuda_act *inp, const float *rstd, const float *cos_t,
                                                const float *sin_t, int rows, int T, int NH, int HD) {
    extern __shared__ float srow[];  // (ROWS_PER_BLOCK, HD): each warp's rotated-back row
    const size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    const int lane = threadIdx.x % 32, h2 = HD / 2;
    if (row >= (size_t)rows) return;
    float *dy = srow + (size_t)(threadIdx.x / 32) * HD;
    const size_t base = row * HD;
    const int t = row_time(row, T, NH);
    for (int i = lane * W; i < h2; i += 32 * W) {  // rotary_bwd: the rotation by -theta
        float c[W], s[W], g1[W], g2[W];
        gm_f32_ldw<W>(cos_t, (size_t)t * h2 + i, c);
        gm_f32_ldw<W>(sin_t, (size_t)t * h2 + i, s);
        gm_act_ldw<W>(dout, base + i, g1);
        gm_act_ldw<W>(dout, base + i + h2, g2);
#pragma unroll
        for (int j = 0; j < W; j++) {
            const float sj = -1.0f * s[j];
            dy[i + j] = g1[j] * c[j] + g2[j] * sj, dy[i + h2 + j] = -g1[j] * sj + g2[j] * c[j];
        }
    }
    __syncwarp();
    float dot = 0;
    for (int c = lane * W; c < HD; c += 32 * W) {
        float x[W];
        gm_act_ldw<W>(inp, base + c, x);
#pragma unroll
        for (int j = 0; j < W; j++) dot += dy[c + j] * x[j];
    }
    dot = gm_warp_sum(dot);
    const float r = rstd[row], k = r * r * r * dot / (float)HD;
    for (int c = lane * W; c < HD; c += 32 * W) {
        float x[W], d[W];
        gm_act_ldw<W>(inp, base + c, x);
#pragma unroll
        for (int j = 0; j < W; j++) d[j] = r * dy[c + j] - k * x[j];
        gm_act_putw<W>(dinp, base + c, write, d);
    }
}

void gm_cuda_qknorm_rotary_fwd(const gm_backend *be, gm_actval *out, gm_real *rstd, const gm_actval *inp,
                               const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, double eps) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    const int rows = B * T * NH;
    if (rows <= 0 || HD < 2) return;
    const auto kernel = HD / 2 % GM_ACT_VEC == 0 && gm_vec_aligned_all(o, x, cos_t, sin_t)
                            ? qknorm_rotary_fwd_kernel<GM_ACT_VEC>
                            : qknorm_rotary_fwd_kernel<1>;
    kernel<<<(rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, 0, c->stream>>>(
        o, rstd, x, cos_t, sin_t, rows, T, NH, HD, eps);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_qknorm_rotary_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                               const gm_actval *inp, const gm_real *rstd, const gm_real *cos_t, const gm_real *sin_t,
                               int B, int T, int NH, int HD) {
    gm_cuda_act *dx = (gm_cuda_act *)dinp;
    const gm_cuda_act *dy = (const gm_cuda_act *)dout, *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    const int rows = B * T * NH;
    if (rows <= 0 || HD < 2) return;
    const size_t smem = sizeof(float) * ROWS_PER_BLOCK * (size_t)HD;
    const auto kernel = HD / 2 % GM_ACT_VEC == 0 && gm_vec_aligned_all(dx, dy, x, cos_t, sin_t)
                            ? qknorm_rotary_bwd_kernel<GM_ACT_VEC>
                            : qknorm_rotary_bwd_kernel<1>;
    kernel<<<(rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 32 * ROWS_PER_BLOCK, smem, c->stream>>>(
        dx, dinp_write, dy, x, rstd, cos_t, sin_t, rows, T, NH, HD);
    GM_CU_LAUNCHED(c);
}
