// The timing backend records what the real trainer calls: a few training steps through it give
// the CPU backend's results bit for bit, one orthogonalize call per step, one momentum call per
// Muon matrix per step, and calls priced by backend/cost.h (a matmul at the model's shape costs
// 2 N C OC); an error a kernel records inside a timed call reaches the caller's sync.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/timing/timing.h"
#include "base/error.h"
#include "model/params.h"
#include "train/run_config.h"
#include "train/trainer.h"
#include "helpers.h"

enum { STEPS = 3 };

static gm_real *train(const gm_backend *be, const char *dir, double *loss, size_t *n, gm_run_config *rc) {
    char flags[4096], extra[512];
    // One out_dir per backend: a folder that holds a run is not written again.
    snprintf(extra, sizeof extra, "--steps=%d --val_every=0 --comm=single --n_value_embeds=2 --skip_attn_mask=4 --out_dir=%s/%s",
             STEPS, dir, be->name);
    cr_assert_eq(gm_run_config_preset(rc, "softcap", "tiny"), 0, "%s", gm_error());
    th_apply_flags(rc, th_test_flags(flags, sizeof flags, dir, extra));
    cr_assert_eq(gm_run_config_finish(rc), 0, "%s", gm_error());
    gm_train_result res = {0};
    res.train_loss = loss;
    res.params_len = *n = gm_train_params_len(rc, gm_backend_cpu());
    res.params = malloc(*n * sizeof(gm_real));
    cr_assert_eq(gm_train(rc, NULL, be, 0, &res), 0, "%s: %s", be->name, gm_error());
    return res.params;
}

static long calls_of(const gm_timing *t, const char *op) {
    long n = 0;
    for (int i = 0; i < gm_timing_count(t); i++)
        if (!strcmp(gm_timing_at(t, i)->op, op)) n += gm_timing_at(t, i)->calls;
    return n;
}

Test(timing_backend, records_the_real_step_and_changes_nothing, .timeout = 120) {
    char *dir = th_tmpdir();
    th_make_train_data(dir);
    gm_run_config rc;
    double la[STEPS], lb[STEPS];
    size_t na, nb;
    gm_real *a = train(gm_backend_cpu(), dir, la, &na, &rc);
    gm_timing *t = gm_timing_open(gm_backend_cpu());
    cr_assert_not_null(t);
    gm_real *b = train(gm_timing_backend(t), dir, lb, &nb, &rc);
    cr_assert(memcmp(la, lb, sizeof la) == 0 && na == nb && memcmp(a, b, na * sizeof(gm_real)) == 0,
              "training through the timing backend changed the results");
    // Muon: one orthogonalize call per step, one momentum call per block matrix per step.
    int matrices = 0;
    gm_table params;
    gm_param_index pix;
    cr_assert_eq(gm_params_build(&rc.model, &params, &pix), 0);
    for (int i = 0; i < params.n; i++) matrices += params.v[i].group == GM_GROUP_MATRIX;
    gm_table_free(&params);
    cr_assert_eq(calls_of(t, "orthogonalize"), STEPS);
    cr_assert_eq(calls_of(t, "momentum"), (long)STEPS * matrices, "%ld momentum calls for %d matrices",
                 calls_of(t, "momentum"), matrices);
    cr_assert_gt(calls_of(t, "adam_update"), 0);
    cr_assert_gt(calls_of(t, "attn_bwd"), 0);
    // The MLP's first matmul at the test model's shape: N = 4 x 64 tokens, C = 64, H = 128.
    int found = 0;
    for (int i = 0; i < gm_timing_count(t); i++) {
        const gm_timing_record *r = gm_timing_at(t, i);
        if (strcmp(r->op, "matmul_fwd") || strcmp(r->cost.shape, "256x64 @ 128x64^T")) continue;
        found = 1;
        cr_assert_eq(r->cost.flops, 2.0 * 256 * 64 * 128);
        for (long c = 0; c < r->calls; c++) cr_assert(r->ms[c] >= 0 && isfinite(r->ms[c]));
    }
    cr_assert(found, "no matmul_fwd at 256x64 @ 128x64^T recorded");
    gm_timing_close(t);
    free(a), free(b);
    th_rmtree(dir);
    free(dir);
}

Test(timing_backend, kernel_errors_reach_the_callers_sync) {
    gm_timing *t = gm_timing_open(gm_backend_cpu());
    const gm_backend *be = gm_timing_backend(t);
    gm_real G[6] = {1, 2, 3, 4, NAN, 6}, out[6];
    gm_ortho cfg = {.method = GM_ORTHO_SVD};
    gm_ortho_item item = {"h.0.attn.c_q", out, G, 2, 3, 1.0};
    be->orthogonalize(be, &cfg, 1, &item);
    cr_assert_eq(be->sync(be), -1);
    cr_assert(strstr(gm_error(), "h.0.attn.c_q") && strstr(gm_error(), "non-finite"), "%s", gm_error());
    cr_assert_eq(be->sync(be), 0, "the error was reported twice: %s", gm_error());
    gm_timing_close(t);
}
