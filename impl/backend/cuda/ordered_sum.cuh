// A sum over thread blocks in a fixed order, for the one-pass attention backward's dQ
// (attention_mma_dkdv.cuh): every key block adds its part of a query tile's dQ, and the parts must
// be added in the same order on every run (deterministic: no float atomics racing). Each tile has a
// semaphore counting the parts added so far; the block with rank r waits until it reads r, adds,
// and passes it on (r + 1). A block waits only for blocks that took their work index before it did
// (ordered_take: a counter, not blockIdx, whose dispatch order CUDA does not promise), and those
// are resident or done, so the waits end. Kept apart, like mma_sm80.cuh, so that the host emulation
// (verify/emu/shim/backend/cuda/ordered_sum.cuh) can replace this one file.
#ifndef GM_BACKEND_CUDA_ORDERED_SUM_CUH
#define GM_BACKEND_CUDA_ORDERED_SUM_CUH

#include <cuda_runtime.h>
#include <stdint.h>

// The next work index of a launch (counter zeroed before it); one thread of a block calls it.
static __device__ __forceinline__ int ordered_take(int32_t *counter) { return atomicAdd(counter, 1); }

// One thread: spin until the semaphore reads rank (acquire: the parts added before are visible to
// what the block reads after its next barrier).
static __device__ __forceinline__ void ordered_wait(const int32_t *sem, int rank) {
    int32_t v;
    do asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(sem) : "memory");
    while (v != rank);
}

// One thread, after a barrier that every thread of the block passed after adding its part: the next
// rank may add. The release is cumulative (PTX ISA, memory consistency model): the barrier orders
// the other threads' writes before it, so no thread needs a fence of its own (cooperative groups'
// grid sync and CUTLASS's semaphore rely on the same). Its fence waits for the adds to be done:
// issued while the block's tensor cores run.
static __device__ __forceinline__ void ordered_release(int32_t *sem) {
    asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(sem) : "memory");
}

// The partial sums in global memory, 16 bytes a thread: the first part stored, the middle ones
// added where they lie (L2's reduction: nothing comes back; like every float atomic, it flushes a
// subnormal sum to zero), the total read by the last part's block; through L2 (.cg), where the
// adds are.
static __device__ __forceinline__ void partial_store(float4 *p, float4 v) { __stcg(p, v); }
static __device__ __forceinline__ void partial_add(float4 *p, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(p, v);  // one 16-byte reduction (sm_90)
#else
    atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z), atomicAdd(&p->w, v.w);
#endif
}
static __device__ __forceinline__ float4 partial_load(const float4 *p) { return __ldcg(p); }

#endif
