// The CUDA backend's attention implementations, callable one at a time (tests, bench); the
// backend's attn_fwd / attn_bwd run GM_CUDA_ATTN_AUTO, which picks among them, or what the
// environment's GM_CUDA_ATTN names: one form for both passes, or FWD,BWD (gm_cuda_attn_name's
// spelling; read when the backend is made, an unknown name refused then). GM_CUDA_WGMMA=off (on,
// the default, or off; read and checked likewise) keeps the wgmma forms from running: the
// automatic choice takes the mma.sync ones, and a wgmma form asked for by name is refused (the GPU
// report's way on, should its first wgmma check fail or hang: ci/bundle/run_gpu_report.sh). Same
// arguments and semantics as attn_fwd / attn_bwd of backend.h.
//   naive  attention_naive.cu: scalar fp32 flash-style kernels, any head_dim <= 128. The GPU-side
//          reference the tensor-core kernels are tested against.
//   mma    attention_mma.cu: bf16 tensor-core kernels (mma.sync m16n8k16, fp32 accumulation),
//          head_dim 64 or 128 and every tensor 16-byte aligned; any other shape is an error
//          (recorded, reported by sync), never a silent fallback.
//   cudnn  attention_cudnn.cu: cuDNN's fused attention (graph API, loaded at run time), plain causal
//          masks only (no window, no documents), bf16 activations, head_dim a multiple of 8, 16-byte
//          aligned tensors, the backward writing (GM_GRAD_SET); anything else, or cuDNN absent,
//          is an error (recorded, reported by sync) naming the reason.
//   auto   cudnn for a plain causal mask where it serves (the backward: where dq/dk/dv are set),
//          else the tensor-core form gm_cuda_attn_auto_form names where they apply, else naive.
//          When cudnn was tried and could not serve, one note on stderr says why (once per
//          process) and the next choice runs.
#ifndef GM_BACKEND_CUDA_ATTENTION_H
#define GM_BACKEND_CUDA_ATTENTION_H

#include <string.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// GM_CUDA_ATTN_MMA32: the tensor-core kernels with the forward's 32 query rows per warp (4 warps a
// block, FlashAttention-2's shape) instead of MMA's 16 (8 warps), the same backward; bitwise the
// same results. GM_CUDA_ATTN_WGMMA: the same kernels with their products on Hopper's wgmma, forward
// and backward (sm_90a machine code on an sm_90 GPU, else refused). GM_CUDA_ATTN_WGMMA1: WGMMA's
// forward and the one-pass backward (one kernel, 5 products a pair instead of 7: dq summed over
// the key blocks in a fixed order, so as deterministic as the others, not bitwise the same dq);
// where WGMMA runs, else refused. GM_CUDA_ATTN_WGMMA_PERSIST: WGMMA's forward on persistent blocks
// (as many as the GPU holds, each walking many blocks of 128 queries, the next one's copies under
// the last one's tiles; bitwise the same results) and WGMMA's backward; where WGMMA runs.
// GM_CUDA_ATTN_WGMMA_PINGPONG: WGMMA's forward with its two warpgroups taking turns to issue their
// products (FlashAttention-3's pingpong; bitwise the same results) and WGMMA's backward; likewise
// where WGMMA runs. Those three were timed on an H200 and are not chosen automatically
// (attention.cu says why); the automatic choice among the first three is gm_cuda_attn_auto_form's.
typedef enum {
    GM_CUDA_ATTN_AUTO = 0,
    GM_CUDA_ATTN_NAIVE = 1,
    GM_CUDA_ATTN_MMA = 2,
    GM_CUDA_ATTN_CUDNN = 3,
    GM_CUDA_ATTN_MMA32 = 4,
    GM_CUDA_ATTN_WGMMA = 5,
    GM_CUDA_ATTN_WGMMA1 = 6,
    GM_CUDA_ATTN_WGMMA_PERSIST = 7,
    GM_CUDA_ATTN_WGMMA_PINGPONG = 8
} gm_cuda_attn_impl;

// An implementation's name, as GM_CUDA_ATTN and bench/attention_gpu spell it ("?" for a value
// outside the enum).
static inline const char *gm_cuda_attn_name(gm_cuda_attn_impl impl) {
    switch (impl) {
    case GM_CUDA_ATTN_AUTO: return "auto";
    case GM_CUDA_ATTN_NAIVE: return "naive";
    case GM_CUDA_ATTN_MMA: return "mma";
    case GM_CUDA_ATTN_CUDNN: return "cudnn";
    case GM_CUDA_ATTN_MMA32: return "mma32";
    case GM_CUDA_ATTN_WGMMA: return "wgmma";
    case GM_CUDA_ATTN_WGMMA1: return "wgmma1";
    case GM_CUDA_ATTN_WGMMA_PERSIST: return "wgmma-persist";
    case GM_CUDA_ATTN_WGMMA_PINGPONG: return "wgmma-pingpong";
    }
    return "?";
}
// The implementation named by the n characters at s (gm_cuda_attn_name's spelling) into *impl: 0,
// or -1 where they name none.
static inline int gm_cuda_attn_parse(const char *s, size_t n, gm_cuda_attn_impl *impl) {
    for (int i = GM_CUDA_ATTN_AUTO; i <= GM_CUDA_ATTN_WGMMA_PINGPONG; i++) {
        const char *name = gm_cuda_attn_name((gm_cuda_attn_impl)i);
        if (strlen(name) == n && !strncmp(s, name, n)) return *impl = (gm_cuda_attn_impl)i, 0;
    }
    return -1;
}
// GM_CUDA_ATTN's value s: one form for both passes, or FWD,BWD, into fwd and bwd: 0, or -1.
static inline int gm_cuda_attn_parse_pair(const char *s, gm_cuda_attn_impl *fwd, gm_cuda_attn_impl *bwd) {
    const char *comma = strchr(s, ',');
    if (!comma) return gm_cuda_attn_parse(s, strlen(s), fwd) ? -1 : (*bwd = *fwd, 0);
    return gm_cuda_attn_parse(s, (size_t)(comma - s), fwd) || gm_cuda_attn_parse(comma + 1, strlen(comma + 1), bwd)
               ? -1
               : 0;
}
#define GM_CUDA_ATTN_NAMES "auto, naive, mma, mma32, wgmma, wgmma1, wgmma-persist, wgmma-pingpong, cudnn"

