// Recompute in the backward is a run-time choice (model.h gm_model_set_recompute, train
// --recompute=auto|on|off): keeping the blocks' elementwise inputs instead of recomputing them gives
// the same step bit for bit, a run may resume under the other choice, and auto says what it chose
// and why.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "helpers.h"
#include "model/model.h"
#include "train/run_config.h"

// Every preset at test scale: two steps with recompute off give the losses and parameter gradients
// of two steps with it on, bit for bit, and keep more activations.
Test(recompute, keeping_the_inputs_is_bitwise_recomputing_them) {
    for (const char *const *preset = gm_preset_names; *preset; preset++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, *preset, "test"), 0, "%s", gm_error());
        const int B = cfg.batch, T = cfg.seq_len, N = B * T;
        int32_t *ids = th_tokens((size_t)N + 1, cfg.vocab);
        gm_model m[2];
        for (int r = 0; r < 2; r++) {
            cr_assert_eq(gm_model_create(&m[r], &cfg, gm_backend_cpu()), 0, "%s", gm_error());
            cr_assert_eq(gm_model_init(&m[r], 9, GM_INIT_TEST), 0);
            gm_model_set_recompute(&m[r], r);
        }
        for (int step = 0; step < 2; step++) {
            double loss[2];
            for (int r = 0; r < 2; r++) loss[r] = gm_model_forward_backward(&m[r], ids, ids + 1, B, T, 1.0);
            cr_assert(isfinite(loss[1]) && loss[0] == loss[1], "%s step %d: losses %.17g (kept) and %.17g (recomputed)",
                      *preset, step, loss[0], loss[1]);
        }
        cr_expect_eq(memcmp(m[0].g, m[1].g, sizeof(gm_real) * m[0].params.total), 0,
                     "%s: parameter gradients differ between recompute off and on", *preset);
        gm_model_mem kept, recomputed;
        cr_assert_eq(gm_model_plan(&cfg, B, T, GM_HEAD_ROWS, 0, sizeof(gm_real), &kept), 0);
        cr_assert_eq(gm_model_plan(&cfg, B, T, GM_HEAD_ROWS, 1, sizeof(gm_real), &recomputed), 0);
        cr_expect_gt(kept.acts + kept.scratch, recomputed.acts + recomputed.scratch, "%s", *preset);
        gm_model_free(&m[0]), gm_model_free(&m[1]);
        free(ids);
    }
}

// train --plan_memory=1 names the choices: given, or what auto decided and from which figures.
Test(recompute, plan_memory_names_the_choice) {
    char *dir = th_tmpdir(), *out, *err;
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--plan_memory=1 --recompute=off --head_rows=3", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "\nmemory: recompute off (--recompute), head chunk 3 rows (--head_rows)\n"), "%s", out);
    free(out), free(err);
    cr_assert_eq(th_train(dir, "muon-v2", "--plan_memory=1", &out, &err), 0, "%s", err);
    // auto on a test model: off, and one chunk of all of the micro-batch's rows, since that fits
    int B = 0, T = 0;
    const char *bt = strstr(out, "(B ");
    cr_assert(bt && sscanf(bt, "(B %d x T %d", &B, &T) == 2, "%s", out);
    char expected[160];
    snprintf(expected, sizeof expected, "\nmemory: recompute off (auto), head chunk %d rows (auto); the plan, ", B * T);
    cr_expect(strstr(out, expected) && strstr(out, " GB, fits in the host memory the process may fill: "),
              "expected '%s' in: %s", expected + 1, out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// A run stopped under one choice resumes under the other and ends where an uninterrupted run ends.
Test(recompute, a_run_resumes_under_the_other_choice, .timeout = 240) {
    char *dir = th_tmpdir(), *out, *err, path[4200], log[4200];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--recompute=on", &out, &err), 0, "%s", err);
    free(out), free(err);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    char *whole = th_log_curve(log, 0);
    cr_assert_eq(th_train(dir, "muon-v2", "--recompute=on --halt_at=3 --overwrite=1", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(path, sizeof path, "--recompute=off --resume=%s/run/ckpt.bin", dir);
    cr_assert_eq(th_train(dir, "muon-v2", path, &out, &err), 0, "%s", err);
    free(out), free(err);
    char *resumed = th_log_curve(log, 0);
    cr_expect_str_eq(resumed, whole, "the resumed run's curve differs from the whole run's");
    free(whole), free(resumed);
    th_rmtree(dir);
    free(dir);
}
