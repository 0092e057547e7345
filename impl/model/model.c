#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/attn_mask.h"
#include "base/error.h"
#include "model/rotary.h"

// ---- parameters ----

int gm_model_create(gm_model *m, const gm_config *cfg, const gm_backend *be) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->be = be;
    m->head_rows = GM_HEAD_ROWS;
    m->recompute = 1;
    if (gm_config_check(cfg) || gm_params_build(cfg, &m->params, &m->pix)) return -1;
    const size_t CC = (size_t)cfg->d_model * cfg->d_model;
    for (int l = 0; l < cfg->n_layer; l++) {  // q, k, v are one matmul: W_q, W_k, W_v adjacent (w_qkv)
        const gm_layer_params *p = &m->pix.layer[l];
        const gm_view *v = m->params.v;
        if (p->c_attn < 0 && p->c_q >= 0 &&
            (v[p->c_k].offset != v[p->c_q].offset + CC || v[p->c_v].offset != v[p->c_k].offset + CC))
            return gm_table_free(&m->params), gm_fail("model: layer %d's c_q, c_k, c_v are not adjacent", l);
    }
    m->p = be->alloc(be, sizeof(gm_real) * m->params.total);
    if (!m->p) return -1;
    m->window_blocks = gm_config_window_blocks(cfg, 0, 1);
    return 0;
}

int gm_model_init(gm_model *m, uint64_t seed, gm_init_mode mode) {
    gm_real *host = malloc(sizeof(gm_real) * m->params.total);
    if (!host) return gm_fail("model init: out of host memory");
    gm_params_init(&m->params, host, seed, mode);
    m->be->upload(m->be, m->p, host, sizeof(gm_real) * m->params.total);
    free(host);
    return 0;
}

static void free_tables(gm_model *m) {
    gm_table_free(&m->acts), gm_table_free(&m->scratch), gm_table_free(&m->head), gm_table_free(&m->stats);
    gm_table_free(&m->dacts);
}

static void free_acts(gm_model *m) {
    const gm_backend *be = m->be;
    be->free(be, m->a), be->free(be, m->s), be->free(be, m->h), be->free(be, m->st), be->free(be, m->da);
    be->free(be, m->ids), be->free(be, m->targets), be->free(be, m->doc);
    be->free(be, m->cos_t), be->free(be, m->sin_t);
    m->a = m->s = m->h = m->da = NULL;
    m->st = m->cos_t = m->sin_t = NULL;
    m->ids = m->targets = m->doc = NULL;
    free_tables(m);
    m->B = m->T = 0;
}

void gm_model_free(gm_model *m) {
    free_acts(m);
    m->be->free(m->be, m->p), m->be->free(m->be, m->g);
    gm_table_free(&m->params);
    memset(m, 0, sizeof *m);
}

void gm_model_set_window(gm_model *m, int window_blocks) { m->window_blocks = window_blocks; }

void gm_model_set_head_rows(gm_model *m, int rows) {
    if (rows == m->head_rows) return;
    free_acts(m);
    m->head_rows = rows;
}

void gm_model_set_recompute(gm_model *m, int recompute) {
    if (!recompute == !m->recompute) return;
    free_acts(m);
    m->recompute = recompute != 0;
}

void gm_model_zero_grad(gm_model *m) {
    if (m->g) m->be->fill(m->be, m->g, 0, m->params.total);
}

// ---- memory layout for (B, T) ----

static int has_skip(const gm_config *c, int l) { return c->unet_skips && l >= c->n_layer / 2; }
static int is_skip_source(const gm_config *c, int l) { return c->unet_skips && l < c->n_layer / 2; }

static double attn_branch_scale(const gm_config *c) {
    return c->branch_scale_depth ? 1.0 / sqrt(2.0 * c->n_layer) : 1.0;
}

// Whether the backward reads block l's output (else it lives in scratch): the final norm reads
// the last one, a U-net decoder layer reads its skip source's (for the skip weight's gradient),
// and a block without a skip reads its input (its x0 mix for l0's gradient, or its first norm).
// A decoder block's input feeds only its skip add, whose backward does not read it.
static int output_read(const gm_config *c, int l) {
    return l == c->n_layer - 1 || is_skip_source(c, l) || !has_skip(c, l + 1);
}

static gm_slot put(gm_table *t, gm_act_home home, const char *fmt, int l, size_t n) {
    char name[48];
    snprintf(name, sizeof name, fmt, l);
    int v = gm_table_add(t, name, (int64_t)n, 1, GM_GROUP_NONE, GM_INIT_NONE, 0, 0);
    return (gm_slot){v < 0 ? GM_AT_NONE : home, v};
}
static int dput(gm_table *t, const char *fmt, int l, size_t n) { return put(t, GM_AT_KEPT, fmt, l, n).view; }
// A block input the backward recomputes, in the one scratch slot `shared` every block uses (laid out
// only with recompute on), or keeps, in a slot of block l's own.
static gm_slot input_slot(gm_table *kept, gm_slot shared, const char *fmt, int l, size_t n) {
    return shared.home ? shared : put(kept, GM_AT_KEPT, fmt, l, n);
}

// Columns of a block's fused projection (ln1 times adjacent rows of W, w_qkv): q and k, and v where
// the value mix is v's one reader (it reads v as a view); else v is a matmul of its own, a tensor
// attention reads.
static int proj_cols(const gm_config *c) { return (c->n_value_embeds > 0 ? 3 : 2) * c->d_model; }

