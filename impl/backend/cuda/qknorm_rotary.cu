// QK-norm then rotary, fused (backend.h qknorm_rotary_fwd/bwd), on activations (B, T, NH, HD); rstd
// and the cos/sin tables fp32. Each lane owns W rotated pairs (x[i..i+W), x[i+HD/2..i+HD/2+W)), as
// in rotary.cu, and rotates them with its arithmetic (rotary.cuh): i = p W for its pair vectors p =
// g, g + G, ... of the row's HD/2/W, g its place in a group of G lanes per head row (G the smallest
// power of two >= HD/2/W, at most 32: 8 at the model's HD 128 with 8-element bf16 vectors, so a
// warp holds 4 rows and every lane loads its two 16-byte halves at once). A row's sum of squares
// (forward) or dot of the rotated-back gradient with x (backward) is each lane's, x1 then x2 per
// pair vector, then a butterfly over the group's lanes (shfl_xor: every lane gets the same sum,
// since each level adds the same two values in either order). The second pass reloads its own
// elements (L1) and writes them: each element is read and written by one lane, reads first, so out
// may alias inp and dinp may alias dout or inp. Forward: reads x once from DRAM, writes out and
// rstd (2 N C + N elements where rmsnorm_fwd then rotary_fwd moved 4 N C + N); backward: reads
// dout, x and rstd, writes dinp (3 N C + N, plus the read of dinp when added into, where the pair
// moved 5 N C + N). The sums are in another order than rmsnorm.cu's (which strides whole warps over
// the row): the fused kernels equal the composition of the separate ones to fp32 rounding, not
// bitwise. (The first version, one warp per row, kept 8 of 32 lanes busy in its rotary loop at HD
// 128 and ran at 0.30-0.34 of the copy bandwidth on an H200: reports/gpu-h200/kernels-softcap.md.)
//
// inp and dinp may be views with token stride ld (a third of a fused q/k projection's rows, (N, 2C)),
// out and dout are tensors of their own: the head row `row` of a view starts at gm_head_row_at (rotary.cuh).
//
// W = GM_ACT_VEC (16-byte accesses to both halves and to the tables' rows) where HD/2 % GM_ACT_VEC
// == 0, ld % GM_ACT_VEC == 0 and every pointer is 16-byte aligned (the model's HD 64 and 128), else W = 1.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rotary.cuh"

#define THREADS 256

// Row `row` (a (b, t, h) index) of n; t selects the tables' row.
static __device__ __forceinline__ int row_time(size_t row, int T, int NH) { return (int)((row / NH) % T); }


// The sum of v over the aligned group of G lanes (G a power of two <= 32), in every lane of it.
static __device__ __forceinline__ float group_sum(float v, int G) {
    for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(GM_FULL_MASK, v, o);
    return v;
}

// Blocks of THREADS for rows of G lanes each, one lane per thread (rows <= B T NH < 2^31: under the
// grid's 2^31 - 1 blocks).
static unsigned blocks(size_t rows, int G) { return (unsigned)((rows * G + THREADS - 1) / THREADS); }

// Lanes per head row: the smallest power of two >= the row's pair vectors, at most 32.
static int group_lanes(int pair_vectors) {
    int G = 1;
    while (G < pair_vectors && G < 32) G *= 2;
    return G;
}

template <int W>
__global__ static void qknorm_rotary_fwd_kernel(gm_cuda_act *out, float *rstd, const gm_cuda_act *inp,
                                                const float *cos_t, const float *sin_t, size_t rows, int T, int NH,
                                                int HD, int ld, int G, double eps) {
    const size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / G;
    const int g = threadIdx.x % G, h2 = HD / 2, pv = h2 / W;
    const bool live = row < rows;  // dead lanes still take part in the group's shuffles
    const size_t base = row * HD, xb = gm_head_row_at(row, NH, HD, ld);
    float ss = 0;
    for (int p = g; live && p < pv; p += G) {
        float x1[W], x2[W];
        gm_act_ldw<W>(inp, xb + (size_t)p * W, x1);
        gm_act_ldw<W>(inp, xb + (size_t)p * W + h2, x2);
#pragma unroll
        for (int j = 0; j < W; j++) ss += x1[j] * x1[j];
#pragma unroll
        for (int j = 0; j < W; j++) ss += x2[j] * x2[j];
    }
    ss = group_sum(ss, G);
    if (!live) return;
    const float r = (float)(1.0 / sqrt((double)ss / HD + eps));
    const int t = row_time(row, T, NH);
    for (int p = g; p < pv; p += G) {
        float c[W], s[W], x1[W], x2[W];
        gm_f32_ldw<W>(cos_t, (size_t)t * h2 + (size_t)p * W, c);
        gm_f32_ldw<W>(sin_t, (size_t)t * h2 + (size_t)p * W, s);
        gm_act_ldw<W>(inp, xb + (size_t)p * W, x1);
        gm_act_ldw<W>(inp, xb + (size_t)p * W + h2, x2);
#pragma unroll
        for (int j = 0; j < W; j++) x1[j] *= r, x2[j] *= r;
        gm_rotate<W>(x1, x2, c, s, 1.0f);
        gm_act_stw<W>(out, base + (size_t)p * W, x1);
        gm_act_stw<W>(out, base + (size_t)p * W + h2, x2);
    }
    if (g == 0) rstd[row] = r;
}

