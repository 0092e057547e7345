// Record #43's Muon (modded-nanogpt records/track_1_short/2025-11-10_CautiousWD: Polar Express,
// NorMuon, cautious weight decay) and each change alone, run through gm_muon on the CPU backend
// (Newton-Schulz without bf16), against float64 trajectories written independently from the
// record's formulas (refdata/gen/normuon_ref.py): 4 steps on a square, a tall (4:1) and a wide (1:4)
// matrix with a learning-rate schedule and the momentum warmup; compared are each tensor's
// parameter change p_4 - p_0, momentum buffer and NorMuon second moments.
//
// Tolerance (relative, per tensor, in the 2-norm). The error is rounding in our own arithmetic
// (the reference is float64 in the same operations up to associativity) carried through 5
// Newton-Schulz iterations per step. One product of inner dimension k <= 32 commits at most k u
// relative error (u = 2^-53 in the fp64 build, 2^-24 in fp32); an iteration's polynomial can
// stretch an error in the direction of the smallest singular values by at most its slope at 0, the
// coefficient a, so 5 iterations by at most prod(a) (quintic 3.4445^5 = 487; Polar Express
// 8.16 * 4.04 * 3.89 * 3.29 * 2.35 = 989, so < 1000). Over 4 steps: 4 * 32 * 1000 * u = 1.3e5 u,
// 1.5e-11 (fp64) and 7.6e-3 (fp32); NorMuon's fp64 norms, its rescale and the update add a few u
// each, inside that. Measured (this commit): fp64 <= 9.7e-14, fp32 <= 3.2e-5. The bound is a worst
// case (it is what the singular values near 0 could suffer), so the fp32 bar is loose: the fp64
// build is the sharp check of the formulas, and every negative control lies above both bars.
// Negative controls: the same run compared with the reference of a slightly changed rule (NorMuon's
// beta2 0.95 -> 0.94, the other axis, the cautious mask's ">= 0" -> "> 0" and "<= 0", eff_wd
// multiplied by the shape scale, Polar Express's safety factor 1.02 -> 1.0) must miss the bar:
// each check can tell the record's rule from its neighbour.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "optim/muon.h"
#include "../helpers.h"

#ifdef GM_FP64
#define BAR 1.5e-11
#else
#define BAR 7.6e-3
#endif

enum { NT = 3, STEPS = 4, ZERO_K = 1, ZERO_ROW = 3 };
static const int SHAPE[NT][2] = {{8, 8}, {32, 8}, {8, 32}};
static const double LR_MULT[STEPS] = {1.0, 0.8, 0.55, 0.3};

// The formulas of normuon_ref.py, in double.
static double p0(size_t j, int k) { return 0.5 * sin(1.3 * (double)j + 0.7 * k); }
static double g_at(size_t j, int k, int t) {
    if (k == ZERO_K && (int)(j / (size_t)SHAPE[k][1]) == ZERO_ROW) return 0;
    return 0.1 * cos(0.9 * (double)j + 1.7 * k + 2.3 * t) + 0.01 * (t + 1);
}

typedef struct {
    const char *coeffs;
    int normuon, cautious;
    double wd;
} setting;

// Our state after STEPS steps, in the reference file's layout: parameters, momenta, second moments.
typedef struct {
    gm_opt_view views[NT];
    double *state;  // (params, momentum, v2) as double
    size_t total, v2n, nstate;
} run_out;

static void run(const setting *s, run_out *o) {
    size_t total = 0;
    for (int k = 0; k < NT; k++) {
        o->views[k] = (gm_opt_view){"t", total, SHAPE[k][0], SHAPE[k][1]};
        total += (size_t)SHAPE[k][0] * SHAPE[k][1];
    }
    gm_real *p = malloc(total * sizeof *p), *g = malloc(total * sizeof *g);
    for (int k = 0; k < NT; k++)
        for (size_t j = 0; j < gm_view_numel(&o->views[k]); j++) p[o->views[k].offset + j] = (gm_real)p0(j, k);
    gm_muon_hparams hp = {.lr = 0.05, .momentum = 0.95, .momentum_from = 0.85, .momentum_warmup = 3, .nesterov = 1,
                          .form = GM_MOMENTUM_EMA, .scale = GM_MUON_SCALE_ASPECT, .normuon = s->normuon, .beta2 = 0.95,
                          .weight_decay = s->wd, .cautious = s->cautious};
    hp.ortho.method = GM_ORTHO_NS;
    hp.ortho.coeffs = gm_ns_coeffs_find(s->coeffs);
    hp.ortho.steps = 5;
    cr_assert_not_null(hp.ortho.coeffs, "%s", gm_error());
    gm_muon m;
    cr_assert_eq(gm_muon_init(&m, gm_backend_cpu(), &hp, o->views, NT, NULL), 0, "%s", gm_error());
    for (int t = 0; t < STEPS; t++) {
        for (int k = 0; k < NT; k++)
            for (size_t j = 0; j < gm_view_numel(&o->views[k]); j++) g[o->views[k].offset + j] = (gm_real)g_at(j, k, t);
        cr_assert_eq(gm_muon_step(&m, p, g, LR_MULT[t], t, NULL), 0, "%s", gm_error());
    }
    cr_assert_eq(gm_backend_cpu()->sync(gm_backend_cpu()), 0, "%s", gm_error());
    o->total = total, o->v2n = m.v2_numel, o->nstate = 2 * total + m.v2_numel;
    o->state = malloc(o->nstate * sizeof *o->state);
    for (size_t i = 0; i < total; i++) o->state[i] = p[i], o->state[total + i] = m.buf[i];
    for (size_t i = 0; i < m.v2_numel; i++) o->state[2 * total + i] = m.v2[i];
    gm_muon_free(&m);
    free(p), free(g);
}

