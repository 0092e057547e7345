// The kernel interface: one struct of function pointers (a "device", as in ggml). The model's
// forward and backward and the optimizers' arithmetic are written once against it; a backend
// implements memory and kernels and never knows about layers, presets or optimizers.
//
// Conventions shared by every kernel:
// - Pointers are the backend's memory (host memory for the CPU backend, device memory for
//   CUDA). Parameters, their gradients, optimizer states and per-row statistics (rstd, lse,
//   losses) are gm_real master values; activations and activation gradients are gm_actval, the
//   backend's own element (act_size bytes: gm_real on the CPU backends, bf16 on CUDA). A backend
//   may compute in lower precision inside. Host code never dereferences them: it moves data with
//   upload/download, or gm_act_upload/gm_act_download for activations (act_io.h), and
//   `host_visible` says whether the memory happens to be host memory, so a communicator may skip a
//   staging copy.
// - Kernels return nothing and may run asynchronously, in the order they were called. A failure
//   (bad input found by a kernel, a device fault, an allocation inside a kernel) is recorded and
//   returned by the next `sync`, which also waits for every queued kernel.
// - Row-major. N = B*T rows of tokens. A head tensor (B, T, NH, HD) is the (B, T, C) activation
//   with C = NH*HD viewed per head; no transposes are materialised.
// - Backward kernels write each activation gradient as the caller says (gm_grad_write): the first
//   writer of a buffer sets it (what the buffer held is never read, so nothing is zeroed before a
//   backward pass), a later writer adds (a tensor used twice: the x0 stream, q/k/v all reading one
//   normed x). SET stores the computed value itself, so a -0 stays -0 where zero-then-add gave +0;
//   nothing downstream depends on the sign of a zero gradient. Parameter gradients (dW, dtable and
//   the learnable scalars' dpa/dpb) always add: the optimizer zeroes them once per step.
// - Learnable scalars (residual lambdas, value-mix weights, U-net skip weights) are read
//   through pointers into backend memory, so the GPU never syncs to read a parameter.
#ifndef GM_BACKEND_BACKEND_H
#define GM_BACKEND_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "base/hostdev.h"
#include "base/real.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GM_ACT_GELU = 0, GM_ACT_RELU2 = 1 } gm_act;  // exact (erf) GELU; relu(x)^2

// An element of an activation or activation gradient as the backend stores it (be->act_size bytes).
// Opaque on purpose: host code can neither read it nor do pointer arithmetic on it, so a place that
// would mix activations with gm_real memory does not compile. A view into a tensor is gm_act_at.
typedef struct gm_actval gm_actval;

// How a backward kernel writes an activation gradient: overwrite, or add into what is there.
typedef enum { GM_GRAD_SET = 0, GM_GRAD_ADD = 1 } gm_grad_write;

// Store one gradient element as `write` says (host and device code).
static inline GM_HD void gm_grad_put(gm_real *p, gm_grad_write write, gm_real value) {
    *p = write == GM_GRAD_ADD ? *p + value : value;
}

// Where element i of lincomb's x (and dx) is, as a view of rows of cols elements ld apart (cols ==
// ld: contiguous, element i itself). Host and device code.
static inline GM_HD size_t gm_lincomb_x_at(size_t i, int cols, int ld) {
    return cols == ld ? i : i / (size_t)cols * (size_t)ld + i % (size_t)cols;
}

// Which keys a query may see. Query q attends key k iff k <= q, and when `doc` is given
// doc[k] == doc[q], and when window_blocks > 0 floor(q/block) - floor(k/block) < window_blocks.
// The doc and window tests are the records' 128-token block mask (FlexAttention), realised
// exactly at token level.
typedef struct {
    // (B, T) document id per token, backend memory; NULL: one document. Nondecreasing along t, as
    // gm_doc_ids makes them (a running count of EOTs): the CUDA tensor-core kernels find a
    // document's ends by binary search once a call (attention_mma_mask.cuh), the CPU and naive
    // kernels compare ids.
    const int32_t *doc;
    int block;           // block size in tokens (128 in the records); used when window_blocks > 0
    int window_blocks;   // sliding window in whole blocks; <= 0: unlimited (plain causal)
} gm_attn_mask;