// The lane's pair vector p of the row rotated back (rotary_bwd) from dout (the row at base), and x's
// same elements (the row at xb of its view).
template <int W>
static __device__ __forceinline__ void rotated_back(const gm_cuda_act *dout, const gm_cuda_act *inp,
                                                    const float *cos_t, const float *sin_t, size_t base, size_t xb,
                                                    int t, int h2, int p, float *dy1, float *dy2, float *x1,
                                                    float *x2) {
    float c[W], s[W];
    gm_f32_ldw<W>(cos_t, (size_t)t * h2 + (size_t)p * W, c);
    gm_f32_ldw<W>(sin_t, (size_t)t * h2 + (size_t)p * W, s);
    gm_act_ldw<W>(dout, base + (size_t)p * W, dy1);
    gm_act_ldw<W>(dout, base + (size_t)p * W + h2, dy2);
    gm_act_ldw<W>(inp, xb + (size_t)p * W, x1);
    gm_act_ldw<W>(inp, xb + (size_t)p * W + h2, x2);
    gm_rotate<W>(dy1, dy2, c, s, -1.0f);
}

template <int W>
__global__ static void qknorm_rotary_bwd_kernel(gm_cuda_act *dinp, gm_grad_write write, const gm_cuda_act *dout,
                                                const gm_cuda_act *inp, const float *rstd, const float *cos_t,
                                                const float *sin_t, size_t rows, int T, int NH, int HD, int ld,
                                                int G) {
    const size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / G;
    const int g = threadIdx.x % G, h2 = HD / 2, pv = h2 / W;
    const bool live = row < rows;
    const size_t base = row * HD, xb = gm_head_row_at(row, NH, HD, ld);  // dout's row; inp's and dinp's
    const int t = live ? row_time(row, T, NH) : 0;
    float dot = 0;
    for (int p = g; live && p < pv; p += G) {
        float dy1[W], dy2[W], x1[W], x2[W];
        rotated_back<W>(dout, inp, cos_t, sin_t, base, xb, t, h2, p, dy1, dy2, x1, x2);
#pragma unroll
        for (int j = 0; j < W; j++) dot += dy1[j] * x1[j];
#pragma unroll
        for (int j = 0; j < W; j++) dot += dy2[j] * x2[j];
    }
    dot = group_sum(dot, G);
    if (!live) return;
    const float r = rstd[row], k = r * r * r * dot / (float)HD;
    for (int p = g; p < pv; p += G) {
        float dy1[W], dy2[W], x1[W], x2[W];
        rotated_back<W>(dout, inp, cos_t, sin_t, base, xb, t, h2, p, dy1, dy2, x1, x2);
#pragma unroll
        for (int j = 0; j < W; j++) dy1[j] = r * dy1[j] - k * x1[j], dy2[j] = r * dy2[j] - k * x2[j];
        gm_act_putw<W>(dinp, xb + (size_t)p * W, write, dy1);
        gm_act_putw<W>(dinp, xb + (size_t)p * W + h2, write, dy2);
    }
}

void gm_cuda_qknorm_rotary_fwd(const gm_backend *be, gm_actval *out, gm_real *rstd, const gm_actval *inp,
                               const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, int ld,
                               double eps) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    const size_t rows = (size_t)B * T * NH;
    if (B <= 0 || T <= 0 || NH <= 0 || HD < 2) return;
    const bool vec = HD / 2 % GM_ACT_VEC == 0 && ld % GM_ACT_VEC == 0 && gm_vec_aligned_all(o, x, cos_t, sin_t);
    const int G = group_lanes(HD / 2 / (vec ? GM_ACT_VEC : 1));
    const auto kernel = vec ? qknorm_rotary_fwd_kernel<GM_ACT_VEC> : qknorm_rotary_fwd_kernel<1>;
    kernel<<<blocks(rows, G), THREADS, 0, c->stream>>>(o, rstd, x, cos_t, sin_t, rows, T, NH, HD, ld, G, eps);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_qknorm_rotary_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                               const gm_actval *inp, const gm_real *rstd, const gm_real *cos_t, const gm_real *sin_t,
                               int B, int T, int NH, int HD, int ld) {
    gm_cuda_act *dx = (gm_cuda_act *)dinp;
    const gm_cuda_act *dy = (const gm_cuda_act *)dout, *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    const size_t rows = (size_t)B * T * NH;
    if (B <= 0 || T <= 0 || NH <= 0 || HD < 2) return;
    const bool vec = HD / 2 % GM_ACT_VEC == 0 && ld % GM_ACT_VEC == 0 && gm_vec_aligned_all(dx, dy, x, cos_t, sin_t);
    const int G = group_lanes(HD / 2 / (vec ? GM_ACT_VEC : 1));
    const auto kernel = vec ? qknorm_rotary_bwd_kernel<GM_ACT_VEC> : qknorm_rotary_bwd_kernel<1>;
    kernel<<<blocks(rows, G), THREADS, 0, c->stream>>>(dx, dinp_write, dy, x, rstd, cos_t, sin_t, rows, T, NH, HD,
                                                       ld, G);
    GM_CU_LAUNCHED(c);
}
