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
    if (gm_config_check(cfg) || gm_params_build(cfg, &m->params, &m->pix)) return -1;
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

static void free_acts(gm_model *m) {
    const gm_backend *be = m->be;
    be->free(be, m->a), be->free(be, m->da), be->free(be, m->ids), be->free(be, m->targets);
    be->free(be, m->doc), be->free(be, m->cos_t), be->free(be, m->sin_t);
    m->a = m->da = m->cos_t = m->sin_t = NULL;
    m->ids = m->targets = m->doc = NULL;
    gm_table_free(&m->acts);
    m->B = m->T = 0;
}

void gm_model_free(gm_model *m) {
    free_acts(m);
    m->be->free(m->be, m->p), m->be->free(m->be, m->g);
    gm_table_free(&m->params);
    memset(m, 0, sizeof *m);
}

void gm_model_set_window(gm_model *m, int window_blocks) { m->window_blocks = window_blocks; }

void gm_model_zero_grad(gm_model *m) {
    if (m->g) m->be->fill(m->be, m->g, 0, m->params.total);
}

// ---- activation layout for (B, T) ----

static int act(gm_table *t, const char *fmt, int l, size_t n) {
    char name[48];
    snprintf(name, sizeof name, fmt, l);
    return gm_table_add(t, name, (int64_t)n, 1, GM_GROUP_NONE, GM_INIT_NONE, 0, 0);
}

static int build_acts(gm_model *m, int B, int T) {
    const gm_config *c = &m->cfg;
    size_t N = (size_t)B * T, C = c->d_model, H = c->d_mlp, NH = c->n_head;
    gm_table *t = &m->acts;
    gm_act_index *x = &m->aix;
    gm_table_init(t);
    memset(x, -1, sizeof *x);
    x->emb = act(t, "emb", 0, N * C);
    if (c->embed_norm) x->x0 = act(t, "x0", 0, N * C), x->x0_rstd = act(t, "x0.rstd", 0, N);
    for (int j = 0; j < c->n_value_embeds; j++) x->ve[j] = act(t, "ve.%d", j, N * C);
    for (int l = 0; l < c->n_layer; l++) {
        gm_layer_acts *a = &x->layer[l];
        if (c->unet_skips && l >= c->n_layer / 2) a->skip_out = act(t, "h.%d.skip_out", l, N * C);
        if (c->x0_lambdas) a->mix = act(t, "h.%d.mix", l, N * C);
        if (gm_config_has_attn(c, l)) {
            a->ln1 = act(t, "h.%d.ln1", l, N * C), a->ln1_rstd = act(t, "h.%d.ln1.rstd", l, N);
            a->q = act(t, "h.%d.q", l, N * C), a->k = act(t, "h.%d.k", l, N * C), a->v = act(t, "h.%d.v", l, N * C);
            if (c->qk_norm) {
                a->qn = act(t, "h.%d.qn", l, N * C), a->kn = act(t, "h.%d.kn", l, N * C);
                a->qn_rstd = act(t, "h.%d.qn.rstd", l, N * NH), a->kn_rstd = act(t, "h.%d.kn.rstd", l, N * NH);
            }
            if (c->n_value_embeds) a->vmix = act(t, "h.%d.vmix", l, N * C);
            a->qr = act(t, "h.%d.qr", l, N * C), a->kr = act(t, "h.%d.kr", l, N * C);
            a->att = act(t, "h.%d.att", l, N * C), a->lse = act(t, "h.%d.lse", l, N * NH);
            a->ao = act(t, "h.%d.ao", l, N * C), a->res_attn = act(t, "h.%d.res_attn", l, N * C);
        }
        a->ln2 = act(t, "h.%d.ln2", l, N * C), a->ln2_rstd = act(t, "h.%d.ln2.rstd", l, N);
        a->fc = act(t, "h.%d.fc", l, N * H), a->actv = act(t, "h.%d.act", l, N * H);
        a->mo = act(t, "h.%d.mo", l, N * C), a->res_mlp = act(t, "h.%d.res_mlp", l, N * C);
    }
    x->lnf = act(t, "lnf", 0, N * C), x->lnf_rstd = act(t, "lnf.rstd", 0, N);
    x->logits = act(t, "logits", 0, N * (size_t)c->vocab_padded);
    x->losses = act(t, "losses", 0, N);
    if (t->failed) return -1;
    const gm_backend *be = m->be;
    m->a = be->alloc(be, sizeof(gm_real) * t->total);
    m->ids = be->alloc(be, sizeof(int32_t) * N), m->targets = be->alloc(be, sizeof(int32_t) * N);
    m->doc = be->alloc(be, sizeof(int32_t) * N);
    size_t half = (size_t)c->head_dim / 2;
    m->cos_t = be->alloc(be, sizeof(gm_real) * T * half), m->sin_t = be->alloc(be, sizeof(gm_real) * T * half);
    if (!m->a || !m->ids || !m->targets || !m->doc || !m->cos_t || !m->sin_t) return -1;
    gm_real *ct = malloc(sizeof(gm_real) * T * half), *st = malloc(sizeof(gm_real) * T * half);
    if (!ct || !st) return free(ct), free(st), gm_fail("model: out of host memory");
    gm_rotary_tables(c, T, ct, st);
    be->upload(be, m->cos_t, ct, sizeof(gm_real) * T * half);
    be->upload(be, m->sin_t, st, sizeof(gm_real) * T * half);
    free(ct), free(st);
    m->B = B, m->T = T;
    return 0;
}

