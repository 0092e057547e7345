// Adam/AdamW over a group of tensors (the formula in optim/adam.h), one tensor after another on
// the stream, in fp32 as the CPU reference computes in the parameter dtype. Every operation is an explicitly rounded intrinsic (__fmul_rn, ...), so
// nvcc contracts nothing into an FMA and the update is the CPU's bit for bit, given the same
// gradient scale. The scale of normalize_grad, 1 / (||g||_F + 1e-6), comes from the fp64 sum of
// squares of reduce.cuh (deterministic, but not the CPU's index order: it agrees to rounding), and
// is computed on the device, so the host never waits.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/reduce.cuh"

__global__ static void __launch_bounds__(GM_RED_THREADS)
    grad_scale_kernel(float *gscale, const double *partial, int np) {
    __shared__ double sh[GM_RED_THREADS];
    double ss = gm_partials_total(partial, np, sh);
    if (threadIdx.x == 0) *gscale = (float)(1.0 / (sqrt(ss) + 1e-6));
}

// The adam_update statements of cpu/adam.c, in its order. gscale NULL: no normalization.
__global__ static void adam_kernel(float *p, const float *g, float *m, float *v, size_t n, const float *gscale,
                                   float step_size, float bc2_sqrt, float eps, float decay, int apply_decay, float b1,
                                   float b2, float one_b1, float one_b2) {
    const float gs = gscale ? *gscale : 1.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float gj = __fmul_rn(g[i], gs);
        float pj = p[i];
        if (apply_decay) pj = __fmul_rn(pj, decay);
        const float mj = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(one_b1, gj));
        const float vj = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(one_b2, gj), gj));
        const float den = __fadd_rn(__fdiv_rn(__fsqrt_rn(vj), bc2_sqrt), eps);
        p[i] = __fsub_rn(pj, __fdiv_rn(__fmul_rn(step_size, mj), den));
        m[i] = mj, v[i] = vj;
    }
}

// One tensor. The scale's scratch slot is reused by the next tensor's kernels, queued after these
// on the same stream.
static void adam_tensor(gm_cuda_ctx *c, float *p, const float *g, float *m, float *v, size_t n,
                        const gm_adam_args *a) {
    if (!n) return;
    float *gscale = NULL;
    if (a->normalize_grad) {
        double *partial;
        const int np = gm_cuda_dot_partials(c, g, g, n, &partial);
        gscale = (float *)gm_cuda_scratch(c, GM_SCR_ADAM_SCALE, sizeof(float));
        if (!np || !gscale) return;
        grad_scale_kernel<<<1, GM_RED_THREADS, 0, c->stream>>>(gscale, partial, np);
        GM_CU_LAUNCHED(c);
    }
    adam_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(
        p, g, m, v, n, gscale, (float)a->step_size, (float)a->bc2_sqrt, (float)a->eps, (float)a->decay, a->apply_decay,
        (float)a->beta1, (float)a->beta2, (float)(1.0 - a->beta1), (float)(1.0 - a->beta2));
    GM_CU_LAUNCHED(c);
}

void gm_cuda_adam_update(const gm_backend *be, gm_real *p, const gm_real *g, gm_real *m, gm_real *v, int count,
                         const gm_adam_span *spans, const gm_adam_args *a) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    for (int i = 0; i < count; i++)
        adam_tensor(c, p + spans[i].offset, g + spans[i].offset, m + spans[i].state_offset, v + spans[i].state_offset,
                    spans[i].n, a);
}
