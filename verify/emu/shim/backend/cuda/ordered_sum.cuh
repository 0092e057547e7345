// Host emulation of impl/backend/cuda/ordered_sum.cuh (verify/emu/emu.h). Blocks run one at a time
// in the order of their work index, so a block may only wait for parts already added: a semaphore
// that does not read the waiter's rank at once would never change, and the program stops naming the
// tile's semaphore, what it read and the rank (a part out of order, or a rank miscounted). The
// partial sums are plain memory (one block at a time; its threads touch disjoint 16 bytes).
// GM_EMU_FAULT=sum_order (emu.h) hands out the work indices last first, as a kernel mapping them to
// key blocks the other way round would.
#ifndef GM_BACKEND_CUDA_ORDERED_SUM_CUH
#define GM_BACKEND_CUDA_ORDERED_SUM_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline int ordered_take(int32_t *counter) {
    const int w = (*counter)++;
    return emu_fault("sum_order") ? (int)gridDim.x - 1 - w : w;
}
static inline void ordered_wait(const int32_t *sem, int rank) {
    if (*sem != rank) {
        fprintf(stderr, "emu: block (%u, %u, %u) waits at semaphore %p for rank %d, which reads %d and cannot change\n",
                blockIdx.x, blockIdx.y, blockIdx.z, (const void *)sem, rank, *sem);
        abort();
    }
}
static inline void ordered_release(int32_t *sem) { ++*sem; }
static inline void partial_store(float4 *p, float4 v) { *p = v; }
static inline void partial_add(float4 *p, float4 v) { p->x += v.x, p->y += v.y, p->z += v.z, p->w += v.w; }
static inline float4 partial_load(const float4 *p) { return *p; }

#endif
