// The CUDA backend's attn_fwd / attn_bwd: the shape check, the choice between cuDNN's fused
// attention (attention_cudnn.cu: plain causal masks), the tensor-core kernels (attention_mma.cu:
// head_dim 64 and 128, the presets') and the naive scalar ones (attention_naive.cu: every other
// head_dim up to 128), and the backward's D pass that the last two use.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "backend/cuda/attention.cuh"
#include "backend/cuda/attention.h"
#include "backend/cuda/device.h"
#include "base/error.h"

// The backward's per-query vectors (attention.cuh), (B, NH, Tq): D = rowsum(dout * out) of the
// activations dout, out (B, T, NH, HD), and where lse2 is given lse (B, NH, T) in log2 units; past T
// D 0 and lse2 +inf. One warp a (b, t, h) row, t < Tq, 8 a block; a fixed-order warp sum in fp32
// (deterministic).
__global__ static void attn_qvec_kernel(float *D, float *lse2, const float *lse, const gm_cuda_act *dout,
                                        const gm_cuda_act *out, int T, int Tq, int NH, int HD, size_t nrows) {
    const size_t row = (size_t)blockIdx.x * 8 + threadIdx.x / 32;  // = (b * Tq + t) * NH + h
    const int lane = threadIdx.x % 32;
    if (row >= nrows) return;
    const int h = (int)(row % NH);
    const size_t bt = row / NH, b = bt / Tq, t = bt % Tq, at = (b * NH + h) * Tq + t;
    if (t >= (size_t)T) {
        if (lane == 0) D[at] = 0.0f;
        if (lane == 0 && lse2) lse2[at] = INFINITY;
        return;
    }
    const gm_cuda_act *a = dout + ((b * T + t) * NH + h) * HD, *o = out + ((b * T + t) * NH + h) * HD;
    float s = 0.0f;
    for (int d = lane; d < HD; d += 32) s += gm_act_ld(a, d) * gm_act_ld(o, d);
    s = gm_warp_sum(s);
    if (lane == 0) D[at] = s;
    if (lane == 0 && lse2) lse2[at] = lse[(b * NH + h) * T + t] * (float)GM_ATTN_LOG2E;
}

// Shapes the kernels handle; notes an error otherwise. 0: nothing to do (or an error), 1: go.
static int check_shape(gm_cuda_ctx *c, int B, int T, int NH, int HD, gm_attn_mask m) {
    if (B <= 0 || T <= 0 || NH <= 0 || HD <= 0) return 0;
    if (HD > 128) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention", "head_dim > 128 is not supported");
        return 0;
    }
    if (m.window_blocks > 0 && m.block <= 0) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention", "a sliding window needs block > 0");
        return 0;
    }
    if (B > 65535 || NH > 65535) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention", "B and NH must be <= 65535 (grid dimensions)");
        return 0;
    }
    return 1;
}

// cuDNN could not serve a call (why). Asked for by name: an error, noted; 1 (stop). By the automatic
// choice: one note per process on stderr, then 0 (the next choice runs).
static int cudnn_declined(gm_cuda_ctx *c, gm_cuda_attn_impl impl, const char *why) {
    if (impl == GM_CUDA_ATTN_CUDNN) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention (cuDNN)", why);
        return 1;
    }
    static int said;
    if (!said) gm_report("note", "attention: cuDNN's fused attention not used for plain causal masks (%s); "
                                 "our kernels run them", why);
    said = 1;
    return 0;
}

// Whether impl is one of the wgmma forms (attention_mma.cu's WG kernels; sm_90a).
static bool wgmma_form(int impl) {
    return impl == GM_CUDA_ATTN_WGMMA || impl == GM_CUDA_ATTN_WGMMA1 || impl == GM_CUDA_ATTN_WGMMA_PERSIST ||
           impl == GM_CUDA_ATTN_WGMMA_PINGPONG;
}
// Whether impl is one of the tensor-core kernels' forms (attention_mma.cu).
static bool tensor_cores(int impl) {
    return impl == GM_CUDA_ATTN_MMA || impl == GM_CUDA_ATTN_MMA32 || wgmma_form(impl);
}

