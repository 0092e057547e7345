// Write-first backward (gm_grad_write, backend.h): a backward kernel asked to SET an activation
// gradient never reads the buffer, and gives what adding into zeros gave; the model's backward
// sets every activation-gradient buffer before it reads or adds into it, so it needs no zero-fill.
//
// -0 and +0: SET stores the computed value, so where it is -0 the result is -0 while zero-then-add
// gave +0 (+0 + -0 = +0). The kernel comparisons therefore use == on values (-0 == +0) and count
// any NaN as a difference; the model comparison is bitwise, both sides taking the same path.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/rng.h"
#include "helpers.h"
#include "model/model.h"
#include "train/run_config.h"

static gm_real *randn(size_t n, uint64_t stream) {
    gm_real *x = malloc(sizeof *x * n);
    cr_assert(x);
    for (size_t i = 0; i < n; i++) x[i] = (gm_real)gm_rng_normal(23, stream, i);
    return x;
}

static gm_real *filled(size_t n, gm_real value) {
    gm_real *x = malloc(sizeof *x * n);
    cr_assert(x);
    for (size_t i = 0; i < n; i++) x[i] = value;
    return x;
}

// set (written over NaN) == added (written over zeros), value by value.
static void expect_same_values(const char *what, const gm_real *set, const gm_real *added, size_t n) {
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (!(set[i] == added[i])) bad++, first = first < n ? first : i;
    cr_expect_eq(bad, 0, "%s: %zu of %zu values differ between SET over NaN and ADD over zeros (first at %zu: %g vs %g)",
                 what, bad, n, first, first < n ? (double)set[first] : 0, first < n ? (double)added[first] : 0);
}

// added (over prior) == prior + set, bit for bit: an elementwise kernel rounds its value once,
// then the addition once.
static void expect_prior_plus(const char *what, const gm_real *added, const gm_real *prior, const gm_real *set,
                              size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const gm_real sum = prior[i] + set[i];
        bad += memcmp(&added[i], &sum, sizeof sum) != 0;
    }
    cr_expect_eq(bad, 0, "%s: %zu of %zu values of ADD over a prior are not prior + SET", what, bad, n);
}

// One backward kernel's output written three ways: SET over NaN, ADD over zeros, ADD over a prior.
typedef struct {
    gm_real *set, *zero, *prior, *prior0;
    size_t n;
} three;

static three three_new(size_t n, uint64_t stream) {
    three t = {filled(n, NAN), filled(n, 0), randn(n, stream), NULL, n};
    t.prior0 = malloc(sizeof(gm_real) * n);
    cr_assert(t.prior0);
    memcpy(t.prior0, t.prior, sizeof(gm_real) * n);
    return t;
}

static void three_check(const char *what, three *t, int elementwise) {
    expect_same_values(what, t->set, t->zero, t->n);
    if (elementwise) expect_prior_plus(what, t->prior, t->prior0, t->set, t->n);
    free(t->set), free(t->zero), free(t->prior), free(t->prior0);
}

// The buffer of three's pass p (0 SET, 1 ADD over zeros, 2 ADD over the prior), and its mode.
static gm_real *pass_buf(const three *t, int p) { return p == 0 ? t->set : p == 1 ? t->zero : t->prior; }
static gm_grad_write pass_mode(int p) { return p == 0 ? GM_GRAD_SET : GM_GRAD_ADD; }