// ---- optimizer kernels' parameters ----

// One Adam/AdamW step's scalars, computed by the caller (optim/adam.c) in double and used by the
// kernel in gm_real, as PyTorch computes in the parameter dtype.
typedef struct {
    double step_size;   // lr / (1 - beta1^t)
    double bc2_sqrt;    // sqrt(1 - beta2^t)
    double eps;
    double beta1, beta2;
    double decay;        // 1 - lr * weight_decay (AdamW), applied when apply_decay
    int apply_decay;
    int normalize_grad;  // g <- g / (||g||_F + 1e-6) per tensor first (the AdamW baseline record)
} gm_adam_args;

// One tensor of an Adam step: n elements at p + offset (its gradient at g + offset), its moments at
// m + state_offset and v + state_offset.
typedef struct {
    size_t offset, state_offset, n;
} gm_adam_span;

// A Newton-Schulz coefficient set: one (a, b, c) triple per iteration for the odd quintic
// p(x) = a x + b x^3 + c x^5 applied to the singular values of X (X <- a X + (b A + c A^2) X with
// A = X X^T), and the normalization X = G / (norm_scale * ||G||_F + norm_eps). The sets themselves
// are data of optim/ns_coeffs.c.
#define GM_NS_MAX_TRIPLES 8
typedef struct {
    const char *name;    // short name for flags and tables: "quintic", "cubic", "you5", "polar-express"
    const char *source;  // where the numbers come from (record path or paper)
    int ntriples;        // iteration k >= ntriples reuses the last triple
    double abc[GM_NS_MAX_TRIPLES][3];
    double norm_scale;
    double norm_eps;
} gm_ns_coeffs;

// The triple used at iteration k (0-based).
static inline const double *gm_ns_triple(const gm_ns_coeffs *set, int k) {
    return set->abc[k < set->ntriples ? k : set->ntriples - 1];
}

// Orthogonalizers: replace an update matrix G (rows, cols) by (an approximation of) its polar
// factor Q = U V^T, where G = U S V^T is the thin SVD.
//   svd            Q from an SVD (LAPACK on the CPU): the reference.
//   newton-schulz  an odd matrix polynomial iteration (coefficient set, steps) that maps each
//                  singular value of the normalized G through a scalar map, leaving U, V alone.
//   gram-ns        the same polynomials, iterated on the small Gram matrix R = X X^T of a
//                  non-square X and applied to X once (Gram Newton-Schulz, Dao-AILab), with
//                  restarts (X <- Q X, R <- X X^T) before the iterations in gram_restarts; a
//                  square X runs the newton-schulz iteration with both symmetric products by
//                  SYRK. Equal to newton-schulz in exact arithmetic, not in rounding.
// Rank-deficient G: singular values at (or numerically at) zero stay zero in both, so the result is
// the partial isometry U_r V_r^T over the nonzero singular values. Non-finite input is refused.
typedef enum { GM_ORTHO_SVD, GM_ORTHO_NS, GM_ORTHO_GRAM_NS } gm_ortho_method;

// Which tensor the NS normalizer's Frobenius norm is taken of, when bf16 is emulated:
// OF_G: the input as given (records #3, #4: X = bf16(G) / (||G|| + eps));
// OF_X: the input rounded to the working precision (records #8 on: X = bf16(G), X / (||X|| + eps)).
// Identical without bf16.
typedef enum { GM_NS_NORM_OF_G, GM_NS_NORM_OF_X } gm_ns_norm_src;