// The tensor-core form the automatic choice runs, from their times side by side on an H200 at
// 54fbabe (reports/gpu-h200/run-54fbabe*/attention-{window,docs,causal}.md: 6 heads of 128, T 1024 to
// 65536, window 14 with and without the records' documents, and plain causal):
//   forward   the wgmma forward was the fastest form at every T and mask: 1.5-3.2x the 16-row
//             kernel's speed with documents, 1.4-2.9x mma32's (1.38x at T 65536, the step's shape,
//             where the rule before this ran mma32). Of the mma.sync kernels (the forms where wgmma
//             does not run) mma32 was 1.01-1.18x the 16-row kernel's speed at every T and mask, so
//             it serves there at every T: not measured on an sm_80 GPU.
//   backward  wgmma's two kernels 1.75-1.92x mma's speed at every T and mask; the one-pass backward
//             (GM_CUDA_ATTN_WGMMA1: 5 products a pair where they take 7, dq summed over the key
//             blocks in a fixed order) 0.83-1.02x theirs, not chosen.
// Not chosen either: the wgmma forward on persistent blocks (GM_CUDA_ATTN_WGMMA_PERSIST: 1.00-1.07x
// under the window alone, 0.75-0.97x with documents) and with its warpgroups taking turns
// (GM_CUDA_ATTN_WGMMA_PINGPONG: 0.97-0.99x everywhere). Head_dim 64 keeps the 16-row mma kernels:
// not measured (the presets with head_dim 64 are the plain causal ones, which cuDNN serves where
// present).
static gm_cuda_attn_impl auto_form(gm_cuda_ctx *c, int bwd, int HD) {
    if (HD != 128) return GM_CUDA_ATTN_MMA;
    if (gm_cuda_attn_wgmma_runs(c)) return GM_CUDA_ATTN_WGMMA;
    return bwd ? GM_CUDA_ATTN_MMA : GM_CUDA_ATTN_MMA32;
}

// The implementation to run, or -1 (error noted) when the mma kernels are asked for a shape they
// do not take. They take the max of the raw scores for the max of the scaled ones (softmax_tile),
// so a scale that is not positive goes to the naive kernels.
static int pick(gm_cuda_ctx *c, gm_cuda_attn_impl impl, int bwd, int HD, double scale, const void *const *ptrs,
                int n) {
    const int fits = gm_cuda_attn_mma_fits(HD, ptrs, n) && scale > 0;
    const bool mma = tensor_cores(impl);
    if (mma && !gm_cuda_attn_mma_built()) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention (tensor cores)",
                     "not in this build (CUDA_ARCH below compute_80)");
        return -1;
    }
    if (impl == GM_CUDA_ATTN_AUTO) return fits ? auto_form(c, bwd, HD) : GM_CUDA_ATTN_NAIVE;
    if (mma && !fits) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention (tensor cores)",
                     "needs head_dim 64 or 128, 16-byte aligned tensors and a positive scale");
        return -1;
    }
    if (wgmma_form(impl) && !gm_cuda_attn_wgmma_runs(c)) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention (wgmma)",
                     "needs an sm_90 GPU (H100, H200), a build with CUDA_ARCH=sm_90a and GM_CUDA_WGMMA not off");
        return -1;
    }
    return impl;
}

extern "C" void gm_cuda_attn_fwd_with(gm_cuda_attn_impl impl, const gm_backend *be, gm_actval *out, gm_real *lse,
                                      const gm_actval *q, const gm_actval *k, const gm_actval *v, int B,
                                      int T, int NH, int HD, double scale, gm_attn_mask mask) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    const gm_cuda_act *qa = (const gm_cuda_act *)q;
    const gm_cuda_act *ka = (const gm_cuda_act *)k;
    const gm_cuda_act *va = (const gm_cuda_act *)v;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!check_shape(c, B, T, NH, HD, mask)) return;
    if (impl == GM_CUDA_ATTN_CUDNN || (impl == GM_CUDA_ATTN_AUTO && gm_cuda_attn_plain_causal(mask))) {
        char why[400];
        if (!gm_cuda_attn_cudnn_fwd(c, o, lse, qa, ka, va, B, T, NH, HD, scale, mask, why, sizeof why)) return;
        if (cudnn_declined(c, impl, why)) return;
    }
    const void *ptrs[] = {o, qa, ka, va};
    const int which = pick(c, impl, 0, HD, scale, ptrs, 4);
    if (tensor_cores(which)) {
        const gm_attn_fwd_form form = which == GM_CUDA_ATTN_MMA32            ? GM_ATTN_FWD_MMA32
                                      : which == GM_CUDA_ATTN_WGMMA_PERSIST  ? GM_ATTN_FWD_WGMMA_PERSIST
                                      : which == GM_CUDA_ATTN_WGMMA_PINGPONG ? GM_ATTN_FWD_WGMMA_PINGPONG
                                      : wgmma_form(which)                    ? GM_ATTN_FWD_WGMMA
                                                                             : GM_ATTN_FWD_MMA16;
        gm_cuda_attn_mma_fwd(c, form, o, lse, qa, ka, va, B, T, NH, HD, scale, mask);
    }
    if (which == GM_CUDA_ATTN_NAIVE) gm_cuda_attn_naive_fwd(c, o, lse, qa, ka, va, B, T, NH, HD, scale, mask);
}