// The one mask cuDNN's fused attention expresses (GM_CUDA_ATTN_CUDNN): causal, one document, no
// window.
static inline int gm_cuda_attn_plain_causal(gm_attn_mask m) { return !m.doc && m.window_blocks <= 0; }

// 1 when this build has the tensor-core kernels (CUDA_ARCH compute_80 or later), else 0: then
// auto always runs naive and asking for mma is an error.
int gm_cuda_attn_mma_built(void);
// The form the automatic choice runs where cuDNN does not serve (tensors 16-byte aligned), the
// same at every length and mask: at head_dim 128 WGMMA where it runs, else MMA32 forward (bwd 0)
// and MMA backward; MMA at head_dim 64; NAIVE for other head dims or a build without the
// tensor-core kernels. Chosen from measured times: attention.cu says which.
gm_cuda_attn_impl gm_cuda_attn_auto_form(const gm_backend *be, int bwd, int HD);
// 1 when GM_CUDA_ATTN_WGMMA runs on be's GPU (the sm_90a machine code on an sm_90 device, and the
// environment's GM_CUDA_WGMMA not off), else 0.
int gm_cuda_attn_wgmma_ready(const gm_backend *be);
// The wgmma kernels' Hopper parts one at a time on be's GPU, each on small integers whose products
// and sums are exact in fp32, so compared bit for bit: the TMA copy of a tensor-map box (rows past
// T zeros) and the threads' copy, each landing in the 128-byte swizzled layout the kernels' tile_at
// describes; wgmma with both operands K-major from swizzled tiles; with A from registers and B
// MN-major; the one-pass backward's dQ product (A and B MN-major, B from column HD / 2). Where a
// wgmma attention test fails, this says which part. Writes a line a part into report; returns 0,
// the number of parts wrong, or -1 where it could not run (wgmma absent, head_dim not 64 or 128).
int gm_cuda_attn_wgmma_parts(const gm_backend *be, int HD, char *report, size_t len);

// Build cuDNN's attention graph for this shape (bwd: the backward's) without a GPU: load cuDNN and
// make and finalize every tensor and operation descriptor, stopping before the operation graph
// (which needs a device). 0, or -1 with the reason in why (cuDNN absent, or the first descriptor it
// refused, with cuDNN's own message). What the library checks here, a test can check anywhere.
int gm_cuda_attn_cudnn_graph_check(int bwd, int B, int T, int NH, int HD, char *why, size_t len);
// The same graph's execution plan, built without a GPU for the device that device_json describes
// (cuDNN's device-properties JSON: its SM count, shared memory, compute capability...): the operation
// graph, cuDNN's heuristics and the first engine configuration that finalizes (kernels compiled where
// the engine compiles at run time, which needs the CUDA driver library, a stub one included). 0 with
// the plan's workspace in bytes and its engine (cuDNN's global index), or -1 with the reason (where
// no engine finalized: the heuristics' first choice and cuDNN's message for it).
int gm_cuda_attn_cudnn_plan_offline(int bwd, int B, int T, int NH, int HD, const char *device_json,
                                    int64_t *workspace, int64_t *engine, char *why, size_t len);
// cuDNN's device-properties JSON of GPU `device` (needs the GPU), the input of the above for a
// machine without one: 0 with the text in json, or -1 with the reason.
int gm_cuda_cudnn_device_json(int device, char *json, size_t json_len, char *why, size_t len);

void gm_cuda_attn_fwd_with(gm_cuda_attn_impl impl, const gm_backend *be, gm_actval *out, gm_real *lse,
                           const gm_actval *q, const gm_actval *k, const gm_actval *v, int B, int T, int NH, int HD,
                           double scale, gm_attn_mask mask);
void gm_cuda_attn_bwd_with(gm_cuda_attn_impl impl, const gm_backend *be, gm_actval *dq, gm_actval *dk, gm_actval *dv,
                           gm_grad_write dqkv_write, const gm_actval *dout, const gm_actval *q, const gm_actval *k,
                           const gm_actval *v, const gm_actval *out, const gm_real *lse, int B, int T, int NH, int HD,
                           double scale, gm_attn_mask mask);

#ifdef __cplusplus
}
#endif
#endif
