// Every CPU kernel's backward against central differences in fp64, on random shapes (odd sizes
// included). Bar: relative error < 1e-6 per input tensor.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/attn_mask.h"
#include "backend/cpu/cpu.h"
#include "base/rng.h"
#include "gradcheck.h"

#define BAR 1e-6
#define ALLOC(n) calloc((size_t)(n), sizeof(gm_real))

// A random size in [lo, hi] drawn from the test's seed.
static int rsize(uint64_t seed, int i, int lo, int hi) {
    return lo + (int)(gm_rng_u32(seed, 77, (uint64_t)i) % (uint32_t)(hi - lo + 1));
}

static void expect_all_below(const char *op, gc_input *in, int nin, const double *err) {
    for (int k = 0; k < nin; k++)
        cr_expect(err[k] < BAR, "%s: d%s relative error %.3g >= %g", op, in[k].name, err[k], BAR);
}

// ---- matmul ----
typedef struct {
    gm_real *inp, *W;
    int N, C, OC;
} mm_ctx;
static void mm_fwd(void *c, gm_real *out) {
    mm_ctx *m = c;
    gm_backend_cpu()->matmul_fwd(gm_backend_cpu(), gm_as_act(out), gm_as_act(m->inp), m->W, m->N, m->C, m->OC, 1, NULL);
}
static gc_input *g_in;  // the gradient buffers of the input list being checked
static void mm_bwd(void *c, const gm_real *dout) {
    mm_ctx *m = c;
    gm_backend_cpu()->matmul_bwd(gm_backend_cpu(), gm_as_act(g_in[0].dx), GM_GRAD_ADD, g_in[1].dx, gm_as_act(dout), gm_as_act(m->inp), m->W, m->N, m->C, m->OC);
}

Test(op_grads, matmul) {
    for (int rep = 0; rep < 3; rep++) {
        uint64_t seed = 100 + rep;
        mm_ctx m = {NULL, NULL, rsize(seed, 0, 1, 13), rsize(seed, 1, 1, 17), rsize(seed, 2, 1, 11)};
        m.inp = ALLOC(m.N * m.C), m.W = ALLOC(m.OC * m.C);
        gc_randn(m.inp, (size_t)m.N * m.C, 1, seed, 1), gc_randn(m.W, (size_t)m.OC * m.C, 1, seed, 2);
        gc_input in[2] = {{"inp", m.inp, ALLOC(m.N * m.C), (size_t)m.N * m.C},
                          {"W", m.W, ALLOC(m.OC * m.C), (size_t)m.OC * m.C}};
        g_in = in;
        double err[2];
        gc_check((gc_fn){&m, (size_t)m.N * m.OC, mm_fwd, mm_bwd, NULL}, in, 2, 400, seed, err);
        expect_all_below("matmul", in, 2, err);
        for (int k = 0; k < 2; k++) free(in[k].x), free(in[k].dx);
    }
}

// ---- embedding ----
typedef struct {
    int32_t *ids;
    gm_real *table;
    int N, V, C;
} emb_ctx;
static void emb_fwd(void *c, gm_real *out) {
    emb_ctx *e = c;
    gm_backend_cpu()->embed_fwd(gm_backend_cpu(), gm_as_act(out), e->ids, e->table, e->N, e->C);
}
static void emb_bwd(void *c, const gm_real *dout) {
    emb_ctx *e = c;
    gm_backend_cpu()->embed_bwd(gm_backend_cpu(), g_in[0].dx, e->ids, gm_as_act(dout), e->N, e->V, e->C);
}

Test(op_grads, embedding_with_repeated_ids) {
    uint64_t seed = 200;
    emb_ctx e = {NULL, NULL, 29, 7, rsize(seed, 0, 3, 9)};  // 29 tokens over 7 rows: many repeats
    e.ids = malloc(sizeof(int32_t) * e.N);
    for (int i = 0; i < e.N; i++) e.ids[i] = (int32_t)(gm_rng_u32(seed, 5, i) % (uint32_t)(e.V - 1));  // row V-1 unused
    e.table = ALLOC(e.V * e.C);
    gc_randn(e.table, (size_t)e.V * e.C, 1, seed, 1);
    gc_input in[1] = {{"table", e.table, ALLOC(e.V * e.C), (size_t)e.V * e.C}};
    g_in = in;
    double err[1];
    gc_check((gc_fn){&e, (size_t)e.N * e.C, emb_fwd, emb_bwd, NULL}, in, 1, 1000, seed, err);
    expect_all_below("embedding", in, 1, err);
    free(e.ids), free(e.table), free(in[0].dx);
}

