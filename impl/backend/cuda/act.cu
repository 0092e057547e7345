// MLP activations, elementwise: exact GELU x*Phi(x) (erf form) and ReLU^2. Computed in double as
// the CPU reference does (the kernels are memory-bound, so this costs little), rounded to fp32.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

__global__ static void act_fwd_kernel(int gelu, float *out, const float *inp, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double x = inp[i];
        out[i] = (float)(gelu ? 0.5 * x * (1.0 + erf(x * INV_SQRT2)) : (x > 0 ? x * x : 0.0));
    }
}

// GELU' = Phi(x) + x*phi(x); (ReLU^2)' = 2*relu(x).
__global__ static void act_bwd_kernel(int gelu, float *dinp, gm_grad_write write, const float *dout, const float *inp,
                                      size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double x = inp[i], g;
        if (gelu)
            g = 0.5 * (1.0 + erf(x * INV_SQRT2)) + x * INV_SQRT_2PI * exp(-0.5 * x * x);
        else
            g = x > 0 ? 2.0 * x : 0.0;
        gm_grad_put(&dinp[i], write, (float)(g * dout[i]));
    }
}

void gm_cuda_act_fwd(const gm_backend *be, gm_act act, gm_actval *out_act, const gm_actval *inp_act, size_t n) {
    gm_real *out = (gm_real *)out_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    act_fwd_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(act == GM_ACT_GELU, out, inp, n);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_act_bwd(const gm_backend *be, gm_act act, gm_actval *dinp_act, gm_grad_write dinp_write, const gm_actval *dout_act,
                     const gm_actval *inp_act, size_t n) {
    gm_real *dinp = (gm_real *)dinp_act;
    const gm_real *dout = (const gm_real *)dout_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    act_bwd_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(act == GM_ACT_GELU, dinp, dinp_write, dout, inp, n);
    GM_CU_LAUNCHED(c);
}
