// Muon's momentum buffer update and the update it hands to the orthogonalizer (backend.h), the
// statements of cpu/momentum.c with explicitly rounded intrinsics (no FMA contraction), so the
// result is the CPU's bit for bit.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_common.cuh"

__global__ static void momentum_kernel(float *buf, float *u, const float *g, size_t n, float mu, float gmul,
                                       int nesterov) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float gg = __fmul_rn(gmul, g[i]);
        const float b = __fadd_rn(__fmul_rn(mu, buf[i]), gg);
        buf[i] = b;
        if (u) u[i] = nesterov ? __fadd_rn(gg, __fmul_rn(mu, b)) : b;
    }
}

void gm_cuda_momentum(const gm_backend *be, gm_real *buf, gm_real *u, const gm_real *g, size_t n, double mu,
                      double gmul, int nesterov) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    momentum_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(buf, u, g, n, (float)mu, (float)gmul, nesterov);
    GM_CU_LAUNCHED(c);
}
