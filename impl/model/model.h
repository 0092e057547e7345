// The GPT of every preset, forward and backward written once over backend.h.
// Parameters: one backend buffer described by a gm_table. Activations of a (B, T) batch: a second
// buffer described by another table; their gradients (and the parameter gradients) are allocated
// only when a backward pass is first asked for, so validation allocates no gradient memory.
#ifndef GM_MODEL_MODEL_H
#define GM_MODEL_MODEL_H

#include <stdint.h>

#include "backend/backend.h"
#include "model/config.h"
#include "model/params.h"
#include "model/table.h"

// Activation-table indices of one block; -1 where the configuration skips the step.
typedef struct {
    int skip_out;                  // (N, C) x + w * encoder output (U-net decoder layers)
    int mix;                       // (N, C) l0 * x + l1 * x0
    int ln1, ln1_rstd;             // (N, C), (N)
    int q, k, v;                   // (N, C) = (B, T, NH, HD)
    int qn, kn, qn_rstd, kn_rstd;  // QK-norm: (N, C), (N * NH)
    int vmix;                      // (N, C) a0 * v + a1 * ve
    int qr, kr;                    // rotated (N, C)
    int att, lse;                  // (N, C), (B, NH, T)
    int ao;                        // (N, C) attention output projection
    int res_attn;                  // (N, C) x + s * ao
    int ln2, ln2_rstd;             // (N, C), (N)
    int fc, actv;                  // (N, H) pre- and post-activation
    int mo;                        // (N, C) MLP output projection
    int res_mlp;                   // (N, C) the block's output
} gm_layer_acts;

typedef struct {
    int emb;                      // (N, C) embedding rows
    int x0, x0_rstd;              // (N, C), (N) after the embedding norm (x0 == emb without it)
    int ve[GM_MAX_VALUE_EMBEDS];  // (N, C) value-embedding rows
    int lnf, lnf_rstd;            // (N, C), (N)
    int logits;                   // (N, Vp)
    int losses;                   // (N)
    gm_layer_acts layer[GM_MAX_LAYERS];
} gm_act_index;

typedef struct {
    gm_config cfg;
    const gm_backend *be;
    gm_table params;
    gm_param_index pix;
    gm_real *p;  // (params.total) backend memory
    gm_real *g;  // (params.total) gradients; NULL until the first backward

    int B, T;  // shape the activations are laid out for
    gm_table acts;
    gm_act_index aix;
    gm_real *a, *da;               // activations, their gradients (NULL until the first backward)
    int32_t *ids, *targets, *doc;  // (B, T) backend memory
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
// Forward of ids/targets (B, T) host arrays; returns the mean cross-entropy (also in m->loss),
// or NAN with gm_fail on error (bad token id, allocation).
double gm_model_forward(gm_model *m, const int32_t *ids, const int32_t *targets, int B, int T);
// Backward of the last forward: ADDS dloss * d(mean loss)/d(params) into m->g (allocated zeroed on
// first use), so micro-batches accumulate (dloss = 1/k for k micro-batches). -1 on failure.
int gm_model_backward(gm_model *m, double dloss);
void gm_model_zero_grad(gm_model *m);
// Pointer to tensor `i` of the parameter (or gradient) buffer.
static inline gm_real *gm_param(const gm_model *m, int i) { return i < 0 ? NULL : m->p + m->params.v[i].offset; }
static inline gm_real *gm_grad(const gm_model *m, int i) {
    return i < 0 || !m->g ? NULL : m->g + m->params.v[i].offset;
}

#endif