// Lay out the five activation tables of a (B, T) step and their indices; allocates nothing (the
// plan and the allocation both come from here).
static int layout(gm_model *m, int B, int T) {
    const gm_config *c = &m->cfg;
    if (B < 1 || T < 1 || (double)B * T > 2147483647.0 || m->head_rows < 1)
        return gm_fail("model: batch %d x %d tokens (head chunk %d rows) is not a valid shape", B, T, m->head_rows);
    const size_t N = (size_t)B * T, C = c->d_model, H = c->d_mlp, NH = c->n_head, NC = N * C;
    const int L = c->n_layer;
    gm_table *ka = &m->acts, *sc = &m->scratch, *hd = &m->head, *st = &m->stats, *dt = &m->dacts;
    gm_table_init(ka), gm_table_init(sc), gm_table_init(hd), gm_table_init(st), gm_table_init(dt);
    gm_act_index *x = &m->aix;
    memset(x, 0, sizeof *x);  // every slot GM_AT_NONE
    int any_attn = 0, stream_used[2] = {0, 0};
    for (int l = 0; l < L; l++) {
        any_attn |= gm_config_has_attn(c, l);
        if (!output_read(c, l)) stream_used[l % 2] = 1;
    }
    const int vmix = c->n_value_embeds > 0;

    // scratch: one of each, whichever layer runs; the recomputed inputs only with recompute on
    const int rc = m->recompute;
    gm_slot s_ln1 = {0}, s_vmix = {0}, s_qr = {0}, s_kr = {0}, s_stream[2] = {{0}};
    gm_slot s_ln2 = {0}, s_act = {0};
    if (any_attn) {
        if (rc) s_ln1 = put(sc, GM_AT_SCRATCH, "ln1", 0, NC);
        if (rc && vmix) s_vmix = put(sc, GM_AT_SCRATCH, "vmix", 0, NC);
        if (rc) s_qr = put(sc, GM_AT_SCRATCH, "qr", 0, NC), s_kr = put(sc, GM_AT_SCRATCH, "kr", 0, NC);
    }
    if (rc) s_ln2 = put(sc, GM_AT_SCRATCH, "ln2", 0, NC), s_act = put(sc, GM_AT_SCRATCH, "act", 0, N * H);
    for (int i = 0; i < 2; i++)
        if (stream_used[i]) s_stream[i] = put(sc, GM_AT_SCRATCH, "stream.%d", i, NC);
    x->lnf = put(sc, GM_AT_SCRATCH, "lnf", 0, NC);

    // kept for the backward
    x->emb = put(ka, GM_AT_KEPT, "emb", 0, NC);
    if (c->embed_norm) x->x0 = put(ka, GM_AT_KEPT, "x0", 0, NC), x->x0_rstd = put(st, GM_AT_STATS, "x0.rstd", 0, N);
    for (int j = 0; j < c->n_value_embeds; j++) x->ve[j] = put(ka, GM_AT_KEPT, "ve.%d", j, NC);
    for (int l = 0; l < L; l++) {
        gm_layer_acts *a = &x->layer[l];
        if (has_skip(c, l)) a->skip_out = put(ka, GM_AT_KEPT, "h.%d.skip_out", l, NC);
        if (c->x0_lambdas) a->mix = put(ka, GM_AT_KEPT, "h.%d.mix", l, NC);
        if (gm_config_has_attn(c, l)) {
            a->ln1 = input_slot(ka, s_ln1, "h.%d.ln1", l, NC);
            a->ln1_rstd = put(st, GM_AT_STATS, "h.%d.ln1.rstd", l, N);
            a->qkv = put(ka, GM_AT_KEPT, "h.%d.qkv", l, N * proj_cols(c));
            if (!vmix) a->v = put(ka, GM_AT_KEPT, "h.%d.v", l, NC);
            if (c->qk_norm) {
                a->qn_rstd = put(st, GM_AT_STATS, "h.%d.qn.rstd", l, N * NH);
                a->kn_rstd = put(st, GM_AT_STATS, "h.%d.kn.rstd", l, N * NH);
            }
            if (vmix) a->vmix = input_slot(ka, s_vmix, "h.%d.vmix", l, NC);
            a->qr = input_slot(ka, s_qr, "h.%d.qr", l, NC), a->kr = input_slot(ka, s_kr, "h.%d.kr", l, NC);
            a->att = put(ka, GM_AT_KEPT, "h.%d.att", l, NC), a->lse = put(st, GM_AT_STATS, "h.%d.lse", l, N * NH);
            a->res_attn = put(ka, GM_AT_KEPT, "h.%d.res_attn", l, NC);
        }
        a->ln2 = input_slot(ka, s_ln2, "h.%d.ln2", l, NC);
        a->ln2_rstd = put(st, GM_AT_STATS, "h.%d.ln2.rstd", l, N);
        a->fc = put(ka, GM_AT_KEPT, "h.%d.fc", l, N * H);
        a->act = input_slot(ka, s_act, "h.%d.act", l, N * H);
        a->res_mlp = output_read(c, l) ? put(ka, GM_AT_KEPT, "h.%d.res_mlp", l, NC) : s_stream[l % 2];
    }
    x->lnf_rstd = put(st, GM_AT_STATS, "lnf.rstd", 0, N);

    // head chunk (no larger than the batch)
    const size_t rows = N < (size_t)m->head_rows ? N : (size_t)m->head_rows;
    x->logits = put(hd, GM_AT_HEAD, "logits", 0, rows * c->vocab_padded);
    x->losses = put(st, GM_AT_STATS, "losses", 0, N);

    // activation gradients: the per-layer ones first, then those across layers
    gm_grad_index *g = &m->gix;
    memset(g, -1, sizeof *g);
    g->act = dput(dt, "d.act", 0, N * H), g->fc = dput(dt, "d.fc", 0, N * H);
    g->ln2 = dput(dt, "d.ln2", 0, NC);
    if (any_attn) {
        if (attn_branch_scale(c) != 1) g->ao = dput(dt, "d.ao", 0, NC);
        g->att = dput(dt, "d.att", 0, NC), g->qr = dput(dt, "d.qr", 0, NC), g->kr = dput(dt, "d.kr", 0, NC);
        if (vmix) g->vs = dput(dt, "d.vmix", 0, NC);
        g->qkv = dput(dt, "d.qkv", 0, N * proj_cols(c));
        if (!vmix) g->v = dput(dt, "d.v", 0, NC);
        g->ln1 = dput(dt, "d.ln1", 0, NC);
    }
    g->layer_numel = dt->total;
    g->resid = dput(dt, "d.resid", 0, NC);
    for (int l = 0; l < L; l++)
        if (is_skip_source(c, l)) g->out[l] = dput(dt, "d.h.%d.res_mlp", l, NC);
    if (c->x0_lambdas) g->x0 = dput(dt, "d.x0", 0, NC);
    if (c->embed_norm) g->emb = dput(dt, "d.emb", 0, NC);
    for (int j = 0; j < c->n_value_embeds; j++) g->ve[j] = dput(dt, "d.ve.%d", j, NC);
    g->lnf = dput(dt, "d.lnf", 0, NC);
    if (ka->failed || sc->failed || hd->failed || st->failed || dt->failed) return free_tables(m), -1;
    m->B = B, m->T = T;
    return 0;
}