// ---- rmsnorm ----
typedef struct {
    gm_real *x, *rstd;
    int N, C;
    double eps;
} rn_ctx;
static void rn_fwd(void *c, gm_real *out) {
    rn_ctx *r = c;
    gm_backend_cpu()->rmsnorm_fwd(gm_backend_cpu(), gm_as_act(out), r->rstd, gm_as_act(r->x), r->N, r->C, r->eps);
}
static void rn_bwd(void *c, const gm_real *dout) {
    rn_ctx *r = c;
    gm_real *tmp = ALLOC(r->N * r->C);  // the forward recomputes rstd for the current x
    gm_backend_cpu()->rmsnorm_fwd(gm_backend_cpu(), gm_as_act(tmp), r->rstd, gm_as_act(r->x), r->N, r->C, r->eps);
    gm_backend_cpu()->rmsnorm_bwd(gm_backend_cpu(), gm_as_act(g_in[0].dx), GM_GRAD_ADD, gm_as_act(dout), gm_as_act(r->x), r->rstd, r->N, r->C);
    free(tmp);
}

Test(op_grads, rmsnorm) {
    double eps[2] = {1e-6, 1.1920928955078125e-07};
    for (int rep = 0; rep < 2; rep++) {
        uint64_t seed = 300 + rep;
        rn_ctx r = {NULL, NULL, rsize(seed, 0, 1, 9), rsize(seed, 1, 1, 33), eps[rep]};
        r.x = ALLOC(r.N * r.C), r.rstd = ALLOC(r.N);
        gc_randn(r.x, (size_t)r.N * r.C, 0.7, seed, 1);
        gc_input in[1] = {{"x", r.x, ALLOC(r.N * r.C), (size_t)r.N * r.C}};
        g_in = in;
        double err[1];
        gc_check((gc_fn){&r, (size_t)r.N * r.C, rn_fwd, rn_bwd, NULL}, in, 1, 400, seed, err);
        expect_all_below("rmsnorm", in, 1, err);
        free(r.x), free(r.rstd), free(in[0].dx);
    }
}

// ---- rotary ----
typedef struct {
    gm_real *x, *cos_t, *sin_t;
    int B, T, NH, HD;
} ro_ctx;
static void ro_fwd(void *c, gm_real *out) {
    ro_ctx *r = c;
    gm_backend_cpu()->rotary_fwd(gm_backend_cpu(), gm_as_act(out), gm_as_act(r->x), r->cos_t, r->sin_t, r->B, r->T, r->NH, r->HD,
                                 r->NH * r->HD);
}
static void ro_bwd(void *c, const gm_real *dout) {
    ro_ctx *r = c;
    gm_backend_cpu()->rotary_bwd(gm_backend_cpu(), gm_as_act(g_in[0].dx), GM_GRAD_ADD, gm_as_act(dout), r->cos_t, r->sin_t, r->B, r->T, r->NH, r->HD,
                                 r->NH * r->HD);
}

Test(op_grads, rotary) {
    uint64_t seed = 400;
    ro_ctx r = {NULL, NULL, NULL, 2, rsize(seed, 0, 3, 11), 3, 2 * rsize(seed, 1, 1, 5)};
    size_t n = (size_t)r.B * r.T * r.NH * r.HD, nt = (size_t)r.T * r.HD / 2;
    r.x = ALLOC(n), r.cos_t = ALLOC(nt), r.sin_t = ALLOC(nt);
    gc_randn(r.x, n, 1, seed, 1);
    for (size_t i = 0; i < nt; i++) {
        double th = 0.37 * (double)(i + 1);
        r.cos_t[i] = cos(th), r.sin_t[i] = sin(th);
    }
    gc_input in[1] = {{"x", r.x, ALLOC(n), n}};
    g_in = in;
    double err[1];
    gc_check((gc_fn){&r, n, ro_fwd, ro_bwd, NULL}, in, 1, 400, seed, err);
    expect_all_below("rotary", in, 1, err);
    free(r.x), free(r.cos_t), free(r.sin_t), free(in[0].dx);
}

