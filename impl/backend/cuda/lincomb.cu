// out = ca*a*x + cb*b*y with optional learnable scalars a = *pa, b = *pb (device memory, 1 when
// NULL, read by the kernels so the host never waits for them) and an optional term y.
// The scalar gradients are dot products reduced deterministically in fp64 (reduce.cuh).
#include <cuda_runtime.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/reduce.cuh"

__global__ static void lincomb_fwd_kernel(float *out, double ca, const float *pa, const float *x, double cb,
                                          const float *pb, const float *y, size_t n) {
    float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = a * x[i] + (y ? b * y[i] : 0.0f);
}

// The same two statements as the CPU reference, in the same order (dx may alias dout, dy dx).
__global__ static void lincomb_bwd_kernel(float *dx, gm_grad_write dx_write, float *dy, gm_grad_write dy_write,
                                          const float *dout, double ca, const float *pa, double cb, const float *pb,
                                          const float *y, size_t n) {
    float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float g = dout[i];
        if (dx) gm_grad_put(&dx[i], dx_write, a * g);
        if (dy && y) gm_grad_put(&dy[i], dy_write, b * g);
    }
}

// *dp += (float)coef * (float)sum(partial[0..np)), as the CPU computes it.
__global__ static void __launch_bounds__(GM_RED_THREADS) dot_finish_kernel(float *dp, const double *partial, int np,
                                                                           double coef) {
    __shared__ double sh[GM_RED_THREADS];
    double s = gm_partials_total(partial, np, sh);
    if (threadIdx.x == 0) *dp += (float)coef * (float)s;
}

// *dp += coef * sum(u*v), deterministic.
static void dot_add(gm_cuda_ctx *c, float *dp, double coef, const float *u, const float *v, size_t n) {
    double *partial;
    const int blocks = gm_cuda_dot_partials(c, u, v, n, &partial);
    if (!blocks) return;
    dot_finish_kernel<<<1, GM_RED_THREADS, 0, c->stream>>>(dp, partial, blocks, coef);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_lincomb_fwd(const gm_backend *be, gm_real *out, double ca, const gm_real *pa, const gm_real *x,
                         double cb, const gm_real *pb, const gm_real *y, size_t n) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    lincomb_fwd_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(out, ca, pa, x, cb, pb, y, n);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_lincomb_bwd(const gm_backend *be, gm_real *dx, gm_grad_write dx_write, gm_real *dy,
                         gm_grad_write dy_write, gm_real *dpa, gm_real *dpb, const gm_real *dout, double ca, const gm_real *pa, const gm_real *x, double cb,
                         const gm_real *pb, const gm_real *y, size_t n) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    // The scalar gradients first: they read dout, which dx may alias.
    if (dpa) dot_add(c, dpa, ca, dout, x, n);
    if (dpb && y) dot_add(c, dpb, cb, dout, y, n);
    if (dx || (dy && y)) {
        lincomb_bwd_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(dx, dx_write, dy, dy_write, dout, ca, pa, cb, pb,
                                                                          y, n);
        GM_CU_LAUNCHED(c);
    }
}
