// The GPT of every preset, forward and backward written once over backend.h, in planned memory.
// Parameters: one backend buffer described by a gm_table. The memory of a (B, T) step, as llm.c
// plans it:
//   acts     the activations the backward reads, per layer (named h.<l>.<tensor>);
//   scratch  forward intermediates the backward does not read (or, with recompute on, recomputes
//            from the stream: the norms' outputs, q/k after QK-norm and rotary, the value mix, the
//            MLP activation), one set reused by every layer; with recompute off those are kept
//            per layer instead, which costs memory and saves the backward ~23 elementwise passes;
//   head     the logits of one chunk of rows (head_rows x Vp), overwritten by their gradient:
//            logits are never stored whole;
//   stats    per-row statistics: the norms' rstd and attention's lse the backward reads, and the
//            per-row losses;
//   dacts    activation gradients: one set of per-layer buffers reused layer after layer, then
//            those that live across layers (the residual stream's, x0's, the value embeddings',
//            the U-net skip sources'). Each is set by its first writer and added to by later
//            ones (gm_grad_write), so nothing is zeroed before a backward.
// Training runs forward and backward as one call that knows dloss up front, so each chunk's
// logits go to loss and dlogits in one pass and the head's backward at once. Parameter and
// activation gradients are allocated only when a training step is first asked for, so
// validation allocates no gradient memory. gm_model_plan gives every category's bytes without
// allocating: the same layout code sizes both. Activations, scratch, head and their gradients are
// in the backend's activation element (be->act_size bytes: bf16 on CUDA); parameters, their
// gradients and the statistics are gm_real.
#ifndef GM_MODEL_MODEL_H
#define GM_MODEL_MODEL_H

#include <stdint.h>

#include "backend/backend.h"
#include "model/config.h"
#include "model/params.h"
#include "model/table.h"

// Rows of the logits chunk unless gm_model_set_head_rows says otherwise (train's --head_rows=0, auto,
// takes all of a micro-batch's rows where they fit, this where they do not): at full scale 8192 x
// 50304 fp32 logits are 1.65 GB instead of 13.2 GB for the 65,536 rows of a record step.
enum { GM_HEAD_ROWS = 8192 };

// Where an activation lives: the kept table (acts), the shared scratch table, the head table (all
// three in the backend's activation element, gm_actval), the per-row statistics (rstd, lse, the
// losses: gm_real), or nowhere (the configuration skips the step).
typedef enum { GM_AT_NONE = 0, GM_AT_KEPT, GM_AT_SCRATCH, GM_AT_HEAD, GM_AT_STATS } gm_act_home;
typedef struct {
    gm_act_home home;
    int view;  // index in that table
} gm_slot;

// The activations of one block. Kept: what the backward reads (stream tensors normed or mixed,
// q, k, v, attention output and lse, the MLP pre-activation). Scratch: ln1, ln2, vmix, qr, kr, act
// (with recompute on: recomputed by the backward from kept tensors; kept per layer without it),
// and the block output when the backward does not read it either. The output projections write
// the stream itself (the residual added in the GEMM's epilogue): no projection output is stored.
typedef struct {
    gm_slot skip_out;                  // (N, C) x + w * encoder output (U-net decoder layers)
    gm_slot mix;                       // (N, C) l0 * x + l1 * x0
    gm_slot ln1, ln1_rstd;             // (N, C), (N)
    gm_slot qkv;                       // (N, 3C) each token's q, k, v (one matmul), or (N, 2C) q, k where
    gm_slot v;                         // v is its own (N, C) (no value mix: attention reads it); each (B, T, NH, HD)
    gm_slot qn_rstd, kn_rstd;          // QK-norm: (N * NH) (the normed q, k go straight into rotary)
    gm_slot vmix;                      // (N, C) a0 * v + a1 * ve
    gm_slot qr, kr;                    // rotated (N, C)
    gm_slot att, lse;                  // (N, C), (B, NH, T)
    gm_slot res_attn;                  // (N, C) x + s * att W_proj^T
    gm_slot ln2, ln2_rstd;             // (N, C), (N)
    gm_slot fc, act;                   // (N, H) pre- and post-activation
    gm_slot res_mlp;                   // (N, C) the block's output: res_attn + act W_mlp_proj^T
} gm_layer_acts;

typedef struct {
    gm_slot emb;                      // (N, C) embedding rows
    gm_slot x0, x0_rstd;              // (N, C), (N) after the embedding norm (x0 == emb without it)
    gm_slot ve[GM_MAX_VALUE_EMBEDS];  // (N, C) value-embedding rows
    gm_slot lnf, lnf_rstd;            // (N, C), (N)
    gm_slot logits;                   // (head_rows, Vp) one chunk; its gradient in place
    gm_slot losses;                   // (N)
    gm_layer_acts layer[GM_MAX_LAYERS];
} gm_act_index;