typedef struct {
    gm_ortho_method method;
    const gm_ns_coeffs *coeffs;  // NS (and gram-ns, as every NS field): coefficient set (gm_ns_coeffs_find("quintic"))
    int steps;                   // NS: iterations, >= 1
    int bf16;                    // NS: round the normalized input and every matmul output to bf16
                                 //     (as bf16 GEMMs with fp32 accumulation do)
    gm_ns_norm_src norm_src;     // NS: see above
    unsigned gram_restarts;      // gram-ns: bit k set = restart before iteration k (0-based, k >= 1)
    // NS on the CPU harness only (NULL in training; other backends ignore it): called after
    // iteration k = 1..steps with the iterate as a (rows, cols) fp64 host matrix.
    void (*observe)(void *ctx, int k, const double *X, int rows, int cols);
    void *observe_ctx;
} gm_ortho;

// One matrix of an orthogonalize call: out (rows, cols) = out_scale * orthogonalize(G). out may
// not alias G. `name` is for error messages only.
typedef struct {
    const char *name;
    gm_real *out;
    const gm_real *G;
    int rows, cols;
    double out_scale;
} gm_ortho_item;

// ---- the kernels ----
// X(name, (parameters after `be`), (the same parameters as arguments)). Every backend fills one
// function pointer per entry; wrapper backends (backend/guard) generate their forwarders from it.
#define GM_UNPACK(...) __VA_ARGS__
#define GM_BACKEND_KERNELS(X)                                                                                          \
    /* ---- memory: memmove semantics; fill n elements with value ---- */                                             \
    X(copy, (void *dst, const void *src, size_t bytes), (dst, src, bytes))                                             \
    X(fill, (gm_real * p, gm_real value, size_t n), (p, value, n))                                                     \
    /* ---- embedding: out (N, C) = table[ids] ; dtable (V, C) += scatter of dout, deterministic ---- */               \
    X(embed_fwd, (gm_actval *out, const int32_t *ids, const gm_real *table, int N, int C), (out, ids, table, N, C))     \
    X(embed_bwd, (gm_real * dtable, const int32_t *ids, const gm_actval *dout, int N, int V, int C),                     \
      (dtable, ids, dout, N, V, C))                                                                                    \
    /* ---- matmul: out (N, OC) = scale * inp (N, C) @ W^T (+ res when res is not NULL: a residual added in the same  \
       pass, out = s acc + res rounded once; out aliases neither res nor inp), W (OC, C); scale rounded to gm_real    \
       once ---- */                                                                                                   \
    X(matmul_fwd,                                                                                                      \
      (gm_actval *out, const gm_actval *inp, const gm_real *W, int N, int C, int OC, double scale, const gm_actval *res), \
      (out, inp, W, N, C, OC, scale, res))                                                                             \
    /* dinp (N, C) (+)= dout @ W ; dW (OC, C) += dout^T @ inp. Either may be NULL (not wanted). */                    \
    X(matmul_bwd,                                                                                                      \
      (gm_actval *dinp, gm_grad_write dinp_write, gm_real * dW, const gm_actval *dout, const gm_actval *inp,                \
       const gm_real *W, int N, int C, int OC),                                                                        \
      (dinp, dinp_write, dW, dout, inp, W, N, C, OC))                                                                  \
    /* ---- RMSNorm without weight over the last dim: out = x * rstd, rstd (N) = 1/sqrt(mean(x^2) + eps)              \
       (also QK-norm: rows are (token, head) pairs of length HD) ---- */                                              \
    X(rmsnorm_fwd, (gm_actval *out, gm_real * rstd, const gm_actval *inp, int N, int C, double eps),                      \
      (out, rstd, inp, N, C, eps))                                                                                     \
    X(rmsnorm_bwd,                                                                                                     \
      (gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout, const gm_actval *inp, const gm_real *rstd, int N,  \
       int C),                                                                                                         \
      (dinp, dinp_write, dout, inp, rstd, N, C))                                                                       \
    /* ---- rotary, half-split layout, on (B, T, NH, HD); cos/sin tables (T, HD/2):                                   \
       y1 = x1 cos + x2 sin ; y2 = -x1 sin + x2 cos, with x1 = x[:HD/2], x2 = x[HD/2:]. inp (forward) and dinp          \
       (backward) are views with ld elements from one token to the next (ld >= NH HD: a third of a fused q/k          \
       projection's rows); out and dout are (B, T, NH, HD) of their own. ---- */                                      \
    X(rotary_fwd,                                                                                                      \
      (gm_actval *out, const gm_actval *inp, const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD,    \
       int ld),                                                                                                        \
      (out, inp, cos_t, sin_t, B, T, NH, HD, ld))                                                                      \
    X(rotary_bwd,                                                                                                      \
      (gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout, const gm_real *cos_t, const gm_real *sin_t,      \
       int B, int T, int NH, int HD, int ld),                                                                          \
      (dinp, dinp_write, dout, cos_t, sin_t, B, T, NH, HD, ld))                                                        \
    /* ---- QK-norm then rotary, fused: out = rotary(rmsnorm(inp)) per head row of (B, T, NH, HD), rstd (B*T*NH)       \
       kept (HD even); the composition of rmsnorm_fwd and rotary_fwd (the normed tensor is never stored), value for    \
       value on the CPU backends; the CUDA kernels sum each row in their own order (equal to fp32 rounding).           \
       The backward is rotary_bwd then rmsnorm_bwd, dinp written as dinp_write says. inp and dinp with token           \
       stride ld, as in rotary. ---- */                                                                               \
    X(qknorm_rotary_fwd,                                                                                               \
      (gm_actval *out, gm_real * rstd, const gm_actval *inp, const gm_real *cos_t, const gm_real *sin_t, int B, int T,    \
       int NH, int HD, int ld, double eps),                                                                            \
      (out, rstd, inp, cos_t, sin_t, B, T, NH, HD, ld, eps))                                                           \
    X(qknorm_rotary_bwd,                                                                                               \
      (gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout, const gm_actval *inp, const gm_real *rstd,         \
       const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, int ld),                              \
      (dinp, dinp_write, dout, inp, rstd, cos_t, sin_t, B, T, NH, HD, ld))                                             \
    /* ---- masked softmax attention, q/k/v/out (B, T, NH, HD); lse (B, NH, T) log-sum-exp of the                     \
       scaled scores, kept for the backward (which recomputes probabilities, never stores T x T) ---- */              \
    X(attn_fwd,                                                                                                        \
      (gm_actval *out, gm_real * lse, const gm_actval *q, const gm_actval *k, const gm_actval *v, int B, int T, int NH,       \
       int HD, double scale, gm_attn_mask mask),                                                                       \
      (out, lse, q, k, v, B, T, NH, HD, scale, mask))                                                                  \
    /* (dq, dk, dv written as dqkv_write says, all three alike) */                                                   \
    X(attn_bwd,                                                                                                        \
      (gm_actval *dq, gm_actval *dk, gm_actval *dv, gm_grad_write dqkv_write, const gm_actval *dout, const gm_actval *q,      \
       const gm_actval *k, const gm_actval *v, const gm_actval *out, const gm_real *lse, int B, int T, int NH, int HD,        \
       double scale, gm_attn_mask mask),                                                                               \
      (dq, dk, dv, dqkv_write, dout, q, k, v, out, lse, B, T, NH, HD, scale, mask))                                    \
    /* ---- MLP activation, elementwise over n ---- */                                                                 \
    X(act_fwd, (gm_act act, gm_actval *out, const gm_actval *inp, size_t n), (act, out, inp, n))                          \
    X(act_bwd, (gm_act act, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout, const gm_actval *inp, size_t n), \
      (act, dinp, dinp_write, dout, inp, n))                                                                           \
    /* ---- linear combination of two tensors with constant and optional learnable coefficients:                     \
       out = ca*a*x + cb*b*y, where a = *pa (1 when pa is NULL), b = *pb (1 when pb is NULL), y may                   \
       be NULL (term absent). The coefficients are rounded to gm_real once: (gm_real)(ca*a).                          \
       Residual adds, branch scales, x0 lambdas, value mixing, U-net skips. x (and in the backward dx) may be a view:  \
       element i at gm_lincomb_x_at(i, x_cols, x_ld) = (i / x_cols) x_ld + i % x_cols (x_ld = x_cols: contiguous;    \
       v as a third of a fused q/k/v projection's rows: x_cols C, x_ld 3C). ---- */                                   \
    X(lincomb_fwd,                                                                                                     \
      (gm_actval *out, double ca, const gm_real *pa, const gm_actval *x, double cb, const gm_real *pb, const gm_actval *y,  \
       size_t n, int x_cols, int x_ld),                                                                                \
      (out, ca, pa, x, cb, pb, y, n, x_cols, x_ld))                                                                    \
    /* ---- a residual add or mix, then RMSNorm of it, fused: sum = lincomb_fwd(ca, pa, x, cb, pb, y) over (N, C),      \
       then out = rmsnorm(sum), rstd (N) = its 1/rms per row: the composition of lincomb_fwd and rmsnorm_fwd, value   \
       for value where activations are gm_real (sum is stored: the backward reads it); a narrower element norms the    \
       sum before its store rounds it (sum and out each rounded once). ---- */                                        \
    X(lincomb_rmsnorm_fwd,                                                                                             \
      (gm_actval *sum, gm_actval *out, gm_real * rstd, double ca, const gm_real *pa, const gm_actval *x, double cb,        \
       const gm_real *pb, const gm_actval *y, int N, int C, double eps),                                                 \
      (sum, out, rstd, ca, pa, x, cb, pb, y, N, C, eps))                                                               \
    /* dx (+)= ca*a*dout ; dy (+)= cb*b*dout ; *dpa += ca*sum(dout*x) ; *dpb += cb*sum(dout*y).                       \
       Any gradient pointer may be NULL. Sums are reduced in a fixed order (deterministic) and read dout               \
       before dx is written: dx may be dout itself (an in-place scaling), and dx and dy may be one buffer              \
       (dx's write first, then dy's, element by element), both only where x is contiguous. dx and x: the same view. */ \
    X(lincomb_bwd,                                                                                                     \
      (gm_actval *dx, gm_grad_write dx_write, gm_actval *dy, gm_grad_write dy_write, gm_real * dpa, gm_real * dpb,       \
       const gm_actval *dout, double ca, const gm_real *pa, const gm_actval *x, double cb, const gm_real *pb,              \
       const gm_actval *y, size_t n, int x_cols, int x_ld),                                                            \
      (dx, dx_write, dy, dy_write, dpa, dpb, dout, ca, pa, x, cb, pb, y, n, x_cols, x_ld))                             \
    /* ---- logits (N, V) -> optional softcap z = cap*tanh(l/cap) (cap <= 0: none) -> cross-entropy.                  \
       losses (N) per row. When dlogits is not NULL it receives dloss/dlogits for                                     \
       loss = dloss_scale * sum(losses) (e.g. 1/N for the mean), computed in the same pass from the                   \
       row's max and sum; dlogits may alias logits (then logits are overwritten). ---- */                             \
    X(xent_fwd_bwd,                                                                                                    \
      (gm_real * losses, gm_actval *dlogits, const gm_actval *logits, const int32_t *targets, int N, int V, double cap,   \
       double dloss_scale),                                                                                            \
      (losses, dlogits, logits, targets, N, V, cap, dloss_scale))                                                      \
    /* ---- Adam/AdamW over `count` tensors (gm_adam_span) with the same scalars (optim/adam.h for the                \
       formula): each tensor's norm for normalize_grad in fp64 in a fixed order, then elementwise p, m, v.            \
       A backend may run the tensors in any order or concurrently: each result depends on its own                     \
       tensor only. ---- */                                                                                           \
    X(adam_update,                                                                                                    \
      (gm_real * p, const gm_real *g, gm_real *m, gm_real *v, int count, const gm_adam_span *spans,                   \
       const gm_adam_args *a),                                                                                        \
      (p, g, m, v, count, spans, a))                                                                                  \
    /* ---- momentum: buf = mu*buf + gmul*g; then, when u is not NULL, u = nesterov ? gmul*g + mu*buf : buf           \
       (buf after its update). mu and gmul are rounded to gm_real once. ---- */                                       \
    X(momentum, (gm_real * buf, gm_real * u, const gm_real *g, size_t n, double mu, double gmul, int nesterov),        \
      (buf, u, g, n, mu, gmul, nesterov))                                                                              \
    /* ---- NorMuon (record #43, 2025-11-10_CautiousWD), in place on one orthogonalized update V (rows, cols):        \
       per line l (a row when by_row, else a column) s_l = sum of V^2 over the line (fp64, index order),             \
       v2[l] = lerp(v2[l], s_l / len, 1 - beta2) (an EMA in gm_real, no bias correction), V *= 1/sqrt(max(v2[l],     \
       1e-10)) along the line; then V *= ||V_before|| / max(||V_after||, 1e-10), both Frobenius norms the fp64       \
       sums of the lines' sums in line order. v2 has rows (by_row) or cols values. ---- */                           \
    X(normuon, (gm_real * V, gm_real * v2, int rows, int cols, int by_row, double beta2),                             \
      (V, v2, rows, cols, by_row, beta2))                                                                              \
    /* ---- the decoupled-weight-decay update of record #43: p = p - lr * (u + wd * mask * p), mask = 1, or           \
       (u * p >= 0) elementwise when cautious. lr and wd are rounded to gm_real once. ---- */                        \
    X(muon_update, (gm_real * p, const gm_real *u, size_t n, double lr, double wd, int cautious),                     \
      (p, u, n, lr, wd, cautious))                                                                                     \
    /* ---- orthogonalize `count` independent matrices (gm_ortho_item); a backend may run them in any                  \
       order or concurrently, each result independent of the others. Non-finite input is an error                     \
       (reported by sync, naming the item); that item's output is then unspecified. ---- */                          \
    X(orthogonalize, (const gm_ortho *cfg, int count, const gm_ortho_item *items), (cfg, count, items))

