// The CUDA backend's activation element: what its kernels store for every activation and
// activation gradient (backend.h's gm_actval: logits, q/k/v, the residual stream and their
// gradients). Parameters, their gradients, optimizer states and per-row statistics (rstd, lse,
// losses) stay fp32. Arithmetic is fp32 throughout: a load widens exactly, a store rounds to
// nearest even once (the rounding points `--backend=cpu-bf16` reproduces on the CPU).
//
// Kernels name the element only through this header (gm_cuda_act, gm_act_ld/gm_act_st and the
// 16-byte vectors below), so the element type is one line: GM_CUDA_ACT_BYTES in cuda.h.
#ifndef GM_BACKEND_CUDA_ACT_ELEM_CUH
#define GM_BACKEND_CUDA_ACT_ELEM_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "backend/cuda/cuda.h"
#include "backend/cuda/gemm.h"

#if GM_CUDA_ACT_BYTES == 2
typedef __nv_bfloat16 gm_cuda_act;
#elif GM_CUDA_ACT_BYTES == 4
typedef float gm_cuda_act;
#else
#error "GM_CUDA_ACT_BYTES is 2 (bf16) or 4 (fp32)"
#endif

// The GEMM operand type of an activation (gemm.h).
#define GM_GEMM_ACT (sizeof(gm_cuda_act) == 2 ? GM_GEMM_BF16 : GM_GEMM_F32)
// Activation elements in one 16-byte (128-bit) access: 4 fp32 or 8 bf16.
#define GM_ACT_VEC ((int)(16 / sizeof(gm_cuda_act)))

#ifdef __CUDACC__
static __device__ __forceinline__ float gm_act_widen(float v) { return v; }
static __device__ __forceinline__ float gm_act_widen(__nv_bfloat16 v) { return __bfloat162float(v); }
static __device__ __forceinline__ void gm_act_round(float *p, float v) { *p = v; }
static __device__ __forceinline__ void gm_act_round(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

// Element i of an activation, as fp32; store v rounded to the element type.
static __device__ __forceinline__ float gm_act_ld(const gm_cuda_act *p, size_t i) { return gm_act_widen(p[i]); }
static __device__ __forceinline__ void gm_act_st(gm_cuda_act *p, size_t i, float v) { gm_act_round(p + i, v); }

// GM_ACT_VEC consecutive elements starting at p (16-byte aligned) in one 128-bit load / store.
// A bf16 pair shares a 32-bit word, the lower index in the low half (little-endian), and a bf16 is
// the high half of its float, so widening is a shift.
static __device__ __forceinline__ void gm_act_ld_vec(const gm_cuda_act *p, float out[GM_ACT_VEC]) {
    const uint4 raw = *(const uint4 *)p;
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
    if (sizeof(gm_cuda_act) == 4) {
        for (int j = 0; j < 4; j++) out[j] = __uint_as_float(w[j]);
    } else {
        for (int j = 0; j < 4; j++) {
            out[2 * j] = __uint_as_float(w[j] << 16);
            out[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
        }
    }
}
static __device__ __forceinline__ void gm_act_st_vec(gm_cuda_act *p, const float v[GM_ACT_VEC]) {
    uint32_t w[4];
    if (sizeof(gm_cuda_act) == 4) {
        for (int j = 0; j < 4; j++) w[j] = __float_as_uint(v[j]);
    } else {
        for (int j = 0; j < 4; j++) {
            const uint32_t lo = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * j]));
            const uint32_t hi = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * j + 1]));
            w[j] = lo | hi << 16;
        }
    }
    *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
}
// Write one activation-gradient element as `write` says (backend.h's gm_grad_put, in fp32 then rounded).
static __device__ __forceinline__ void gm_act_put(gm_cuda_act *p, size_t i, gm_grad_write write, float v) {
    gm_act_st(p, i, write == GM_GRAD_ADD ? gm_act_ld(p, i) + v : v);
}
// Whether GM_ACT_VEC-element vectors at p, q, ... are 16-byte aligned (a tensor view may not be).
static __device__ __host__ __forceinline__ int gm_act_vec_aligned(const void *p) { return ((uintptr_t)p & 15) == 0; }
#endif

#endif
