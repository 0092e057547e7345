// out = ca*a*x + cb*b*y with optional learnable scalars a = *pa, b = *pb (device memory, 1 when
// NULL, read by the kernels so the host never waits for them) and an optional term y.
// The scalar gradients are dot products reduced deterministically: a grid whose size depends
// only on n writes one fp64 partial per block (strided per-thread sums, then a fixed shared
// memory tree), and one block sums the partials in the same way. No atomics.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_common.cuh"

#define RED_THREADS 256  // a power of two (the tree below halves it)
#define RED_MAX_BLOCKS 256

__global__ static void lincomb_fwd_kernel(float *out, double ca, const float *pa, const float *x, double cb,
                                          const float *pb, const float *y, size_t n) {
    float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = a * x[i] + (y ? b * y[i] : 0.0f);
}

// The same two statements as the CPU reference, in the same order (dx may alias dout).
__global__ static void lincomb_bwd_kernel(float *dx, float *dy, const float *dout, double ca, const float *pa,
                                          double cb, const float *pb, const float *y, size_t n) {
    float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (dx) dx[i] += a * dout[i];
        if (dy && y) dy[i] += b * dout[i];
    }
}

// Fixed-order sum of the block's values; every thread of the block must call it.
static __device__ double block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int stride = RED_THREADS / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) sh[threadIdx.x] += sh[threadIdx.x + stride];
        __syncthreads();
    }
    return sh[0];
}

__global__ static void __launch_bounds__(RED_THREADS) dot_partial_kernel(double *partial, const float *u,
                                                                         const float *v, size_t n) {
    __shared__ double sh[RED_THREADS];
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * RED_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * RED_THREADS)
        s += (double)u[i] * v[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// *dp += (float)coef * (float)sum(partial[0..np)), as the CPU computes it.
__global__ static void __launch_bounds__(RED_THREADS) dot_finish_kernel(float *dp, const double *partial, int np,
                                                                        double coef) {
    __shared__ double sh[RED_THREADS];
    double s = 0;
    for (int i = threadIdx.x; i < np; i += RED_THREADS) s += partial[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) *dp += (float)coef * (float)s;
}

// *dp += coef * sum(u*v), deterministic.
static void dot_add(gm_cuda_ctx *c, float *dp, double coef, const float *u, const float *v, size_t n) {
    size_t nb = (n + RED_THREADS - 1) / RED_THREADS;
    int blocks = nb < 1 ? 1 : (nb > RED_MAX_BLOCKS ? RED_MAX_BLOCKS : (int)nb);
    double *partial = (double *)gm_cuda_scratch(c, GM_SCR_RED, sizeof(double) * RED_MAX_BLOCKS);
    if (!partial) return;
    dot_partial_kernel<<<blocks, RED_THREADS, 0, c->stream>>>(partial, u, v, n);
    GM_CU_LAUNCHED(c);
    dot_finish_kernel<<<1, RED_THREADS, 0, c->stream>>>(dp, partial, blocks, coef);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_lincomb_fwd(const gm_backend *be, gm_real *out, double ca, const gm_real *pa, const gm_real *x,
                         double cb, const gm_real *pb, const gm_real *y, size_t n) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    lincomb_fwd_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(out, ca, pa, x, cb, pb, y, n);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_lincomb_bwd(const gm_backend *be, gm_real *dx, gm_real *dy, gm_real *dpa, gm_real *dpb,
                         const gm_real *dout, double ca, const gm_real *pa, const gm_real *x, double cb,
                         const gm_real *pb, const gm_real *y, size_t n) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    // The scalar gradients first: they read dout, which dx may alias.
    if (dpa) dot_add(c, dpa, ca, dout, x, n);
    if (dpb && y) dot_add(c, dpb, cb, dout, y, n);
    if (dx || (dy && y)) {
        lincomb_bwd_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(dx, dy, dout, ca, pa, cb, pb, y, n);
        GM_CU_LAUNCHED(c);
    }
}