extern "C" void gm_cuda_attn_bwd_with(gm_cuda_attn_impl impl, const gm_backend *be, gm_actval *dq,
                                      gm_actval *dk, gm_actval *dv, gm_grad_write dqkv_write,
                                      const gm_actval *dout, const gm_actval *q, const gm_actval *k,
                                      const gm_actval *v, const gm_actval *out, const gm_real *lse, int B,
                                      int T, int NH, int HD, double scale, gm_attn_mask mask) {
    gm_cuda_act *dqa = (gm_cuda_act *)dq;
    gm_cuda_act *dka = (gm_cuda_act *)dk;
    gm_cuda_act *dva = (gm_cuda_act *)dv;
    const gm_cuda_act *doa = (const gm_cuda_act *)dout;
    const gm_cuda_act *qa = (const gm_cuda_act *)q;
    const gm_cuda_act *ka = (const gm_cuda_act *)k;
    const gm_cuda_act *va = (const gm_cuda_act *)v;
    const gm_cuda_act *oa = (const gm_cuda_act *)out;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!check_shape(c, B, T, NH, HD, mask)) return;
    if (impl == GM_CUDA_ATTN_CUDNN && dqkv_write != GM_GRAD_SET) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention (cuDNN)", "its backward writes dq, dk, dv; it cannot add into them");
        return;
    }
    if (impl == GM_CUDA_ATTN_CUDNN || (impl == GM_CUDA_ATTN_AUTO && gm_cuda_attn_plain_causal(mask) && dqkv_write == GM_GRAD_SET)) {
        char why[400];
        if (!gm_cuda_attn_cudnn_bwd(c, dqa, dka, dva, doa, qa, ka, va, oa, lse, B, T, NH, HD, scale, mask, why,
                                    sizeof why))
            return;
        if (cudnn_declined(c, impl, why)) return;
    }
    const void *ptrs[] = {dqa, dka, dva, doa, qa, ka, va};
    const int which = pick(c, impl, 1, HD, scale, ptrs, 7);
    if (which < 0) return;
    const bool tc = tensor_cores(which);
    const int Tq = gm_cuda_attn_qvec_len(T, tc);
    const size_t nrows = (size_t)B * Tq * NH;
    float *D = (float *)gm_cuda_scratch(c, GM_SCR_ATTN_D, sizeof(float) * nrows);
    float *lse2 = tc ? (float *)gm_cuda_scratch(c, GM_SCR_ATTN_LSE2, sizeof(float) * nrows) : NULL;
    if (!D || (tc && !lse2)) return;
    attn_qvec_kernel<<<(unsigned)((nrows + 7) / 8), 256, 0, c->stream>>>(D, lse2, lse, doa, oa, T, Tq, NH, HD, nrows);
    GM_CU_LAUNCHED(c);
    if (tc) {  // mma32: mma's
        const gm_attn_bwd_form form = which == GM_CUDA_ATTN_WGMMA1 ? GM_ATTN_BWD_ONEPASS
                                      : wgmma_form(which)            ? GM_ATTN_BWD_WGMMA
                                                                     : GM_ATTN_BWD_MMA;
        gm_cuda_attn_mma_bwd(c, form, dqa, dka, dva, dqkv_write, doa, qa, ka, va, lse2, D, B, T, NH, HD, scale, mask);
    } else {
        gm_cuda_attn_naive_bwd(c, dqa, dka, dva, dqkv_write, doa, qa, ka, va, lse, D, B, T, NH, HD, scale, mask);
    }
}

extern "C" gm_cuda_attn_impl gm_cuda_attn_auto_form(const gm_backend *be, int bwd, int HD) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    return gm_cuda_attn_mma_fits(HD, NULL, 0) ? auto_form(c, bwd, HD) : GM_CUDA_ATTN_NAIVE;
}

extern "C" int gm_cuda_attn_wgmma_ready(const gm_backend *be) {
    return gm_cuda_attn_mma_built() && gm_cuda_attn_wgmma_runs(gm_cuda_ctx_of(be));
}

extern "C" int gm_cuda_attn_wgmma_parts(const gm_backend *be, int HD, char *report, size_t len) {
    return gm_cuda_attn_wgmma_parts_run(gm_cuda_ctx_of(be), HD, report, len);
}

void gm_cuda_attn_fwd(const gm_backend *be, gm_actval *out, gm_real *lse, const gm_actval *q, const gm_actval *k,
                      const gm_actval *v, int B, int T, int NH, int HD, double scale, gm_attn_mask mask) {
    gm_cuda_attn_fwd_with(gm_cuda_ctx_of(be)->attn_fwd, be, out, lse, q, k, v, B, T, NH, HD, scale, mask);
}

void gm_cuda_attn_bwd(const gm_backend *be, gm_actval *dq, gm_actval *dk, gm_actval *dv, gm_grad_write dqkv_write,
                      const gm_actval *dout, const gm_actval *q, const gm_actval *k, const gm_actval *v,
                      const gm_actval *out, const gm_real *lse, int B, int T, int NH, int HD, double scale,
                      gm_attn_mask mask) {
    gm_cuda_attn_bwd_with(gm_cuda_ctx_of(be)->attn_bwd, be, dq, dk, dv, dqkv_write, dout, q, k, v, out, lse, B, T, NH, HD,
                          scale, mask);
}
