// MLP activations, elementwise over n activation elements: exact GELU x*Phi(x) (erf form) and
// ReLU^2. Computed in double as the CPU reference does (the kernels are memory-bound, so this costs
// little), rounded to fp32 and then stored as the activation element (act_elem.cuh: one more
// rounding where it is bf16, as cpu-bf16 rounds the fp32 result).
//
// Access: a thread takes groups of W consecutive elements, W = GM_ACT_VEC (one 16-byte load per
// operand, one 16-byte store) where every pointer is 16-byte aligned, else W = 1; the n % W tail
// past the last whole group is done one element at a time. Each element is read before it is
// written by the same thread, so dinp may alias dout and out may alias inp.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

// Elements [i, i + W) of out = act(inp).
template <int W>
static __device__ __forceinline__ void act_fwd_group(int gelu, gm_cuda_act *out, const gm_cuda_act *inp, size_t i) {
    float v[W];
    gm_act_ldw<W>(inp, i, v);
#pragma unroll
    for (int j = 0; j < W; j++) {
        const double x = v[j];
        v[j] = (float)(gelu ? 0.5 * x * (1.0 + erf(x * INV_SQRT2)) : (x > 0 ? x * x : 0.0));
    }
    gm_act_stw<W>(out, i, v);
}

// act'(x) * d, rounded to fp32; GELU' = Phi(x) + x*phi(x), (ReLU^2)' = 2*relu(x). Not inlined: the
// W copies of erf and exp, interleaved, took 166 registers at W = 8 (ptxas, sm_90a).
static __device__ __noinline__ float act_grad(int gelu, double x, double d) {
    const double g = gelu ? 0.5 * (1.0 + erf(x * INV_SQRT2)) + x * INV_SQRT_2PI * exp(-0.5 * x * x)
                          : (x > 0 ? 2.0 * x : 0.0);
    return (float)(g * d);
}

// Elements [i, i + W) of dinp (+)= act'(inp) * dout.
template <int W>
static __device__ __forceinline__ void act_bwd_group(int gelu, gm_cuda_act *dinp, gm_grad_write write,
                                                     const gm_cuda_act *dout, const gm_cuda_act *inp, size_t i) {
    float x[W], d[W];
    gm_act_ldw<W>(inp, i, x);
    gm_act_ldw<W>(dout, i, d);
#pragma unroll
    for (int j = 0; j < W; j++) d[j] = act_grad(gelu, x[j], d[j]);
    gm_act_putw<W>(dinp, i, write, d);
}

// Grid-stride over the n / W whole groups, then over the n % W tail elements.
template <int W> __global__ static void act_fwd_kernel(int gelu, gm_cuda_act *out, const gm_cuda_act *inp, size_t n) {
    const size_t t0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
    const size_t body = n / W * W;
    for (size_t i = t0 * W; i < body; i += step * W) act_fwd_group<W>(gelu, out, inp, i);
    for (size_t i = body + t0; i < n; i += step) act_fwd_group<1>(gelu, out, inp, i);
}

template <int W>
__global__ static void act_bwd_kernel(int gelu, gm_cuda_act *dinp, gm_grad_write write, const gm_cuda_act *dout,
                                      const gm_cuda_act *inp, size_t n) {
    const size_t t0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
    const size_t body = n / W * W;
    for (size_t i = t0 * W; i < body; i += step * W) act_bwd_group<W>(gelu, dinp, write, dout, inp, i);
    for (size_t i = body + t0; i < n; i += step) act_bwd_group<1>(gelu, dinp, write, dout, inp, i);
}

void gm_cuda_act_fwd(const gm_backend *be, gm_act act, gm_actval *out, const gm_actval *inp, size_t n) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    const bool vec = gm_vec_aligned_all(o, x);
    const auto kernel = vec ? act_fwd_kernel<GM_ACT_VEC> : act_fwd_kernel<1>;
    const size_t groups = vec ? (n + GM_ACT_VEC - 1) / GM_ACT_VEC : n;
    kernel<<<gm_cuda_blocks(groups, 256), 256, 0, c->stream>>>(act == GM_ACT_GELU, o, x, n);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_act_bwd(const gm_backend *be, gm_act act, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                     const gm_actval *inp, size_t n) {
    gm_cuda_act *dx = (gm_cuda_act *)dinp;
    const gm_cuda_act *dy = (const gm_cuda_act *)dout;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    const bool vec = gm_vec_aligned_all(dx, dy, x);
    const auto kernel = vec ? act_bwd_kernel<GM_ACT_VEC> : act_bwd_kernel<1>;
    const size_t groups = vec ? (n + GM_ACT_VEC - 1) / GM_ACT_VEC : n;
    kernel<<<gm_cuda_blocks(groups, 256), 256, 0, c->stream>>>(act == GM_ACT_GELU, dx, dinp_write, dy, x, n);
    GM_CU_LAUNCHED(c);
}