// ---- forward ----

static inline gm_real *A(const gm_model *m, int i) { return i < 0 ? NULL : m->a + m->acts.v[i].offset; }
// The gradient of an activation, found from its pointer (same offset in the gradient buffer).
static inline gm_real *D(const gm_model *m, const gm_real *x) { return x ? m->da + (x - m->a) : NULL; }
static inline gm_real *P(const gm_model *m, int i) { return gm_param(m, i); }
static inline gm_real *G(const gm_model *m, int i) { return gm_grad(m, i); }

// The weights of q, k, v: rows of the fused c_attn, or the separate matrices.
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
    gm_real *in;    // previous block's output (x0 for layer 0)
    gm_real *skip;  // encoder output added by the U-net (NULL if none)
    gm_real *xs;    // after the skip add (== in without one)
    gm_real *xm;    // after the x0 mix (== xs without one): the block's working input
} layer_io;

static gm_real *x0_of(const gm_model *m) { return A(m, m->cfg.embed_norm ? m->aix.x0 : m->aix.emb); }

static layer_io io_of(const gm_model *m, int l) {
    const gm_config *c = &m->cfg;
    const gm_layer_acts *a = &m->aix.layer[l];
    layer_io io;
    io.in = l == 0 ? x0_of(m) : A(m, m->aix.layer[l - 1].res_mlp);
    io.skip = a->skip_out >= 0 ? A(m, m->aix.layer[c->n_layer - 1 - l].res_mlp) : NULL;
    io.xs = a->skip_out >= 0 ? A(m, a->skip_out) : io.in;
    io.xm = a->mix >= 0 ? A(m, a->mix) : io.xs;
    return io;
}

static int skip_index(const gm_model *m, int l) { return l - m->cfg.n_layer / 2; }

static gm_attn_mask mask_of(const gm_model *m) {
    return (gm_attn_mask){m->cfg.doc_mask ? m->doc : NULL, m->cfg.attn_block > 0 ? m->cfg.attn_block : 128,
                          m->window_blocks};
}

// Value-embedding input of layer l's value mix (NULL: the layer has none).
static gm_real *ve_of(const gm_model *m, int l) {
    int j = gm_config_ve_of_layer(&m->cfg, l);
    return j < 0 ? NULL : A(m, m->aix.ve[j]);
}

static double attn_branch_scale(const gm_config *c) {
    return c->branch_scale_depth ? 1.0 / sqrt(2.0 * c->n_layer) : 1.0;
}