static size_t input_bytes(const gm_config *c, int B, int T) {
    size_t N = (size_t)B * T;
    return sizeof(int32_t) * N * (c->doc_mask ? 3 : 2) + 2 * sizeof(gm_real) * T * (size_t)(c->head_dim / 2);
}

// Bytes of each category with act_size-byte activation elements (the statistics with the category of
// their tensors: the losses with the head, the rest with the kept activations).
static void mem_of(const gm_model *m, size_t act_size, gm_model_mem *out) {
    const size_t R = sizeof(gm_real), E = act_size, losses = (size_t)m->stats.v[m->aix.losses.view].numel;
    out->params = out->grads = R * m->params.total;
    out->acts = E * m->acts.total + R * (m->stats.total - losses);
    out->scratch = E * m->scratch.total;
    out->head = E * m->head.total + R * losses;
    out->inputs = input_bytes(&m->cfg, m->B, m->T);
    out->act_grads_layer = E * m->gix.layer_numel;
    out->act_grads_across = E * (m->dacts.total - m->gix.layer_numel);
}

int gm_model_plan(const gm_config *cfg, int B, int T, int head_rows, int recompute, size_t act_size,
                  gm_model_mem *out) {
    gm_model m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg;
    m.head_rows = head_rows;
    m.recompute = recompute != 0;
    int rc = gm_config_check(cfg) || gm_params_build(cfg, &m.params, &m.pix) || layout(&m, B, T) ? -1 : 0;
    if (rc == 0) mem_of(&m, act_size, out);
    free_tables(&m);
    gm_table_free(&m.params);
    return rc;
}

// Lay out and allocate the activations of (B, T) and upload the rotary tables. The activation
// gradients wait for the first training step.
static int alloc_acts(gm_model *m, int B, int T) {
    const gm_config *c = &m->cfg;
    if (layout(m, B, T)) return -1;
    const gm_backend *be = m->be;
    size_t N = (size_t)B * T, half = (size_t)c->head_dim / 2;
    m->a = be->alloc(be, be->act_size * m->acts.total);
    m->s = be->alloc(be, be->act_size * m->scratch.total);
    m->h = be->alloc(be, be->act_size * m->head.total);
    m->st = be->alloc(be, sizeof(gm_real) * m->stats.total);
    m->ids = be->alloc(be, sizeof(int32_t) * N), m->targets = be->alloc(be, sizeof(int32_t) * N);
    if (c->doc_mask) m->doc = be->alloc(be, sizeof(int32_t) * N);
    m->cos_t = be->alloc(be, sizeof(gm_real) * T * half), m->sin_t = be->alloc(be, sizeof(gm_real) * T * half);
    if (!m->a || !m->s || !m->h || !m->st || !m->ids || !m->targets || (c->doc_mask && !m->doc) || !m->cos_t || !m->sin_t)
        return free_acts(m), -1;
    gm_real *ct = malloc(sizeof(gm_real) * T * half), *st = malloc(sizeof(gm_real) * T * half);
    if (!ct || !st) return free(ct), free(st), free_acts(m), gm_fail("model: out of host memory");
    gm_rotary_tables(c, T, ct, st);
    be->upload(be, m->cos_t, ct, sizeof(gm_real) * T * half);
    be->upload(be, m->sin_t, st, sizeof(gm_real) * T * half);
    free(ct), free(st);
    return 0;
}

// ---- views ----

