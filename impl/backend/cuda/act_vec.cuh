// Width-generic access for the elementwise and row kernels (act, lincomb, rmsnorm, rotary,
// qknorm_rotary, lincomb_rmsnorm, embed): W consecutive elements as fp32, with W = 1 (scalar
// accesses: any alignment, any length) or W = GM_ACT_VEC (one 16-byte access per activation
// group: 4 fp32 or 8 bf16). A kernel templated on W is one piece of code for both paths; its
// launcher takes W = GM_ACT_VEC where the shape (a row length or pair count divisible by W) and
// gm_vec_aligned_all (every pointer 16-byte aligned, as the model's buffers are) allow it.
#ifndef GM_BACKEND_CUDA_ACT_VEC_CUH
#define GM_BACKEND_CUDA_ACT_VEC_CUH

#include "backend/cuda/cuda_common.cuh"

#ifdef __CUDACC__
// Whether every pointer is 16-byte aligned (NULL counts as aligned: an absent operand).
template <typename... P> static inline bool gm_vec_aligned_all(const P *...p) { return (gm_act_vec_aligned(p) && ...); }

// v[0..W) = activation elements p[i..i+W) widened to fp32 (W = GM_ACT_VEC: p + i 16-byte aligned).
template <int W> static __device__ __forceinline__ void gm_act_ldw(const gm_cuda_act *p, size_t i, float *v) {
    static_assert(W == 1 || W == GM_ACT_VEC, "one scalar or one 16-byte vector");
    if constexpr (W == 1) v[0] = gm_act_ld(p, i);
    else gm_act_ld_vec(p + i, v);
}

// p[i..i+W) = v[0..W), each rounded once to the element type.
template <int W> static __device__ __forceinline__ void gm_act_stw(gm_cuda_act *p, size_t i, const float *v) {
    static_assert(W == 1 || W == GM_ACT_VEC, "one scalar or one 16-byte vector");
    if constexpr (W == 1) gm_act_st(p, i, v[0]);
    else gm_act_st_vec(p + i, v);
}

// p[i..i+W) set to v or added to (gm_act_put per element: the old value widened, the sum in fp32,
// one rounding at the store).
template <int W>
static __device__ __forceinline__ void gm_act_putw(gm_cuda_act *p, size_t i, gm_grad_write write, const float *v) {
    float o[W];
    if (write == GM_GRAD_ADD) gm_act_ldw<W>(p, i, o);
#pragma unroll
    for (int j = 0; j < W; j++) o[j] = write == GM_GRAD_ADD ? o[j] + v[j] : v[j];
    gm_act_stw<W>(p, i, o);
}

// W fp32 values at p + i (tables, parameters and their gradients stay fp32): W / 4 16-byte
// accesses when W is a multiple of 4 (p + i 16-byte aligned), else scalar ones.
template <int W> static __device__ __forceinline__ void gm_f32_ldw(const float *p, size_t i, float *v) {
    if constexpr (W % 4 == 0) {
#pragma unroll
        for (int k = 0; k < W / 4; k++) {
            const float4 q = *(const float4 *)(p + i + 4 * k);
            v[4 * k] = q.x, v[4 * k + 1] = q.y, v[4 * k + 2] = q.z, v[4 * k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < W; j++) v[j] = p[i + j];
    }
}
template <int W> static __device__ __forceinline__ void gm_f32_stw(float *p, size_t i, const float *v) {
    if constexpr (W % 4 == 0) {
#pragma unroll
        for (int k = 0; k < W / 4; k++)
            *(float4 *)(p + i + 4 * k) = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
    } else {
#pragma unroll
        for (int j = 0; j < W; j++) p[i + j] = v[j];
    }
}
#endif

#endif