double gm_model_forward(gm_model *m, const int32_t *ids, const int32_t *targets, int B, int T) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab || targets[i] < 0 || targets[i] >= c->vocab)
            return gm_fail("model: token id %d / target %d at %zu outside the vocabulary of %d", ids[i], targets[i], i,
                           c->vocab),
                   NAN;
    if (m->B != B || m->T != T) {
        free_acts(m);
        if (build_acts(m, B, T)) return NAN;
    }
    int N = B * T, C = c->d_model, H = c->d_mlp, NH = c->n_head, HD = c->head_dim, Vp = c->vocab_padded;
    be->upload(be, m->ids, ids, sizeof(int32_t) * N);
    be->upload(be, m->targets, targets, sizeof(int32_t) * N);
    if (c->doc_mask) {
        int32_t *doc = malloc(sizeof(int32_t) * N);
        if (!doc) return gm_fail("model: out of host memory"), NAN;
        gm_doc_ids(doc, ids, B, T, c->eot);
        be->upload(be, m->doc, doc, sizeof(int32_t) * N);
        free(doc);
    }
    const gm_act_index *x = &m->aix;
    be->embed_fwd(be, A(m, x->emb), m->ids, P(m, m->pix.embed), N, C);
    if (c->embed_norm) be->rmsnorm_fwd(be, A(m, x->x0), A(m, x->x0_rstd), A(m, x->emb), N, C, c->norm_eps);
    for (int j = 0; j < c->n_value_embeds; j++) be->embed_fwd(be, A(m, x->ve[j]), m->ids, P(m, m->pix.ve[j]), N, C);
    gm_attn_mask mask = mask_of(m);
    double scale = 1.0 / sqrt(HD);
    for (int l = 0; l < c->n_layer; l++) {
        const gm_layer_acts *a = &x->layer[l];
        const gm_layer_params *p = &m->pix.layer[l];
        layer_io io = io_of(m, l);
        if (io.skip)
            be->lincomb_fwd(be, io.xs, 1, NULL, io.in, 1, P(m, m->pix.skip_weights) + skip_index(m, l), io.skip,
                            (size_t)N * C);
        if (a->mix >= 0)
            be->lincomb_fwd(be, io.xm, 1, P(m, p->lambdas), io.xs, 1, P(m, p->lambdas) + 1, x0_of(m), (size_t)N * C);
        gm_real *xa = io.xm;  // stream entering the MLP
        if (gm_config_has_attn(c, l)) {
            be->rmsnorm_fwd(be, A(m, a->ln1), A(m, a->ln1_rstd), io.xm, N, C, c->norm_eps);
            be->matmul_fwd(be, A(m, a->q), A(m, a->ln1), w_qkv(m, l, 0), N, C, C);
            be->matmul_fwd(be, A(m, a->k), A(m, a->ln1), w_qkv(m, l, 1), N, C, C);
            be->matmul_fwd(be, A(m, a->v), A(m, a->ln1), w_qkv(m, l, 2), N, C, C);
            gm_real *qs = A(m, a->q), *ks = A(m, a->k), *vs = A(m, a->v);
            if (c->qk_norm) {
                be->rmsnorm_fwd(be, A(m, a->qn), A(m, a->qn_rstd), qs, N * NH, HD, c->norm_eps);
                be->rmsnorm_fwd(be, A(m, a->kn), A(m, a->kn_rstd), ks, N * NH, HD, c->norm_eps);
                qs = A(m, a->qn), ks = A(m, a->kn);
            }
            if (a->vmix >= 0) {
                gm_real *al = P(m, p->attn_lambdas);
                be->lincomb_fwd(be, A(m, a->vmix), 1, al, vs, 1, al + 1, ve_of(m, l), (size_t)N * C);
                vs = A(m, a->vmix);
            }
            be->rotary_fwd(be, A(m, a->qr), qs, m->cos_t, m->sin_t, B, T, NH, HD);
            be->rotary_fwd(be, A(m, a->kr), ks, m->cos_t, m->sin_t, B, T, NH, HD);
            be->attn_fwd(be, A(m, a->att), A(m, a->lse), A(m, a->qr), A(m, a->kr), vs, B, T, NH, HD, scale, mask);
            be->matmul_fwd(be, A(m, a->ao), A(m, a->att), P(m, p->c_proj), N, C, C);
            be->lincomb_fwd(be, A(m, a->res_attn), 1, NULL, io.xm, attn_branch_scale(c), NULL, A(m, a->ao),
                            (size_t)N * C);
            xa = A(m, a->res_attn);
        }
        be->rmsnorm_fwd(be, A(m, a->ln2), A(m, a->ln2_rstd), xa, N, C, c->norm_eps);
        be->matmul_fwd(be, A(m, a->fc), A(m, a->ln2), P(m, p->fc), N, C, H);
        be->act_fwd(be, c->mlp_act, A(m, a->actv), A(m, a->fc), (size_t)N * H);
        be->matmul_fwd(be, A(m, a->mo), A(m, a->actv), P(m, p->mlp_proj), N, H, C);
        be->lincomb_fwd(be, A(m, a->res_mlp), 1, NULL, xa, 1, NULL, A(m, a->mo), (size_t)N * C);
    }
    be->rmsnorm_fwd(be, A(m, x->lnf), A(m, x->lnf_rstd), A(m, x->layer[c->n_layer - 1].res_mlp), N, C, c->norm_eps);
    be->matmul_fwd(be, A(m, x->logits), A(m, x->lnf), P(m, m->pix.head), N, C, Vp);
    be->xent_fwd_bwd(be, A(m, x->losses), NULL, A(m, x->logits), m->targets, N, Vp, c->softcap, 0);
    gm_real *losses = malloc(sizeof(gm_real) * N);
    if (!losses) return gm_fail("model: out of host memory"), NAN;
    be->download(be, losses, A(m, x->losses), sizeof(gm_real) * N);
    if (be->sync(be)) return free(losses), gm_fail("model: forward: %s", gm_error()), NAN;
    double sum = 0;
    for (int i = 0; i < N; i++) sum += losses[i];
    free(losses);
    m->loss = sum / N;
    return m->loss;
}

