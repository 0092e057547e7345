// Deterministic fp64 sums over float vectors, shared by adam (the gradient norm of normalize_grad)
// and orthogonalize (each matrix's Frobenius norm); lincomb's backward makes its own per-block
// partials in its write pass (lincomb.cu) and sums them with the block tree and total here.
//
// Two launches, no atomics: a grid whose size depends only on n (gm_red_blocks) writes one fp64
// partial per block (each thread sums a strided share, then a fixed shared-memory tree), and a
// second kernel sums the partials with the same tree. The order is fixed by n alone, so a repeat
// gives the same bits; it is not the CPU's index order, so results agree with the CPU to
// rounding (fp64 sums, ~n * 1e-16 relative), not bitwise.
#ifndef GM_BACKEND_CUDA_REDUCE_CUH
#define GM_BACKEND_CUDA_REDUCE_CUH

#include <stddef.h>

#include "backend/cuda/cuda_common.cuh"
#include "base/bf16.h"

#define GM_RED_THREADS 256  // threads per block of both kernels; a power of two (the tree halves it)
#define GM_RED_MAX_BLOCKS 256

// Blocks of the partial kernel for n values (1..GM_RED_MAX_BLOCKS).
static inline int gm_red_blocks(size_t n) {
    size_t nb = (n + GM_RED_THREADS - 1) / GM_RED_THREADS;
    return nb < 1 ? 1 : (nb > GM_RED_MAX_BLOCKS ? GM_RED_MAX_BLOCKS : (int)nb);
}

// Launch the partial kernel of sum(u[i] * v[i]) over [0, n) on the backend's stream: *partial
// (scratch slot GM_SCR_RED, valid until the next call) gets gm_red_blocks(n) values, which are
// returned; 0 when the scratch could not be had (error noted).
int gm_cuda_dot_partials(gm_cuda_ctx *c, const float *u, const float *v, size_t n, double **partial);

#ifdef __CUDACC__
// Fixed-order sum of the block's values; every thread of the block must call it; blockDim.x must
// be GM_RED_THREADS. Every thread gets the result.
// The order is the halving tree: level 1 adds value t + 128 into t (t < 128), level 2 t + 64 into t,
// ..., level 8 value 1 into 0. The first warp forms levels 1-3 from shared memory, lane t the node
// t = ((v[t] + v[t+128]) + (v[t+64] + v[t+192])) + ((v[t+32] + v[t+160]) + (v[t+96] + v[t+224])),
// and levels 4-8 with gm_warp_sum (lane t adds lane t + 16, then t + 8, ...): the same additions in
// the same grouping as a shared-memory loop with a barrier per level, so the same bits, with 3
// barriers instead of 10.
static_assert(GM_RED_THREADS == 256, "gm_block_sum's first warp folds 8 values per lane");
static __device__ double gm_block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        const int t = threadIdx.x;
        double r = ((sh[t] + sh[t + 128]) + (sh[t + 64] + sh[t + 192])) +
                   ((sh[t + 32] + sh[t + 160]) + (sh[t + 96] + sh[t + 224]));
        r = gm_warp_sum(r);
        if (t == 0) sh[0] = r;  // no other lane reads sh[0]
    }
    __syncthreads();
    const double r = sh[0];
    __syncthreads();  // sh may be reused by the caller's next gm_block_sum
    return r;
}

// This block's partial of sum(u[i] * v[i]) over [0, n): the share of block blockIdx.x of
// gridDim.x. With round_bf16, each value is first rounded to bf16 (the norm of bf16(G)).
static __device__ double gm_dot_partial(const float *u, const float *v, size_t n, int round_bf16, double *sh) {
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * GM_RED_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * GM_RED_THREADS) {
        float a = u[i], b = v[i];
        if (round_bf16) a = gm_round_bf16(a), b = gm_round_bf16(b);
        s += (double)a * b;
    }
    return gm_block_sum(s, sh);
}

// The total of np partials, by every thread of a GM_RED_THREADS block.
static __device__ double gm_partials_total(const double *partial, int np, double *sh) {
    double s = 0;
    for (int i = threadIdx.x; i < np; i += GM_RED_THREADS) s += partial[i];
    return gm_block_sum(s, sh);
}
#endif

#endif
