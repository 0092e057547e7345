// Optimizer steps against PyTorch: torch.optim.Adam / AdamW themselves, and a Muon written
// independently in refdata/gen/optim_ref.py. Three steps from the same formula-defined params and
// grads; every tensor must agree to 1e-5 relative (fp32).
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "helpers.h"

#ifndef GM_FP64  // the references are fp32 trajectories
enum { STEPS = 3, NT = 5 };
static const int SHAPE[NT][2] = {{5, 7}, {1, 3}, {12, 8}, {8, 12}, {24, 8}};

// The same formulas as optim_ref.py, in double, rounded to float.
static float p0(size_t j, int k) { return (float)(0.5 * sin(1.3 * (double)j + 0.7 * k)); }
static float g_at(size_t j, int k, int t) { return (float)(0.1 * cos(0.9 * (double)j + 1.7 * k + 2.3 * t) + 0.01 * (t + 1)); }

typedef struct {
    gm_opt_view views[NT];
    int n;
    float *p, *g;
    size_t total;
} problem;

// Tensors k in [first, NT), packed back to back. Tensor index k stays the formula's k.
static void setup(problem *pb, int first) {
    pb->n = 0;
    pb->total = 0;
    for (int k = first; k < NT; k++) {
        gm_opt_view v = {"t", pb->total, SHAPE[k][0], SHAPE[k][1]};
        pb->views[pb->n++] = v;
        pb->total += (size_t)SHAPE[k][0] * SHAPE[k][1];
    }
    pb->p = malloc(pb->total * sizeof(float));
    pb->g = malloc(pb->total * sizeof(float));
    for (int i = 0; i < pb->n; i++)
        for (size_t j = 0; j < gm_view_numel(&pb->views[i]); j++) pb->p[pb->views[i].offset + j] = p0(j, first + i);
}

static void fill_grads(problem *pb, int first, int t) {
    for (int i = 0; i < pb->n; i++)
        for (size_t j = 0; j < gm_view_numel(&pb->views[i]); j++) pb->g[pb->views[i].offset + j] = g_at(j, first + i, t);
}

static void compare(const problem *pb, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "refdata/optim/%s.f32", name);
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(th_root_path(path), &data, &len), 0, "%s", gm_error());
    cr_assert_eq(len, pb->total * sizeof(float), "%s: %zu bytes, expected %zu", path, len, pb->total * sizeof(float));
    const float *ref = (const float *)data;
    for (int i = 0; i < pb->n; i++) {
        size_t at = pb->views[i].offset;
        double rel = th_rel_err(pb->p + at, ref + at, gm_view_numel(&pb->views[i]));
        cr_assert_lt(rel, 1e-5, "%s: tensor %d relative error %.3g", name, i, rel);
    }
    free(data);
}

static void adam_case(const char *name, gm_adam_hparams hp) {
    problem pb;
    setup(&pb, 0);
    gm_adam a;
    cr_assert_eq(gm_adam_init(&a, gm_backend_cpu(), &hp, pb.views, pb.n), 0);
    for (int t = 0; t < STEPS; t++) {
        fill_grads(&pb, 0, t);
        gm_adam_step(&a, pb.p, pb.g, 1.0);
    }
    compare(&pb, name);
    gm_adam_free(&a);
    free(pb.p), free(pb.g);
}

Test(optim_refdata, adamw_matches_torch) {
    gm_adam_hparams hp = {.lr = 0.0018, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .normalize_grad = 1};
    adam_case("adamw", hp);
}

Test(optim_refdata, adam_matches_torch) {
    gm_adam_hparams hp = {.lr = 0.6, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-8};
    adam_case("adam", hp);
}

static void muon_case(const char *name, gm_muon_hparams hp) {
    problem pb;
    setup(&pb, 2);  // the three matrices
    hp.ortho.method = GM_ORTHO_NS;
    hp.ortho.coeffs = gm_ns_coeffs_find("quintic");
    hp.ortho.steps = 5;
    cr_assert_not_null(hp.ortho.coeffs, "%s", gm_error());
    gm_muon m;
    cr_assert_eq(gm_muon_init(&m, gm_backend_cpu(), &hp, pb.views, pb.n, NULL), 0);
    for (int t = 0; t < STEPS; t++) {
        fill_grads(&pb, 2, t);
        cr_assert_eq(gm_muon_step(&m, pb.p, pb.g, 1.0, t, NULL), 0, "%s", gm_error());
    }
    compare(&pb, name);
    gm_muon_free(&m);
    free(pb.p), free(pb.g);
}

Test(optim_refdata, muon_record4_matches_reference) {
    gm_muon_hparams hp = {.lr = 0.0036, .momentum = 0.95, .nesterov = 1, .form = GM_MOMENTUM_SUM, .scale = GM_MUON_SCALE_SQRT_MAX, .split_qkv = 1};
    muon_case("muon_sum_sqrtmax_qkv", hp);
}

Test(optim_refdata, muon_ema_aspect_matches_reference) {
    gm_muon_hparams hp = {.lr = 0.05, .momentum = 0.9, .nesterov = 1, .form = GM_MOMENTUM_EMA, .scale = GM_MUON_SCALE_ASPECT};
    muon_case("muon_ema_aspect", hp);
}

Test(optim_refdata, orthogonal_sgd_without_nesterov_matches_reference) {
    gm_muon_hparams hp = {.lr = 0.018, .momentum = 0.95, .nesterov = 0, .form = GM_MOMENTUM_SUM, .scale = GM_MUON_SCALE_NONE};
    muon_case("muon_sum_plain", hp);
}
#endif