// ---- backward: the forward's steps in reverse, each kernel adding into its inputs' gradients ----

int gm_model_backward(gm_model *m, double dloss) {
    const gm_config *c = &m->cfg;
    const gm_backend *be = m->be;
    if (!m->a) return gm_fail("model: backward without a forward");
    if (!m->g && !(m->g = be->alloc(be, sizeof(gm_real) * m->params.total))) return -1;
    if (!m->da && !(m->da = be->alloc(be, sizeof(gm_real) * m->acts.total))) return -1;
    be->fill(be, m->da, 0, m->acts.total);
    int B = m->B, T = m->T, N = B * T, C = c->d_model, H = c->d_mlp, NH = c->n_head, HD = c->head_dim;
    int Vp = c->vocab_padded;
    const gm_act_index *x = &m->aix;
    gm_attn_mask mask = mask_of(m);
    double scale = 1.0 / sqrt(HD);

    gm_real *dlogits = D(m, A(m, x->logits));
    be->xent_fwd_bwd(be, A(m, x->losses), dlogits, A(m, x->logits), m->targets, N, Vp, c->softcap, dloss / N);
    be->matmul_bwd(be, D(m, A(m, x->lnf)), G(m, m->pix.head), dlogits, A(m, x->lnf), P(m, m->pix.head), N, C, Vp);
    gm_real *last = A(m, x->layer[c->n_layer - 1].res_mlp);
    be->rmsnorm_bwd(be, D(m, last), D(m, A(m, x->lnf)), last, A(m, x->lnf_rstd), N, C);

    for (int l = c->n_layer - 1; l >= 0; l--) {
        const gm_layer_acts *a = &x->layer[l];
        const gm_layer_params *p = &m->pix.layer[l];
        layer_io io = io_of(m, l);
        gm_real *xa = gm_config_has_attn(c, l) ? A(m, a->res_attn) : io.xm;
        // MLP
        be->lincomb_bwd(be, D(m, xa), D(m, A(m, a->mo)), NULL, NULL, D(m, A(m, a->res_mlp)), 1, NULL, xa, 1, NULL,
                        A(m, a->mo), (size_t)N * C);
        be->matmul_bwd(be, D(m, A(m, a->actv)), G(m, p->mlp_proj), D(m, A(m, a->mo)), A(m, a->actv), P(m, p->mlp_proj),
                       N, H, C);
        be->act_bwd(be, c->mlp_act, D(m, A(m, a->fc)), D(m, A(m, a->actv)), A(m, a->fc), (size_t)N * H);
        be->matmul_bwd(be, D(m, A(m, a->ln2)), G(m, p->fc), D(m, A(m, a->fc)), A(m, a->ln2), P(m, p->fc), N, C, H);
        be->rmsnorm_bwd(be, D(m, xa), D(m, A(m, a->ln2)), xa, A(m, a->ln2_rstd), N, C);
        // attention
        if (gm_config_has_attn(c, l)) {
            be->lincomb_bwd(be, D(m, io.xm), D(m, A(m, a->ao)), NULL, NULL, D(m, xa), 1, NULL, io.xm,
                            attn_branch_scale(c), NULL, A(m, a->ao), (size_t)N * C);
            be->matmul_bwd(be, D(m, A(m, a->att)), G(m, p->c_proj), D(m, A(m, a->ao)), A(m, a->att), P(m, p->c_proj), N,
                           C, C);
            gm_real *qs = c->qk_norm ? A(m, a->qn) : A(m, a->q), *ks = c->qk_norm ? A(m, a->kn) : A(m, a->k);
            gm_real *vs = a->vmix >= 0 ? A(m, a->vmix) : A(m, a->v);
            be->attn_bwd(be, D(m, A(m, a->qr)), D(m, A(m, a->kr)), D(m, vs), D(m, A(m, a->att)), A(m, a->qr),
                         A(m, a->kr), vs, A(m, a->att), A(m, a->lse), B, T, NH, HD, scale, mask);
            be->rotary_bwd(be, D(m, qs), D(m, A(m, a->qr)), m->cos_t, m->sin_t, B, T, NH, HD);
            be->rotary_bwd(be, D(m, ks), D(m, A(m, a->kr)), m->cos_t, m->sin_t, B, T, NH, HD);
            if (a->vmix >= 0) {
                gm_real *al = P(m, p->attn_lambdas), *dal = G(m, p->attn_lambdas), *ve = ve_of(m, l);
                be->lincomb_bwd(be, D(m, A(m, a->v)), D(m, ve), dal, ve ? dal + 1 : NULL, D(m, vs), 1, al, A(m, a->v),
                                1, al + 1, ve, (size_t)N * C);
            }
            if (c->qk_norm) {
                be->rmsnorm_bwd(be, D(m, A(m, a->q)), D(m, qs), A(m, a->q), A(m, a->qn_rstd), N * NH, HD);
                be->rmsnorm_bwd(be, D(m, A(m, a->k)), D(m, ks), A(m, a->k), A(m, a->kn_rstd), N * NH, HD);
            }
            for (int w = 0; w < 3; w++) {
                gm_real *out = A(m, w == 0 ? a->q : w == 1 ? a->k : a->v);
                be->matmul_bwd(be, D(m, A(m, a->ln1)), g_qkv(m, l, w), D(m, out), A(m, a->ln1), w_qkv(m, l, w), N, C,
                               C);
            }
            be->rmsnorm_bwd(be, D(m, io.xm), D(m, A(m, a->ln1)), io.xm, A(m, a->ln1_rstd), N, C);
        }
        if (a->mix >= 0) {
            gm_real *lam = P(m, p->lambdas), *dlam = G(m, p->lambdas);
            be->lincomb_bwd(be, D(m, io.xs), D(m, x0_of(m)), dlam, dlam + 1, D(m, io.xm), 1, lam, io.xs, 1, lam + 1,
                            x0_of(m), (size_t)N * C);
        }
        if (io.skip) {
            gm_real *w = P(m, m->pix.skip_weights) + skip_index(m, l),
                    *dw = G(m, m->pix.skip_weights) + skip_index(m, l);
            be->lincomb_bwd(be, D(m, io.in), D(m, io.skip), NULL, dw, D(m, io.xs), 1, NULL, io.in, 1, w, io.skip,
                            (size_t)N * C);
        }
    }
    if (c->embed_norm) be->rmsnorm_bwd(be, D(m, A(m, x->emb)), D(m, A(m, x->x0)), A(m, x->emb), A(m, x->x0_rstd), N, C);
    be->embed_bwd(be, G(m, m->pix.embed), m->ids, D(m, A(m, x->emb)), N, Vp, C);
    for (int j = 0; j < c->n_value_embeds; j++)
        be->embed_bwd(be, G(m, m->pix.ve[j]), m->ids, D(m, A(m, x->ve[j])), N, Vp, C);
    return be->sync(be) ? gm_fail("model: backward: %s", gm_error()) : 0;
}