static double *read_ref(const char *name, size_t *n) {
    char path[256], *data;
    size_t len;
    snprintf(path, sizeof path, "refdata/normuon/%s.f64", name);
    cr_assert_eq(gm_read_all(th_root_path(path), &data, &len), 0, "%s", gm_error());
    *n = len / sizeof(double);
    return (double *)data;
}

static double rel2(const double *a, const double *b, const double *base, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double x = a[i] - (base ? base[i] : 0), y = b[i] - (base ? base[i] : 0);
        num += (x - y) * (x - y), den += y * y;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

// Worst per-tensor relative error of our run against reference `name`: of the parameter changes,
// the momenta and the second moments; of the parameter changes alone when the file's states have
// another size (a negative control with the other NorMuon axis), unless `need_states`.
static double worst_error(const run_out *o, const char *name, int need_states) {
    size_t n;
    double *ref = read_ref(name, &n), worst = 0;
    double *base = malloc(o->total * sizeof *base);
    for (int k = 0; k < NT; k++)
        for (size_t j = 0; j < gm_view_numel(&o->views[k]); j++) base[o->views[k].offset + j] = (double)(gm_real)p0(j, k);
    if (need_states) cr_assert_eq(n, o->nstate, "%s: %zu values, our state has %zu", name, n, o->nstate);
    cr_assert_geq(n, o->total, "%s: %zu values, fewer than the parameters (%zu)", name, n, o->total);
    const int states = n == o->nstate;
    for (int k = 0; k < NT; k++) {
        size_t at = o->views[k].offset, nk = gm_view_numel(&o->views[k]);
        double e = rel2(o->state + at, ref + at, base + at, nk);
        if (states) {
            double em = rel2(o->state + o->total + at, ref + o->total + at, NULL, nk);
            e = fmax(e, em);
        }
        worst = fmax(worst, e);
    }
    if (states && o->v2n) {
        // one tensor's second moments after another: lines of (rows > cols ? rows : cols)
        size_t at = 2 * o->total;
        for (int k = 0; k < NT; k++) {
            size_t lines = (size_t)(SHAPE[k][0] > SHAPE[k][1] ? SHAPE[k][0] : SHAPE[k][1]);
            worst = fmax(worst, rel2(o->state + at, ref + at, NULL, lines));
            at += lines;
        }
    }
    free(ref), free(base);
    return worst;
}

static void check(const setting *s, const char *name, const char *const *negatives) {
    run_out o;
    run(s, &o);
    double e = worst_error(&o, name, 1);
    cr_log_info("%s: worst relative error %.3g (bar %.3g)", name, e, BAR);
    cr_expect_lt(e, BAR, "%s: relative error %.3g over the bar %.3g", name, e, BAR);
    for (int i = 0; negatives && negatives[i]; i++) {
        double d = worst_error(&o, negatives[i], 0);
        cr_log_info("normuon_refdata %s vs %s: %.3g = %.3g x bar", name, negatives[i], d, d / BAR);
        cr_expect_gt(d, BAR, "%s: the changed rule %s is within the bar (%.3g): the check cannot tell them apart", name,
                     negatives[i], d);
    }
    free(o.state);
}

Test(normuon_refdata, record43_polar_express_normuon_cautious_wd) {
    static const char *const neg[] = {"rec43_neg_beta2", "rec43_neg_axis", "rec43_neg_mask_gt", "rec43_neg_mask_le",
                                      "rec43_neg_wd_scaled", NULL};
    check(&(setting){"polar-express", 1, 1, 1.2}, "rec43", neg);
}

Test(normuon_refdata, normuon_alone) { check(&(setting){"quintic", 1, 0, 0}, "normuon", NULL); }

Test(normuon_refdata, cautious_wd_alone) { check(&(setting){"quintic", 0, 1, 1.2}, "cautious_wd", NULL); }

Test(normuon_refdata, plain_wd) { check(&(setting){"quintic", 0, 0, 1.2}, "plain_wd", NULL); }

Test(normuon_refdata, polar_express_alone) {
    static const char *const neg[] = {"polar_express_neg_safety", NULL};
    check(&(setting){"polar-express", 0, 0, 0}, "polar_express", neg);
}