Test(grad_write, every_backward_kernel_sets_without_reading) {
    const gm_backend *be = gm_backend_cpu();
    enum { B = 2, T = 40, NH = 3, HD = 8, C = NH * HD, OC = 17 };
    const int N = B * T;
    const size_t NC = (size_t)N * C, NO = (size_t)N * OC;
    gm_real *x = randn(NC, 1), *dout = randn(NC, 2), *y = randn(NC, 3), *W = randn((size_t)OC * C, 4);
    gm_real *dmo = randn(NO, 5), *ct = randn((size_t)T * HD / 2, 6), *st = randn((size_t)T * HD / 2, 7);
    gm_real *rstd = filled(N, 0), *out = filled(NC, 0), *lse = filled((size_t)B * NH * T, 0), pa = 0.75f, pb = -1.5f;
    be->rmsnorm_fwd(be, gm_as_act(out), rstd, gm_as_act(x), N, C, 1e-6);
    gm_real *hrstd = filled((size_t)N * NH, 0);  // per head row, for the fused QK-norm and rotary
    be->qknorm_rotary_fwd(be, gm_as_act(out), hrstd, gm_as_act(x), ct, st, B, T, NH, HD, NH * HD, 1e-6);

    three mm = three_new(NC, 10), rn = three_new(NC, 11), ro = three_new(NC, 12), ac = three_new(NC, 13);
    three lx = three_new(NC, 14), ly = three_new(NC, 15), qr = three_new(NC, 16);
    for (int p = 0; p < 3; p++) {
        const gm_grad_write w = pass_mode(p);
        be->matmul_bwd(be, gm_as_act(pass_buf(&mm, p)), w, NULL, gm_as_act(dmo), gm_as_act(x), W, N, C, OC);
        be->rmsnorm_bwd(be, gm_as_act(pass_buf(&rn, p)), w, gm_as_act(dout), gm_as_act(x), rstd, N, C);
        be->rotary_bwd(be, gm_as_act(pass_buf(&ro, p)), w, gm_as_act(dout), ct, st, B, T, NH, HD, NH * HD);
        be->act_bwd(be, GM_ACT_GELU, gm_as_act(pass_buf(&ac, p)), w, gm_as_act(dout), gm_as_act(x), NC);
        be->qknorm_rotary_bwd(be, gm_as_act(pass_buf(&qr, p)), w, gm_as_act(dout), gm_as_act(x), hrstd, ct, st, B, T, NH, HD, NH * HD);
        // dx set while dy adds, then the other way round: the two outputs' modes are independent.
        be->lincomb_bwd(be, gm_as_act(pass_buf(&lx, p)), w, gm_as_act(pass_buf(&ly, 2 - p)), pass_mode(2 - p), NULL, NULL,
                        gm_as_act(dout), 1, &pa, gm_as_act(x), 1, &pb, gm_as_act(y), NC, 1, 1);
    }
    cr_assert_eq(be->sync(be), 0, "%s", gm_error());
    three_check("matmul_bwd dinp", &mm, 0);
    three_check("rmsnorm_bwd", &rn, 1);
    three_check("rotary_bwd", &ro, 1);
    three_check("act_bwd", &ac, 1);
    three_check("qknorm_rotary_bwd", &qr, 1);
    three_check("lincomb_bwd dx", &lx, 1);
    three_check("lincomb_bwd dy", &ly, 1);

    // attention: dq, dk, dv under one mode (documents and a window: every mask path)
    const gm_real *q = x, *k = y, *v = dout;
    int32_t doc[B * T];
    for (int i = 0; i < B * T; i++) doc[i] = i / 13;
    const gm_attn_mask mask = {doc, 8, 2};
    be->attn_fwd(be, gm_as_act(out), lse, gm_as_act(q), gm_as_act(k), gm_as_act(v), B, T, NH, HD, 0.35, mask);
    three dq = three_new(NC, 20), dk = three_new(NC, 21), dv = three_new(NC, 22);
    for (int p = 0; p < 2; p++)
        be->attn_bwd(be, gm_as_act(pass_buf(&dq, p)), gm_as_act(pass_buf(&dk, p)), gm_as_act(pass_buf(&dv, p)), pass_mode(p), gm_as_act(y), gm_as_act(q), gm_as_act(k), gm_as_act(v), gm_as_act(out), lse, B, T,
                     NH, HD, 0.35, mask);
    cr_assert_eq(be->sync(be), 0, "%s", gm_error());
    three_check("attn_bwd dq", &dq, 0);
    three_check("attn_bwd dk", &dk, 0);
    three_check("attn_bwd dv", &dv, 0);
    gm_real *host[] = {x, dout, y, W, dmo, ct, st, rstd, hrstd, out, lse};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

// Every preset at test scale: a training step whose activation-gradient memory is all NaN beforehand
// gives, bit for bit, the parameter gradients of a fresh model's step (which never held NaN). A
// buffer read before it was written would carry NaN into them.
Test(grad_write, backward_needs_no_zeroed_gradient_memory) {
    for (const char *const *preset = gm_preset_names; *preset; preset++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, *preset, "test"), 0, "%s", gm_error());
        const int B = cfg.batch, T = cfg.seq_len, N = B * T;
        int32_t *ids = th_tokens((size_t)N + 1, cfg.vocab);
        gm_model fresh, poisoned;
        const gm_backend *be = gm_backend_cpu();
        cr_assert_eq(gm_model_create(&fresh, &cfg, be), 0, "%s", gm_error());
        cr_assert_eq(gm_model_create(&poisoned, &cfg, be), 0, "%s", gm_error());
        cr_assert_eq(gm_model_init(&fresh, 5, GM_INIT_TEST), 0);
        cr_assert_eq(gm_model_init(&poisoned, 5, GM_INIT_TEST), 0);
        gm_model_set_window(&fresh, 2), gm_model_set_window(&poisoned, 2);
        cr_assert(isfinite(gm_model_forward_backward(&poisoned, ids, ids + 1, B, T, 1.0)), "%s", gm_error());
        be->fill(be, gm_as_real(poisoned.da), NAN, poisoned.dacts.total);
        gm_model_zero_grad(&poisoned);
        const double l1 = gm_model_forward_backward(&poisoned, ids, ids + 1, B, T, 1.0);
        const double l0 = gm_model_forward_backward(&fresh, ids, ids + 1, B, T, 1.0);
        cr_assert(isfinite(l0) && l1 == l0, "%s: losses %g and %g", *preset, l0, l1);
        size_t bad = 0, nonfinite = 0;
        for (size_t i = 0; i < fresh.params.total; i++) {
            bad += memcmp(&fresh.g[i], &poisoned.g[i], sizeof(gm_real)) != 0;
            nonfinite += !isfinite(poisoned.g[i]);
        }
        cr_expect_eq(bad, 0, "%s: %zu of %zu parameter gradients differ after a step over NaN-filled memory (%zu not finite)",
                     *preset, bad, fresh.params.total, nonfinite);
        gm_model_free(&fresh), gm_model_free(&poisoned);
        free(ids);
    }
}
