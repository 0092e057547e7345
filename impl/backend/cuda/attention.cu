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

// The tensor-core form the automatic choice runs, from their times side by side on an H200
// (reports/gpu-h200/run-*/attention-{window,causal}.md; 6 heads of 128):
//   forward   at e4790d9 and 1772e6e (the wgmma forward with FlashAttention-3's overlap): with
//             fewer than 8 blocks of 128 queries an SM (T <= 16384 here) wgmma was 1.05 to 1.17
//             times as fast as the 16-row kernel and faster than 32 rows a warp (mma32) at every T,
//             window 14 and plain causal, but with the records' documents (mean 700 tokens: fewer
//             keys a block) 0.94 to 1.00, the 16-row kernel fastest there; from 1536 blocks (T 32768,
//             65536) mma32 was 1.07-1.08 times wgmma under the window, 0.98 plain causal, 0.99 and
//             1.05 with documents (attention-docs.md; there 0.98 and 1.04 times the 16-row kernel:
//             within 2% at T 32768). So: mma32 from 8 blocks an SM (ecc8627 and 301becd
//             had put its threshold there against the 16-row kernel); below, wgmma where it runs and
//             the mask has no documents, else the 16-row kernel.
//   backward  wgmma was 1.11 to 1.19 times as fast as mma at every T measured (1024 to 65536, both
//             masks; e4790d9, its dq kernel overlapped; 1.09-1.16 before), 1.02 to 1.05 with
//             documents (1772e6e): wgmma wherever it runs.
// In the softcap step (T 65536, window 7 and documents: less work a block) the gains are smaller:
// 1.06 times forward, 1.02 backward (reports/gpu-h200/run-301becd/kernels-softcap.md).
// The one-pass backward (GM_CUDA_ATTN_WGMMA1: 5 products a pair where wgmma's two kernels take 7,
// dq summed over the key blocks behind a semaphore a query tile) is not chosen until a GPU has timed
// it beside wgmma's (bench/attention_gpu's wgmma1 column); nor the wgmma forward on persistent
// blocks (GM_CUDA_ATTN_WGMMA_PERSIST; its wgmma-persist column), nor with its warpgroups taking
// turns (GM_CUDA_ATTN_WGMMA_PINGPONG; its wgmma-pingpong column).
// Head_dim 64 keeps the 16-row mma kernels: not measured (the presets with head_dim 64 are the plain
// causal ones, which cuDNN serves where present). Every figure above predates the changes after
// 1772e6e (reports/gpu-h200/README.md: fewer instructions a tile in every form, the wgmma and dk/dv
// rings two tiles ahead, two blocks an SM for the 16-row forward), which can reorder the forms.
static gm_cuda_attn_impl auto_form(gm_cuda_ctx *c, int bwd, int B, int T, int NH, int HD, gm_attn_mask mask) {
    if (HD != 128) return GM_CUDA_ATTN_MMA;
    const gm_cuda_attn_impl hopper = gm_cuda_attn_wgmma_runs(c) ? GM_CUDA_ATTN_WGMMA : GM_CUDA_ATTN_MMA;
    if (bwd) return hopper;
    const double blocks = (double)B * NH * ceil(T / 128.0);
    const int sms = gm_cuda_device_sms(c->device);
    if (sms > 0 && blocks >= 8.0 * sms) return GM_CUDA_ATTN_MMA32;
    return mask.doc ? GM_CUDA_ATTN_MMA : hopper;
}

// The implementation to run, or -1 (error noted) when the mma kernels are asked for a shape they
// do not take. They take the max of the raw scores for the max of the scaled ones (softmax_tile),
// so a scale that is not positive goes to the naive kernels.
static int pick(gm_cuda_ctx *c, gm_cuda_attn_impl impl, int bwd, int B, int T, int NH, int HD, double scale,
                gm_attn_mask mask, const void *const *ptrs, int n) {
    const int fits = gm_cuda_attn_mma_fits(HD, ptrs, n) && scale > 0;
    const bool mma = tensor_cores(impl);
    if (mma && !gm_cuda_attn_mma_built()) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention (tensor cores)",
                     "not in this build (CUDA_ARCH below compute_80)");
        return -1;
    }
    if (impl == GM_CUDA_ATTN_AUTO) return fits ? auto_form(c, bwd, B, T, NH, HD, mask) : GM_CUDA_ATTN_NAIVE;
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
    const int which = pick(c, impl, 0, B, T, NH, HD, scale, mask, ptrs, 4);
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
    const int which = pick(c, impl, 1, B, T, NH, HD, scale, mask, ptrs, 7);
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

extern "C" gm_cuda_attn_impl gm_cuda_attn_auto_form(const gm_backend *be, int bwd, int B, int T, int NH, int HD,
                                                    gm_attn_mask mask) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    return gm_cuda_attn_mma_fits(HD, NULL, 0) ? auto_form(c, bwd, B, T, NH, HD, mask) : GM_CUDA_ATTN_NAIVE;
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
