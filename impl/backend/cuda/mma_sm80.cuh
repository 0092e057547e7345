// The PTX instructions of the tensor-core attention (attention_mma.cu), sm_80 and later: mma.sync
// m16n8k16 with bf16 operands, ldmatrix x4 (plain and .trans), the bf16x2 rounding cvt, 16- and
// 4-byte cp.async with its groups, and ex2 with subnormals flushed. Fragment layouts:
// attention_mma_products.cuh's header. Kept apart from the kernels so that their C++ is the kernels' only
// other content: the host emulation of these instructions (verify/emu/shim/backend/cuda/
// mma_sm80.cuh) replaces this one file to execute the kernels on a CPU.
#ifndef GM_BACKEND_CUDA_MMA_SM80_CUH
#define GM_BACKEND_CUDA_MMA_SM80_CUH

#include <cuda_bf16.h>
#include <stdint.h>

// d += a b for one m16n8k16 tile (bf16 inputs, fp32 accumulators).
static __device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 bf16 matrices from shared memory; `row` is this lane's row address (16-byte aligned).
static __device__ __forceinline__ void ldsm_x4(uint32_t r[4], const __nv_bfloat16 *row) {
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
static __device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const __nv_bfloat16 *row) {
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// Two floats rounded to bf16 (nearest even) in one register, lo in the lower half.
static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// 16 bytes from global to shared memory, asynchronously, through L2 only (.cg: a tile is read once
// per block); src_bytes 0 reads nothing and fills zeros. Lands at this thread's cp_async_wait_all.
static __device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"((uint32_t)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(src_bytes)
                 : "memory");
}
// 4 bytes (an int32 or a float of a per-token vector) the same way, through L1 (.ca: the only
// caching cp.async allows below 16 bytes); src_bytes 0 fills zeros.
static __device__ __forceinline__ void cp_async4(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"((uint32_t)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(src_bytes)
                 : "memory");
}
// 2^x, subnormal inputs and results flushed to zero (ex2.approx.ftz: one MUFU.EX2). Why not exp2f:
// without -ftz it keeps subnormal results, which ptxas does with a compare and two predicated
// multiplies around each MUFU.EX2 (cuobjdump -sass, sm_90a): four instructions where one does, for
// every score's exponential. The values differ only where 2^x < 2^-126 (0 instead of subnormal).
static __device__ __forceinline__ float ex2_ftz(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
    return r;
}

// Wait until every cp.async copy of this thread has landed (a no-op without any).
static __device__ __forceinline__ void cp_async_wait_all(void) { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// Close this thread's cp.async copies issued since the last commit into a group (an empty group
// when there are none), and wait until all but the newest N groups have landed: a ring that copies
// two tiles ahead waits for one tile's group while the next one's stays in flight.
static __device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_async_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif
