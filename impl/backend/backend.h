// The kernel interface: one struct of function pointers (a "device", as in ggml). The model's
// forward and backward are written once against it; a backend implements kernels and memory
// and never knows about layers, presets or optimizers.
//
// Conventions shared by every kernel:
// - Pointers are the backend's memory (host memory for the CPU backend, device memory for
//   CUDA), holding gm_real master values; a backend may compute in lower precision inside.
// - Row-major. N = B*T rows of tokens. A head tensor (B, T, NH, HD) is the (B, T, C) activation
//   with C = NH*HD viewed per head; no transposes are materialised.
// - Backward kernels ADD into every input gradient (d* += ...), never overwrite, so a tensor used
//   twice (a tied embedding/head, the x0 stream, q/k/v all reading one normed x) collects both
//   contributions. The caller zeroes gradient buffers once before a backward pass.
// - Learnable scalars (residual lambdas, value-mix weights, U-net skip weights) are read
//   through pointers into backend memory, so the GPU never syncs to read a parameter.
#ifndef GM_BACKEND_BACKEND_H
#define GM_BACKEND_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "base/real.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GM_ACT_GELU = 0, GM_ACT_RELU2 = 1 } gm_act;  // exact (erf) GELU; relu(x)^2

// Which keys a query may see. Query q attends key k iff k <= q, and when `doc` is given
// doc[k] == doc[q], and when window_blocks > 0 floor(q/block) - floor(k/block) < window_blocks.
// The doc and window tests are the records' 128-token block mask (FlexAttention), realised
// exactly at token level.
typedef struct {
    const int32_t *doc;  // (B, T) document id per token, backend memory; NULL: one document
    int block;           // block size in tokens (128 in the records); used when window_blocks > 0
    int window_blocks;   // sliding window in whole blocks; <= 0: unlimited (plain causal)
} gm_attn_mask;

typedef struct gm_backend gm_backend;
struct gm_backend {
    const char *name;
    void *ctx;  // backend state (streams, handles); NULL for the CPU

    // ---- memory (bytes; pointers are backend memory) ----
    void *(*alloc)(const gm_backend *be, size_t bytes);  // zeroed; NULL + gm_fail on failure
    void (*free)(const gm_backend *be, void *p);
    void (*upload)(const gm_backend *be, void *dst, const void *host_src, size_t bytes);
    void (*download)(const gm_backend *be, void *host_dst, const void *src, size_t bytes);
    void (*copy)(const gm_backend *be, void *dst, const void *src, size_t bytes);
    void (*fill)(const gm_backend *be, gm_real *p, gm_real value, size_t n);

    // ---- embedding: out (N, C) = table[ids] ; dtable (V, C) += scatter of dout, deterministic ----
    void (*embed_fwd)(const gm_backend *be, gm_real *out, const int32_t *ids, const gm_real *table, int N, int C);
    void (*embed_bwd)(const gm_backend *be, gm_real *dtable, const int32_t *ids, const gm_real *dout, int N, int V,
                      int C);

    // ---- matmul: out (N, OC) = inp (N, C) @ W^T, W (OC, C) ----
    void (*matmul_fwd)(const gm_backend *be, gm_real *out, const gm_real *inp, const gm_real *W, int N, int C, int OC);
    // dinp (N, C) += dout @ W ; dW (OC, C) += dout^T @ inp. Either may be NULL (not wanted).
    void (*matmul_bwd)(const gm_backend *be, gm_real *dinp, gm_real *dW, const gm_real *dout, const gm_real *inp,
                       const gm_real *W, int N, int C, int OC);

    // ---- RMSNorm without weight over the last dim: out = x * rstd, rstd (N) = 1/sqrt(mean(x^2) + eps)
    // (also QK-norm: rows are (token, head) pairs of length HD) ----
    void (*rmsnorm_fwd)(const gm_backend *be, gm_real *out, gm_real *rstd, const gm_real *inp, int N, int C,
                        double eps);
    void (*rmsnorm_bwd)(const gm_backend *be, gm_real *dinp, const gm_real *dout, const gm_real *inp,
                        const gm_real *rstd, int N, int C);

    // ---- rotary, half-split layout, on (B, T, NH, HD); cos/sin tables (T, HD/2) ----
    // y1 = x1 cos + x2 sin ; y2 = -x1 sin + x2 cos, with x1 = x[:HD/2], x2 = x[HD/2:].
    void (*rotary_fwd)(const gm_backend *be, gm_real *out, const gm_real *inp, const gm_real *cos_t,
                       const gm_real *sin_t, int B, int T, int NH, int HD);
    void (*rotary_bwd)(const gm_backend *be, gm_real *dinp, const gm_real *dout, const gm_real *cos_t,
                       const gm_real *sin_t, int B, int T, int NH, int HD);

    // ---- masked softmax attention, q/k/v/out (B, T, NH, HD); lse (B, NH, T) log-sum-exp of the
    // scaled scores, kept for the backward (which recomputes probabilities, never stores T x T) ----
    void (*attn_fwd)(const gm_backend *be, gm_real *out, gm_real *lse, const gm_real *q, const gm_real *k,
                     const gm_real *v, int B, int T, int NH, int HD, double scale, gm_attn_mask mask);
    void (*attn_bwd)(const gm_backend *be, gm_real *dq, gm_real *dk, gm_real *dv, const gm_real *dout, const gm_real *q,
                     const gm_real *k, const gm_real *v, const gm_real *out, const gm_real *lse, int B, int T, int NH,
                     int HD, double scale, gm_attn_mask mask);

    // ---- MLP activation, elementwise over n ----
    void (*act_fwd)(const gm_backend *be, gm_act act, gm_real *out, const gm_real *inp, size_t n);
    void (*act_bwd)(const gm_backend *be, gm_act act, gm_real *dinp, const gm_real *dout, const gm_real *inp, size_t n);

    // ---- linear combination of two tensors with constant and optional learnable coefficients:
    // out = ca*a*x + cb*b*y, where a = *pa (1 when pa is NULL), b = *pb (1 when pb is NULL), y may
    // be NULL (term absent). Residual adds, branch scales, x0 lambdas, value mixing, U-net skips.
    void (*lincomb_fwd)(const gm_backend *be, gm_real *out, double ca, const gm_real *pa, const gm_real *x, double cb,
                        const gm_real *pb, const gm_real *y, size_t n);
    // dx += ca*a*dout ; dy += cb*b*dout ; *dpa += ca*sum(dout*x) ; *dpb += cb*sum(dout*y).
    // Any gradient pointer may be NULL. Sums are reduced in a fixed order (deterministic).
    void (*lincomb_bwd)(const gm_backend *be, gm_real *dx, gm_real *dy, gm_real *dpa, gm_real *dpb, const gm_real *dout,
                        double ca, const gm_real *pa, const gm_real *x, double cb, const gm_real *pb, const gm_real *y,
                        size_t n);

    // ---- logits (N, V) -> optional softcap z = cap*tanh(l/cap) (cap <= 0: none) -> cross-entropy.
    // losses (N) per row. When dlogits is not NULL it receives dloss/dlogits for
    // loss = dloss_scale * sum(losses) (e.g. 1/N for the mean), computed in the same pass from the
    // row's max and sum; dlogits may alias logits (then logits are overwritten). ----
    void (*xent_fwd_bwd)(const gm_backend *be, gm_real *losses, gm_real *dlogits, const gm_real *logits,
                         const int32_t *targets, int N, int V, double cap, double dloss_scale);
};

#ifdef __cplusplus
}
#endif
#endif