gm_actval *gm_model_act(const gm_model *m, gm_slot s) {
    switch (s.home) {
    case GM_AT_KEPT: return gm_act_at(m->be, m->a, m->acts.v[s.view].offset);
    case GM_AT_SCRATCH: return gm_act_at(m->be, m->s, m->scratch.v[s.view].offset);
    case GM_AT_HEAD: return gm_act_at(m->be, m->h, m->head.v[s.view].offset);
    default: return NULL;
    }
}
gm_real *gm_model_stat(const gm_model *m, gm_slot s) {
    return s.home == GM_AT_STATS ? m->st + m->stats.v[s.view].offset : NULL;
}
static inline gm_actval *A(const gm_model *m, gm_slot s) { return gm_model_act(m, s); }
static inline gm_real *S(const gm_model *m, gm_slot s) { return gm_model_stat(m, s); }
static inline gm_actval *D(const gm_model *m, int i) {
    return i < 0 ? NULL : gm_act_at(m->be, m->da, m->dacts.v[i].offset);
}
static inline gm_real *P(const gm_model *m, int i) { return gm_param(m, i); }
static inline gm_real *G(const gm_model *m, int i) { return gm_grad(m, i); }

// The weights of q, k, v: rows of the fused c_attn, or the separate matrices. Either way W_q, W_k and
// W_v are adjacent (C, C) blocks (params.c adds c_q, c_k, c_v one after the other, and C * C is a
// multiple of the table's alignment; gm_model_create checks it), so q, k (and v) are one matmul.
static const gm_real *w_qkv(const gm_model *m, int l, int which) {
    const gm_layer_params *p = &m->pix.layer[l];
    if (p->c_attn >= 0) return P(m, p->c_attn) + (size_t)which * m->cfg.d_model * m->cfg.d_model;
    return P(m, which == 0 ? p->c_q : which == 1 ? p->c_k : p->c_v);
}
static gm_real *g_qkv(const gm_model *m, int l, int which) {
    const gm_layer_params *p = &m->pix.layer[l];
    if (p->c_attn >= 0) return G(m, p->c_attn) + (size_t)which * m->cfg.d_model * m->cfg.d_model;
    return G(m, which == 0 ? p->c_q : which == 1 ? p->c_k : p->c_v);
}

// The residual stream entering layer l, and after its U-net skip and x0 mixing.
typedef struct {
    gm_actval *in;    // previous block's output (x0 for layer 0)
    gm_actval *skip;  // encoder output added by the U-net (NULL if none)
    gm_actval *xs;    // after the skip add (== in without one)
    gm_actval *xm;    // after the x0 mix (== xs without one): the block's working input
    gm_actval *xa;    // entering the MLP: after the attention residual (== xm without attention)
} layer_io;

static gm_actval *x0_of(const gm_model *m) { return A(m, m->cfg.embed_norm ? m->aix.x0 : m->aix.emb); }

static layer_io io_of(const gm_model *m, int l) {
    const gm_config *c = &m->cfg;
    const gm_layer_acts *a = &m->aix.layer[l];
    layer_io io;
    io.in = l == 0 ? x0_of(m) : A(m, m->aix.layer[l - 1].res_mlp);
    io.skip = has_skip(c, l) ? A(m, m->aix.layer[c->n_layer - 1 - l].res_mlp) : NULL;
    io.xs = has_skip(c, l) ? A(m, a->skip_out) : io.in;
    io.xm = c->x0_lambdas ? A(m, a->mix) : io.xs;
    io.xa = gm_config_has_attn(c, l) ? A(m, a->res_attn) : io.xm;
    return io;
}

// The gradient of block l's output, which the residual adds pass on unchanged as the gradient of
// its xa and xm (the MLP's and attention's input-gradients add into it): a skip source's own
// buffer (the decoder's skip writes into it first), else the one residual-stream buffer.
static gm_actval *d_stream(const gm_model *m, int l) {
    return is_skip_source(&m->cfg, l) ? D(m, m->gix.out[l]) : D(m, m->gix.resid);
}
// x0's gradient: its own buffer when every block mixes x0 in, else the first block's stream.
static gm_actval *d_x0(const gm_model *m) { return m->gix.x0 >= 0 ? D(m, m->gix.x0) : d_stream(m, 0); }
// The gradient of block l's input (the previous block's output, or x0).
static gm_actval *d_block_in(const gm_model *m, int l) { return l == 0 ? d_x0(m) : d_stream(m, l - 1); }

// The across-layer gradient buffers one backward has written so far: the first writer of each
// sets it, every later one adds (a U-net skip source's, x0's and the value embeddings' collect
// several contributions).
typedef struct {
    const gm_actval *written[GM_MAX_LAYERS + GM_MAX_VALUE_EMBEDS + 2];
    int n;
} grad_marks;

static gm_grad_write first_sets(grad_marks *marks, const gm_actval *p) {
    for (int i = 0; i < marks->n; i++)
        if (marks->written[i] == p) return GM_GRAD_ADD;
    marks->written[marks->n++] = p;
    return GM_GRAD_SET;
}

static int skip_index(const gm_model *m, int l) { return l - m->cfg.n_layer / 2; }

static gm_attn_mask mask_of(const gm_model *m) {
    return (gm_attn_mask){m->cfg.doc_mask ? m->doc : NULL, m->cfg.attn_block > 0 ? m->cfg.attn_block : 128,
                          m->window_blocks};
}

// Value-embedding input of layer l's value mix (NULL: the layer has none), and its gradient.
static gm_actval *ve_of(const gm_model *m, int l) {
    int j = gm_config_ve_of_layer(&m->cfg, l);
    return j < 0 ? NULL : A(m, m->aix.ve[j]);
}
static gm_actval *dve_of(const gm_model *m, int l) {
    int j = gm_config_ve_of_layer(&m->cfg, l);
    return j < 0 ? NULL : D(m, m->gix.ve[j]);
}