// ---- attention ----
typedef struct {
    gm_real *q, *k, *v, *out, *lse;
    int B, T, NH, HD;
    gm_attn_mask mask;
} at_ctx;
static void at_fwd(void *c, gm_real *out) {
    at_ctx *a = c;
    gm_backend_cpu()->attn_fwd(gm_backend_cpu(), gm_as_act(out), a->lse, gm_as_act(a->q), gm_as_act(a->k), gm_as_act(a->v), a->B, a->T, a->NH, a->HD,
                               1.0 / sqrt(a->HD), a->mask);
}
static void at_bwd(void *c, const gm_real *dout) {
    at_ctx *a = c;
    at_fwd(a, a->out);
    gm_backend_cpu()->attn_bwd(gm_backend_cpu(), gm_as_act(g_in[0].dx), gm_as_act(g_in[1].dx), gm_as_act(g_in[2].dx), GM_GRAD_ADD, gm_as_act(dout), gm_as_act(a->q), gm_as_act(a->k), gm_as_act(a->v), gm_as_act(a->out),
                               a->lse, a->B, a->T, a->NH, a->HD, 1.0 / sqrt(a->HD), a->mask);
}

static void attn_case(uint64_t seed, int with_docs, int window_blocks) {
    at_ctx a = {0};
    a.B = 2, a.T = rsize(seed, 0, 9, 23), a.NH = 2, a.HD = rsize(seed, 1, 1, 6);
    size_t n = (size_t)a.B * a.T * a.NH * a.HD;
    a.q = ALLOC(n), a.k = ALLOC(n), a.v = ALLOC(n), a.out = ALLOC(n), a.lse = ALLOC(a.B * a.NH * a.T);
    gc_randn(a.q, n, 1, seed, 1), gc_randn(a.k, n, 1, seed, 2), gc_randn(a.v, n, 1, seed, 3);
    int32_t *ids = malloc(sizeof(int32_t) * a.B * a.T), *doc = malloc(sizeof(int32_t) * a.B * a.T);
    for (int i = 0; i < a.B * a.T; i++) ids[i] = gm_rng_u32(seed, 9, i) % 4 == 0 ? 0 : 1;  // EOT = 0, ~1 in 4
    gm_doc_ids(doc, ids, a.B, a.T, 0);
    a.mask = (gm_attn_mask){with_docs ? doc : NULL, 4, window_blocks};
    gc_input in[3] = {{"q", a.q, ALLOC(n), n}, {"k", a.k, ALLOC(n), n}, {"v", a.v, ALLOC(n), n}};
    g_in = in;
    double err[3];
    gc_check((gc_fn){&a, n, at_fwd, at_bwd, NULL}, in, 3, 300, seed, err);
    expect_all_below("attention", in, 3, err);
    for (int k = 0; k < 3; k++) free(in[k].dx);
    free(a.q), free(a.k), free(a.v), free(a.out), free(a.lse), free(ids), free(doc);
}

Test(op_grads, attention_causal) { attn_case(500, 0, 0); }
Test(op_grads, attention_docs_and_window) { attn_case(501, 1, 2); }
Test(op_grads, attention_window_only) { attn_case(502, 0, 1); }

// ---- activations ----
typedef struct {
    gm_real *x;
    size_t n;
    gm_act act;
} ac_ctx;
static void ac_fwd(void *c, gm_real *out) {
    ac_ctx *a = c;
    gm_backend_cpu()->act_fwd(gm_backend_cpu(), a->act, gm_as_act(out), gm_as_act(a->x), a->n);
}
static void ac_bwd(void *c, const gm_real *dout) {
    ac_ctx *a = c;
    gm_backend_cpu()->act_bwd(gm_backend_cpu(), a->act, gm_as_act(g_in[0].dx), GM_GRAD_ADD, gm_as_act(dout), gm_as_act(a->x), a->n);
}

Test(op_grads, gelu_and_relu2) {
    gm_act acts[2] = {GM_ACT_GELU, GM_ACT_RELU2};
    const char *names[2] = {"gelu", "relu2"};
    for (int k = 0; k < 2; k++) {
        ac_ctx a = {ALLOC(301), 301, acts[k]};
        gc_randn(a.x, a.n, 2, 600 + k, 1);
        gc_input in[1] = {{"x", a.x, ALLOC(a.n), a.n}};
        g_in = in;
        double err[1];
        gc_check((gc_fn){&a, a.n, ac_fwd, ac_bwd, NULL}, in, 1, 1000, 600 + k, err);
        expect_all_below(names[k], in, 1, err);
        free(a.x), free(in[0].dx);
    }
}