// Views of the activation-gradient table; -1 where the configuration has none. The per-layer
// ones are the front of the buffer (layer_numel elements), reused by each block's backward.
// A residual add (y = x + f, coefficient 1) passes its gradient on unchanged, so the gradients of
// a block's output, its working input and its stream after attention are one buffer (`resid`, or
// a skip source's `out`), to which each branch's input-gradient adds.
typedef struct {
    // per layer: the gradients of a block's internal tensors (names "d.<tensor>"); ao only with a
    // branch scale other than 1
    int act, fc, ln2, ao, att, qr, kr, vs, qkv, v, ln1;  // qkv and v as the activations
    size_t layer_numel;
    // across layers
    int resid;                    // (N, C) the residual stream's gradient, block after block
    int out[GM_MAX_LAYERS];       // (N, C) gradient of a U-net skip source's output
    int x0, emb;                  // (N, C) (x0: its own buffer only when every block mixes x0 in;
                                  // else the first block's stream gradient; emb: with the embedding norm)
    int ve[GM_MAX_VALUE_EMBEDS];  // (N, C)
    int lnf;                      // (N, C) the final norm's output
} gm_grad_index;

// Bytes of each category of a (B, T) training step (gm_model_plan), as allocated.
typedef struct {
    size_t params, grads;        // parameters; their gradients
    size_t acts;                 // activations and per-row statistics kept for the backward
    size_t scratch;              // per-layer forward intermediates (recomputed where the backward needs them)
    size_t head;                 // logits chunk (head_rows x Vp) and per-row losses
    size_t inputs;               // ids, targets, document ids, rotary tables
    size_t act_grads_layer;      // activation gradients reused layer after layer
    size_t act_grads_across;     // activation gradients that live across layers
} gm_model_mem;

typedef struct {
    gm_config cfg;
    const gm_backend *be;
    gm_table params;
    gm_param_index pix;
    gm_real *p;  // (params.total) backend memory
    gm_real *g;  // (params.total) gradients; NULL until the first training step

    int B, T;       // shape the activations are laid out for
    int head_rows;  // rows of the logits chunk
    int recompute;  // 1: the backward recomputes the blocks' elementwise inputs (the default); 0: keeps them
    gm_table acts, scratch, head, stats, dacts;
    gm_act_index aix;
    gm_grad_index gix;
    gm_actval *a, *s, *h;          // kept activations, scratch, head chunk (backend memory)
    gm_real *st;                   // per-row statistics: rstd, lse, losses (backend memory)
    gm_actval *da;                 // activation gradients (NULL until the first training step)
    int32_t *ids, *targets, *doc;  // (B, T) backend memory; doc only with the document mask
    gm_real *cos_t, *sin_t;        // (T, HD/2) rotary tables
    int window_blocks;             // sliding window now (blocks); 0: none
    double loss;                   // mean loss of the last forward
} gm_model;

// Build the parameter table and allocate the parameters (initialised with gm_model_init).
int gm_model_create(gm_model *m, const gm_config *cfg, const gm_backend *be);
void gm_model_free(gm_model *m);
int gm_model_init(gm_model *m, uint64_t seed, gm_init_mode mode);
// Window size (blocks) the next forward uses; a schedule calls it every step.
void gm_model_set_window(gm_model *m, int window_blocks);
// Rows per logits chunk (>= 1; GM_HEAD_ROWS by default). The next step lays memory out anew.
void gm_model_set_head_rows(gm_model *m, int rows);
// Recompute in the backward (1, the default) or keep every block's inputs (0): the same values bit
// for bit either way (the recomputing kernels are deterministic). The next step lays memory out anew.
void gm_model_set_recompute(gm_model *m, int recompute);
// Evaluation: forward of ids/targets (B, T) host arrays; returns the mean cross-entropy (also in
// m->loss), or NAN with gm_fail on error (bad token id, allocation, a backend error). Allocates
// no gradient memory.
double gm_model_forward(gm_model *m, const int32_t *ids, const int32_t *targets, int B, int T);
// Training: the forward, the loss and its gradient chunk by chunk, then the backward, ADDING
// dloss * d(mean loss)/d(params) into m->g (allocated zeroed on first use), so micro-batches
// accumulate (dloss = 1/k for k micro-batches). Returns the mean loss as gm_model_forward does
// (NAN with gm_fail on error).
double gm_model_forward_backward(gm_model *m, const int32_t *ids, const int32_t *targets, int B, int T, double dloss);
void gm_model_zero_grad(gm_model *m);
// Bytes of every category a training step of cfg at (B, T) with head_rows-row logits chunks,
// recompute on or off and act_size-byte activation elements (be->act_size) allocates, without
// allocating. -1 (gm_fail) on a bad configuration.
int gm_model_plan(const gm_config *cfg, int B, int T, int head_rows, int recompute, size_t act_size,
                  gm_model_mem *out);
// Pointer to tensor `i` of the parameter (or gradient) buffer.
static inline gm_real *gm_param(const gm_model *m, int i) { return i < 0 ? NULL : m->p + m->params.v[i].offset; }
static inline gm_real *gm_grad(const gm_model *m, int i) {
    return i < 0 || !m->g ? NULL : m->g + m->params.v[i].offset;
}
// Pointer to an activation (NULL where the configuration has none), or to a per-row statistic.
gm_actval *gm_model_act(const gm_model *m, gm_slot s);
gm_real *gm_model_stat(const gm_model *m, gm_slot s);

#endif