// v, and its gradient: the view in the fused projection (proj_cols), or a tensor of its own.
static gm_actval *v_of(const gm_model *m, const gm_layer_acts *a) {
    return a->v.home ? A(m, a->v) : gm_act_at(m->be, A(m, a->qkv), (size_t)2 * m->cfg.d_model);
}
static gm_actval *dv_of(const gm_model *m, const gm_layer_acts *a) {
    return a->v.home ? D(m, m->gix.v) : gm_act_at(m->be, D(m, m->gix.qkv), (size_t)2 * m->cfg.d_model);
}

// The values attention reads: the value mix when value embeddings exist, else v.
static gm_actval *vs_of(const gm_model *m, const gm_layer_acts *a) {
    return a->vmix.home ? A(m, a->vmix) : v_of(m, a);
}

// ---- forward ----

// An RMSNorm of the stream: where it writes (out, rstd); out NULL: none.
typedef struct {
    gm_actval *out;
    gm_real *rstd;
} stream_norm;

// Block l's first norm (ln1, or ln2 in a block without attention), and after the last block the
// final norm: each is fused with the stream op just before it (lincomb_rmsnorm_fwd).
static stream_norm first_norm(const gm_model *m, int l) {
    if (l == m->cfg.n_layer) return (stream_norm){A(m, m->aix.lnf), S(m, m->aix.lnf_rstd)};
    const gm_layer_acts *a = &m->aix.layer[l];
    if (gm_config_has_attn(&m->cfg, l)) return (stream_norm){A(m, a->ln1), S(m, a->ln1_rstd)};
    return (stream_norm){A(m, a->ln2), S(m, a->ln2_rstd)};
}

// sum = ca a x + cb b y over the stream, then (when norm.out) its norm in the same pass.
static void stream_op(const gm_model *m, gm_actval *sum, stream_norm norm, double ca, const gm_real *pa,
                      const gm_actval *x, double cb, const gm_real *pb, const gm_actval *y) {
    const gm_backend *be = m->be;
    const int N = m->B * m->T, C = m->cfg.d_model;
    if (norm.out) be->lincomb_rmsnorm_fwd(be, sum, norm.out, norm.rstd, ca, pa, x, cb, pb, y, N, C, m->cfg.norm_eps);
    else be->lincomb_fwd(be, sum, ca, pa, x, cb, pb, y, (size_t)N * C, C, C);
}

// Layer l's attention inputs: ln1 = norm(xm) (in the forward, fused with the op that made xm),
// then (first pass only) q, k, v = ln1 W^T, then QK-norm and rotary (one fused pass each for q and
// k), and the value mix. With m->recompute the backward calls this again with recompute = 1: ln1,
// qr, kr and vmix cost one elementwise pass each, against 4 (N, C) tensors per layer kept (where
// they are kept without it). Recomputing rewrites the kept rstd vectors with the values they hold
// (the kernels are deterministic, the fused ones the composition of the separate ones), so the
// backward sees bitwise what the forward computed.
static void attn_inputs(const gm_model *m, int l, const layer_io *io, int recompute) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    const gm_layer_acts *a = &m->aix.layer[l];
    const int B = m->B, T = m->T, N = B * T, C = c->d_model, NH = c->n_head, HD = c->head_dim;
    const int QW = proj_cols(c);  // views of qkv (N, QW), token stride QW: q at 0, k at C, v at 2C
    gm_actval *q = A(m, a->qkv), *k = gm_act_at(be, q, (size_t)C), *v = v_of(m, a);
    if (recompute) {
        be->rmsnorm_fwd(be, A(m, a->ln1), S(m, a->ln1_rstd), io->xm, N, C, c->norm_eps);
    } else {
        be->matmul_fwd(be, q, A(m, a->ln1), w_qkv(m, l, 0), N, C, QW, 1, NULL);  // [q k (v)] = ln1 [W_q; W_k (; W_v)]^T
        if (QW == 2 * C) be->matmul_fwd(be, v, A(m, a->ln1), w_qkv(m, l, 2), N, C, C, 1, NULL);
    }
    if (c->qk_norm) {
        be->qknorm_rotary_fwd(be, A(m, a->qr), S(m, a->qn_rstd), q, m->cos_t, m->sin_t, B, T, NH, HD, QW, c->norm_eps);
        be->qknorm_rotary_fwd(be, A(m, a->kr), S(m, a->kn_rstd), k, m->cos_t, m->sin_t, B, T, NH, HD, QW, c->norm_eps);
    } else {
        be->rotary_fwd(be, A(m, a->qr), q, m->cos_t, m->sin_t, B, T, NH, HD, QW);
        be->rotary_fwd(be, A(m, a->kr), k, m->cos_t, m->sin_t, B, T, NH, HD, QW);
    }
    if (a->vmix.home) {  // v is the view
        gm_real *al = P(m, m->pix.layer[l].attn_lambdas);
        be->lincomb_fwd(be, A(m, a->vmix), 1, al, v, 1, al + 1, ve_of(m, l), (size_t)N * C, C, QW);
    }
}