// ---- lincomb: x, y and both learnable scalars ----
typedef struct {
    gm_real *x, *y, *pa, *pb;
    double ca, cb;
    size_t n;
} lc_ctx;
static void lc_fwd(void *c, gm_real *out) {
    lc_ctx *l = c;
    gm_backend_cpu()->lincomb_fwd(gm_backend_cpu(), gm_as_act(out), l->ca, l->pa, gm_as_act(l->x), l->cb, l->pb, gm_as_act(l->y), l->n, 1, 1);
}
static void lc_bwd(void *c, const gm_real *dout) {
    lc_ctx *l = c;
    gm_backend_cpu()->lincomb_bwd(gm_backend_cpu(), gm_as_act(g_in[0].dx), GM_GRAD_ADD, gm_as_act(l->y ? g_in[1].dx : NULL), GM_GRAD_ADD, l->pa ? g_in[2].dx : NULL,
                                  l->pb ? g_in[3].dx : NULL, gm_as_act(dout), l->ca, l->pa, gm_as_act(l->x), l->cb, l->pb, gm_as_act(l->y), l->n, 1, 1);
}

Test(op_grads, lincomb) {
    size_t n = 9001;  // over two reduction chunks
    lc_ctx l = {ALLOC(n), ALLOC(n), ALLOC(1), ALLOC(1), 0.7, -1.3, n};
    gc_randn(l.x, n, 1, 700, 1), gc_randn(l.y, n, 1, 700, 2), gc_randn(l.pa, 1, 1, 700, 3),
        gc_randn(l.pb, 1, 1, 700, 4);
    gc_input in[4] = {
        {"x", l.x, ALLOC(n), n}, {"y", l.y, ALLOC(n), n}, {"a", l.pa, ALLOC(1), 1}, {"b", l.pb, ALLOC(1), 1}};
    g_in = in;
    double err[4];
    gc_check((gc_fn){&l, n, lc_fwd, lc_bwd, NULL}, in, 4, 300, 700, err);
    expect_all_below("lincomb", in, 4, err);
    // the single-term form (v = alpha0 * v in layers without a value embedding)
    lc_ctx l1 = {l.x, NULL, l.pa, NULL, 1.0, 0.0, n};
    double err1[3];
    gc_input in1[3] = {in[0], in[1], in[2]};  // dy stays untouched: its difference quotient is 0 too
    g_in = in1;
    gc_check((gc_fn){&l1, n, lc_fwd, lc_bwd, NULL}, in1, 3, 300, 701, err1);
    expect_all_below("lincomb single term", in1, 3, err1);
    for (int k = 0; k < 4; k++) free(in[k].x), free(in[k].dx);
}

// ---- softcap + cross-entropy (mean over rows) ----
typedef struct {
    gm_real *logits, *losses, *dl;
    int32_t *tg;
    int N, V;
    double cap;
} xe_ctx;
static void xe_fwd(void *c, gm_real *out) {
    xe_ctx *x = c;
    gm_backend_cpu()->xent_fwd_bwd(gm_backend_cpu(), x->losses, NULL, gm_as_act(x->logits), x->tg, x->N, x->V, x->cap, 0);
    double s = 0;
    for (int i = 0; i < x->N; i++) s += x->losses[i];
    out[0] = (gm_real)(s / x->N);
}
static void xe_bwd(void *c, const gm_real *dout) {
    xe_ctx *x = c;
    gm_backend_cpu()->xent_fwd_bwd(gm_backend_cpu(), x->losses, gm_as_act(x->dl), gm_as_act(x->logits), x->tg, x->N, x->V, x->cap,
                                   dout[0] / x->N);
    for (int i = 0; i < x->N * x->V; i++) g_in[0].dx[i] += x->dl[i];
}

Test(op_grads, softcap_cross_entropy) {
    double caps[3] = {0, 30, 15};
    for (int k = 0; k < 3; k++) {
        xe_ctx x = {0};
        x.N = 7, x.V = rsize(800 + k, 0, 5, 40), x.cap = caps[k];
        x.logits = ALLOC(x.N * x.V), x.losses = ALLOC(x.N), x.dl = ALLOC(x.N * x.V);
        x.tg = malloc(sizeof(int32_t) * x.N);
        gc_randn(x.logits, (size_t)x.N * x.V, 20, 800 + k, 1);  // large enough for tanh to bend
        for (int i = 0; i < x.N; i++) x.tg[i] = (int32_t)(gm_rng_u32(800 + k, 2, i) % (uint32_t)x.V);
        gc_input in[1] = {{"logits", x.logits, ALLOC(x.N * x.V), (size_t)x.N * x.V}};
        g_in = in;
        double err[1];
        gc_check((gc_fn){&x, 1, xe_fwd, xe_bwd, NULL}, in, 1, 1000, 800 + k, err);
        expect_all_below(k ? "softcap xent" : "xent", in, 1, err);
        free(x.logits), free(x.losses), free(x.dl), free(x.tg), free(in[0].dx);
    }
}