typedef struct gm_backend gm_backend;
struct gm_backend {
    const char *name;
    void *ctx;         // backend state (streams, handles); NULL for the CPU
    int host_visible;  // 1: backend pointers are host memory (the CPU backend)
    size_t act_size;   // bytes of a gm_actval

    // ---- memory (bytes; pointers are backend memory) ----
    void *(*alloc)(const gm_backend *be, size_t bytes);  // zeroed; NULL + gm_fail on failure
    void (*free)(const gm_backend *be, void *p);
    // Host <-> backend copies; they return when the host buffer may be reused (upload) or read
    // (download), so they order after every kernel called before them.
    void (*upload)(const gm_backend *be, void *dst, const void *host_src, size_t bytes);
    void (*download)(const gm_backend *be, void *host_dst, const void *src, size_t bytes);
    // Wait for every queued kernel; 0, or -1 + gm_fail with the first error recorded since the
    // previous sync (a backend whose device faulted keeps failing).
    int (*sync)(const gm_backend *be);

#define GM_BACKEND_FIELD(name, params, args) void (*name)(const gm_backend *be, GM_UNPACK params);
    GM_BACKEND_KERNELS(GM_BACKEND_FIELD)
#undef GM_BACKEND_FIELD
};

// Element i of the activation tensor p of backend be (NULL stays NULL).
static inline gm_actval *gm_act_at(const gm_backend *be, gm_actval *p, size_t i) {
    return p ? (gm_actval *)((char *)p + i * be->act_size) : NULL;
}

#ifndef __cplusplus
// The CPU backends store activations as gm_real (act_size == sizeof(gm_real)): their kernels, and
// host code calling a CPU backend directly (tests), view them so. _Generic admits only the one
// pointer type each way, keeping const.
#define gm_as_real(p) _Generic((p), gm_actval *: (gm_real *)(p), const gm_actval *: (const gm_real *)(p))
#define gm_as_act(p) _Generic((p), gm_real *: (gm_actval *)(p), const gm_real *: (const gm_actval *)(p))
#endif

#ifdef __cplusplus
}
#endif
#endif