// Layer l's MLP input: ln2 = norm(xa) (in the forward, fused with the op that made xa), then
// (first pass only) fc = ln2 W^T, then act(fc). With m->recompute the backward recomputes ln2 and
// act (one pass over (N, C) and one over (N, H)) instead of keeping 5 (N, C) per layer.
static void mlp_inputs(const gm_model *m, int l, const layer_io *io, int recompute) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    const gm_layer_acts *a = &m->aix.layer[l];
    const int N = m->B * m->T, C = c->d_model, H = c->d_mlp;
    if (recompute) be->rmsnorm_fwd(be, A(m, a->ln2), S(m, a->ln2_rstd), io->xa, N, C, c->norm_eps);
    else be->matmul_fwd(be, A(m, a->fc), A(m, a->ln2), P(m, m->pix.layer[l].fc), N, C, H, 1, NULL);
    be->act_fwd(be, c->mlp_act, A(m, a->act), A(m, a->fc), (size_t)N * H);
}

// Whether block l's working input xm is made by an op of its own (U-net skip, x0 mix); else it is
// the previous block's output (or x0), and the op that made that carries block l's first norm.
static int makes_its_input(const gm_model *m, int l) {
    return l < m->cfg.n_layer && (has_skip(&m->cfg, l) || m->cfg.x0_lambdas);
}

// The blocks, each norm of the stream in one pass with the add or mix before it.
static void forward_layers(const gm_model *m) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    const int B = m->B, T = m->T, N = B * T, C = c->d_model, H = c->d_mlp, NH = c->n_head, HD = c->head_dim;
    const gm_act_index *x = &m->aix;
    const stream_norm none = {NULL, NULL};
    be->embed_fwd(be, A(m, x->emb), m->ids, P(m, m->pix.embed), N, C);
    if (c->embed_norm) be->rmsnorm_fwd(be, A(m, x->x0), S(m, x->x0_rstd), A(m, x->emb), N, C, c->norm_eps);
    for (int j = 0; j < c->n_value_embeds; j++) be->embed_fwd(be, A(m, x->ve[j]), m->ids, P(m, m->pix.ve[j]), N, C);
    if (!makes_its_input(m, 0)) {  // block 0 reads x0 as it is
        const stream_norm n0 = first_norm(m, 0);
        be->rmsnorm_fwd(be, n0.out, n0.rstd, x0_of(m), N, C, c->norm_eps);
    }
    gm_attn_mask mask = mask_of(m);
    for (int l = 0; l < c->n_layer; l++) {
        const gm_layer_acts *a = &x->layer[l];
        const gm_layer_params *p = &m->pix.layer[l];
        layer_io io = io_of(m, l);
        if (io.skip)
            stream_op(m, io.xs, a->mix.home ? none : first_norm(m, l), 1, NULL, io.in, 1,
                      P(m, m->pix.skip_weights) + skip_index(m, l), io.skip);
        if (a->mix.home)
            stream_op(m, io.xm, first_norm(m, l), 1, P(m, p->lambdas), io.xs, 1, P(m, p->lambdas) + 1, x0_of(m));
        if (gm_config_has_attn(c, l)) {
            attn_inputs(m, l, &io, 0);
            be->attn_fwd(be, A(m, a->att), S(m, a->lse), A(m, a->qr), A(m, a->kr), vs_of(m, a), B, T, NH, HD,
                         1.0 / sqrt(HD), mask);
            // xa = xm + s att W^T: the residual added in the projection's epilogue, then ln2
            be->matmul_fwd(be, io.xa, A(m, a->att), P(m, p->c_proj), N, C, C, attn_branch_scale(c), io.xm);
            be->rmsnorm_fwd(be, A(m, a->ln2), S(m, a->ln2_rstd), io.xa, N, C, c->norm_eps);
        }
        mlp_inputs(m, l, &io, 0);
        // res_mlp = xa + act W^T, the same way; then the next block's first norm, unless its own op makes its input
        be->matmul_fwd(be, A(m, a->res_mlp), A(m, a->act), P(m, p->mlp_proj), N, H, C, 1, io.xa);
        if (!makes_its_input(m, l + 1)) {
            const stream_norm next = first_norm(m, l + 1);
            be->rmsnorm_fwd(be, next.out, next.rstd, A(m, a->res_mlp), N, C, c->norm_eps);
        }
    }
}

// Head and loss, head_rows rows at a time: the chunk's logits (rows, Vp), then softcap and
// cross-entropy into the per-row losses. Training: the same pass turns the logits into
// d(dloss * mean loss)/d(logits) in place and the head's backward follows at once, so the
// loss is computed once per step and the logits of all N rows never exist together.
static void head_loss(const gm_model *m, int train, double dloss) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    const int N = m->B * m->T, C = c->d_model, Vp = c->vocab_padded, R = m->head_rows;
    const gm_real *head = P(m, m->pix.head);
    gm_actval *lnf = A(m, m->aix.lnf), *logits = A(m, m->aix.logits);
    gm_real *losses = S(m, m->aix.losses);
    for (int r0 = 0; r0 < N; r0 += R) {
        const int n = N - r0 < R ? N - r0 : R;
        const gm_actval *in = gm_act_at(be, lnf, (size_t)r0 * C);  // (n, C)
        be->matmul_fwd(be, logits, in, head, n, C, Vp, 1, NULL);
        be->xent_fwd_bwd(be, losses + r0, train ? logits : NULL, logits, m->targets + r0, n, Vp, c->softcap,
                         train ? dloss / N : 0);
        if (train)
            be->matmul_bwd(be, gm_act_at(be, D(m, m->gix.lnf), (size_t)r0 * C), GM_GRAD_SET, G(m, m->pix.head), logits, in, head, n,
                           C, Vp);
    }
}

// ---- backward: the forward's steps in reverse ----

