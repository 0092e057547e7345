// Muon's parameter update with decoupled, optionally cautious, weight decay (backend.h; record #43,
// modded-nanogpt records/track_1_short/2025-11-10_CautiousWD): the statements of
// cpu/muon_update.c with explicitly rounded intrinsics, so the result is the CPU's bit for bit.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_common.cuh"

__global__ static void muon_update_kernel(float *p, const float *u, size_t n, float lr, float wd, int cautious) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float pj = p[i], uj = u[i];
        const float d = !cautious || __fmul_rn(uj, pj) >= 0 ? __fmul_rn(wd, pj) : 0.0f;
        p[i] = __fsub_rn(pj, __fmul_rn(lr, __fadd_rn(uj, d)));
    }
}

void gm_cuda_muon_update(const gm_backend *be, gm_real *p, const gm_real *u, size_t n, double lr, double wd,
                         int cautious) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    muon_update_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(p, u, n, (float)lr, (float)wd, cautious);
    GM_CU_LAUNCHED(c);
}
