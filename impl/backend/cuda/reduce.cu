// The partial kernel of the deterministic dot products (reduce.cuh), for one vector pair.
#include <cuda_runtime.h>

#include "backend/cuda/reduce.cuh"

__global__ static void __launch_bounds__(GM_RED_THREADS)
    dot_partial_kernel(double *partial, const float *u, const float *v, size_t n) {
    __shared__ double sh[GM_RED_THREADS];
    double s = gm_dot_partial(u, v, n, 0, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

int gm_cuda_dot_partials(gm_cuda_ctx *c, const float *u, const float *v, size_t n, double **partial) {
    const int blocks = gm_red_blocks(n);
    *partial = (double *)gm_cuda_scratch(c, GM_SCR_RED, sizeof(double) * GM_RED_MAX_BLOCKS);
    if (!*partial) return 0;
    dot_partial_kernel<<<blocks, GM_RED_THREADS, 0, c->stream>>>(*partial, u, v, n);
    GM_CU_LAUNCHED(c);
    return blocks;
}