// Block l's input gradient from dres, the gradient of its xm: through the x0 mix
// (xm = l0 xs + l1 x0) and the U-net skip (xs = in + w skip), each a lincomb backward.
static void stream_to_input(const gm_model *m, int l, const layer_io *io, gm_actval *dres, grad_marks *marks) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    const int C = c->d_model;
    const size_t NC = (size_t)m->B * m->T * C;
    gm_actval *din = d_block_in(m, l);
    gm_actval *dxs = dres;  // xs's gradient: after the mix, in place when the skip's add follows
    if (c->x0_lambdas) {
        if (!io->skip) dxs = din;
        const gm_grad_write wx = dxs == dres ? GM_GRAD_SET : first_sets(marks, dxs);
        gm_actval *dx0 = d_x0(m);
        gm_real *lam = P(m, m->pix.layer[l].lambdas), *dlam = G(m, m->pix.layer[l].lambdas);
        const gm_grad_write wy = first_sets(marks, dx0);  // after wx: dx0 is dxs in block 0
        be->lincomb_bwd(be, dxs, wx, dx0, wy, dlam, dlam + 1, dres, 1, lam, io->xs, 1, lam + 1, x0_of(m), NC, C, C);
    }
    if (io->skip) {  // `in` is not read: its coefficient is no parameter
        gm_real *w = P(m, m->pix.skip_weights) + skip_index(m, l), *dw = G(m, m->pix.skip_weights) + skip_index(m, l);
        gm_actval *dskip = d_stream(m, c->n_layer - 1 - l), *dx = din == dxs ? NULL : din;
        const gm_grad_write wx = dx ? first_sets(marks, dx) : GM_GRAD_SET;
        const gm_grad_write wy = first_sets(marks, dskip);  // after wx: the first decoder's input is its skip
        be->lincomb_bwd(be, dx, wx, dskip, wy, NULL, dw, dxs, 1, NULL, NULL, 1, w, io->skip, NC, C, C);
    } else if (din != dxs) {
        be->lincomb_bwd(be, din, first_sets(marks, din), NULL, GM_GRAD_SET, NULL, NULL, dxs, 1, NULL, NULL, 0, NULL,
                        NULL, NC, C, C);
    }
}

static void backward(const gm_model *m) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    const int B = m->B, T = m->T, N = B * T, C = c->d_model, H = c->d_mlp, NH = c->n_head, HD = c->head_dim;
    const size_t NC = (size_t)N * C;
    const gm_act_index *x = &m->aix;
    const gm_grad_index *g = &m->gix;
    gm_attn_mask mask = mask_of(m);
    grad_marks marks = {.n = 0};

    gm_actval *last = A(m, x->layer[c->n_layer - 1].res_mlp), *dlast = d_stream(m, c->n_layer - 1);
    be->rmsnorm_bwd(be, dlast, first_sets(&marks, dlast), D(m, g->lnf), last, S(m, x->lnf_rstd), N, C);
    for (int l = c->n_layer - 1; l >= 0; l--) {
        const gm_layer_acts *a = &x->layer[l];
        const gm_layer_params *p = &m->pix.layer[l];
        layer_io io = io_of(m, l);
        gm_actval *dres = d_stream(m, l);  // the gradient of res_mlp, then of xa, then of xm
        if (m->recompute) {
            if (gm_config_has_attn(c, l)) attn_inputs(m, l, &io, 1);
            mlp_inputs(m, l, &io, 1);
        }
        // MLP: res_mlp = xa + mo, so dmo = dres, read before the norm's gradient adds into it
        be->matmul_bwd(be, D(m, g->act), GM_GRAD_SET, G(m, p->mlp_proj), dres, A(m, a->act), P(m, p->mlp_proj), N,
                       H, C);
        be->act_bwd(be, c->mlp_act, D(m, g->fc), GM_GRAD_SET, D(m, g->act), A(m, a->fc), (size_t)N * H);
        be->matmul_bwd(be, D(m, g->ln2), GM_GRAD_SET, G(m, p->fc), D(m, g->fc), A(m, a->ln2), P(m, p->fc), N, C, H);
        be->rmsnorm_bwd(be, dres, GM_GRAD_ADD, D(m, g->ln2), io.xa, S(m, a->ln2_rstd), N, C);
        // attention: xa = xm + s ao
        if (gm_config_has_attn(c, l)) {
            gm_actval *dao = dres;
            if (g->ao >= 0) {
                dao = D(m, g->ao);
                be->lincomb_bwd(be, dao, GM_GRAD_SET, NULL, GM_GRAD_SET, NULL, NULL, dres, attn_branch_scale(c), NULL,
                                NULL, 0, NULL, NULL, NC, C, C);
            }
            be->matmul_bwd(be, D(m, g->att), GM_GRAD_SET, G(m, p->c_proj), dao, A(m, a->att), P(m, p->c_proj), N, C,
                           C);
            gm_actval *vs = vs_of(m, a), *dvs = a->vmix.home ? D(m, g->vs) : dv_of(m, a);
            be->attn_bwd(be, D(m, g->qr), D(m, g->kr), dvs, GM_GRAD_SET, D(m, g->att), A(m, a->qr), A(m, a->kr), vs,
                         A(m, a->att), S(m, a->lse), B, T, NH, HD, 1.0 / sqrt(HD), mask);
            // dq, dk (and dv) into the views of one (N, QW) gradient, as q, k (and v) are views of qkv
            const int QW = proj_cols(c);
            gm_actval *q = A(m, a->qkv), *k = gm_act_at(be, q, (size_t)C);
            gm_actval *dq = D(m, g->qkv), *dk = gm_act_at(be, dq, (size_t)C);
            if (c->qk_norm) {
                be->qknorm_rotary_bwd(be, dq, GM_GRAD_SET, D(m, g->qr), q, S(m, a->qn_rstd), m->cos_t, m->sin_t, B, T,
                                      NH, HD, QW);
                be->qknorm_rotary_bwd(be, dk, GM_GRAD_SET, D(m, g->kr), k, S(m, a->kn_rstd), m->cos_t, m->sin_t, B, T,
                                      NH, HD, QW);
            } else {
                be->rotary_bwd(be, dq, GM_GRAD_SET, D(m, g->qr), m->cos_t, m->sin_t, B, T, NH, HD, QW);
                be->rotary_bwd(be, dk, GM_GRAD_SET, D(m, g->kr), m->cos_t, m->sin_t, B, T, NH, HD, QW);
            }
            if (a->vmix.home) {  // dv and v are the views
                gm_real *al = P(m, p->attn_lambdas), *dal = G(m, p->attn_lambdas);
                gm_actval *ve = ve_of(m, l), *dve = dve_of(m, l);
                be->lincomb_bwd(be, dv_of(m, a), GM_GRAD_SET, dve, dve ? first_sets(&marks, dve) : GM_GRAD_SET, dal,
                                ve ? dal + 1 : NULL, dvs, 1, al, v_of(m, a), 1, al + 1, ve, NC, C, QW);
            }
            be->matmul_bwd(be, D(m, g->ln1), GM_GRAD_SET, g_qkv(m, l, 0), dq, A(m, a->ln1), w_qkv(m, l, 0), N, C, QW);
            if (QW == 2 * C)
                be->matmul_bwd(be, D(m, g->ln1), GM_GRAD_ADD, g_qkv(m, l, 2), dv_of(m, a), A(m, a->ln1), w_qkv(m, l, 2),
                               N, C, C);
            be->rmsnorm_bwd(be, dres, GM_GRAD_ADD, D(m, g->ln1), io.xm, S(m, a->ln1_rstd), N, C);
        }
        stream_to_input(m, l, &io, dres, &marks);
    }
    // A value embedding no block wrote to (every block that reads it skips attention) adds nothing to
    // its table's gradient (which the optimizer zeroed: +0, so adding zeros would change no bit).
    int ve_written[GM_MAX_VALUE_EMBEDS];
    for (int j = 0; j < c->n_value_embeds; j++) ve_written[j] = first_sets(&marks, D(m, g->ve[j])) == GM_GRAD_ADD;
    gm_actval *demb = c->embed_norm ? D(m, g->emb) : d_x0(m);
    if (c->embed_norm) be->rmsnorm_bwd(be, demb, GM_GRAD_SET, d_x0(m), A(m, x->emb), S(m, x->x0_rstd), N, C);
    be->embed_bwd(be, G(m, m->pix.embed), m->ids, demb, N, c->vocab_padded, C);
    for (int j = 0; j < c->n_value_embeds; j++)
        if (ve_written[j]) be->embed_bwd(be, G(m, m->pix.ve[j]), m->ids, D(m, g->ve[j]), N, c->vocab_padded, C);
}

// ---- the step ----

static double step(gm_model *m, const int32_t *ids, const int32_t *targets, int B, int T, int train, double dloss) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab || targets[i] < 0 || targets[i] >= c->vocab)
            return gm_fail("model: token id %d / target %d at %zu outside the vocabulary of %d", ids[i], targets[i], i,
                           c->vocab),
                   NAN;
    if (m->B != B || m->T != T) {
        free_acts(m);
        if (alloc_acts(m, B, T)) return NAN;
    }
    if (train) {
        if (!m->g && !(m->g = be->alloc(be, sizeof(gm_real) * m->params.total))) return NAN;
        if (!m->da && !(m->da = be->alloc(be, be->act_size * m->dacts.total))) return NAN;
    }
    const int N = B * T;
    be->upload(be, m->ids, ids, sizeof(int32_t) * N);
    be->upload(be, m->targets, targets, sizeof(int32_t) * N);
    if (c->doc_mask) {
        int32_t *doc = malloc(sizeof(int32_t) * N);
        if (!doc) return gm_fail("model: out of host memory"), NAN;
        gm_doc_ids(doc, ids, B, T, c->eot);
        be->upload(be, m->doc, doc, sizeof(int32_t) * N);
        free(doc);
    }
    forward_layers(m);
    head_loss(m, train, dloss);
    if (train) backward(m);
    gm_real *losses = malloc(sizeof(gm_real) * N);
    if (!losses) return gm_fail("model: out of host memory"), NAN;
    be->download(be, losses, S(m, m->aix.losses), sizeof(gm_real) * N);
    if (be->sync(be))
        return free(losses), gm_fail("model: %s: %s", train ? "forward/backward" : "forward", gm_error()), NAN;
    double sum = 0;
    for (int i = 0; i < N; i++) sum += losses[i];
    free(losses);
    m->loss = sum / N;
    return m->loss;
}

double gm_model_forward(gm_model *m, const int32_t *ids, const int32_t *targets, int B, int T) {
    return step(m, ids, targets, B, T, 0, 0);
}

double gm_model_forward_backward(gm_model *m, const int32_t *ids, const int32_t *targets, int B, int T, double dloss) {
    return step(m, ids, targets, B, T, 1, dloss);
}
