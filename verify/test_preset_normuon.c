// The normuon preset is record #43's optimizer (modded-nanogpt records/track_1_short/
// 2025-11-10_CautiousWD, the code printed at the top of its 10 logs, e.g.
// 1aac0132-a891-4ed9-b358-0fd2abd1b019.txt; line numbers below are that file's) on softcap's model
// and budget: its configuration holds the record's numbers, its schedules give the record's
// formulas at every step, and against softcap it differs in exactly the optimizer fields
// (refdata/records/PRESETS.md section 9).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "optim/schedule.h"
#include "train/run_config.h"

static gm_run_config preset(const char *name, const char *scale) {
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, name, scale), 0, "%s", gm_error());
    cr_assert_eq(gm_run_config_finish(&rc), 0, "%s", gm_error());
    return rc;
}

Test(preset_normuon, holds_the_records_numbers_at_full_scale) {
    const gm_run_config rc = preset("normuon", "full");
    // NorMuon(..., lr=0.03, momentum=0.95, beta2=0.95, weight_decay=1.2) (line 1302); the mask
    // (v * p) >= 0 (line 610); lerp momentum with the Nesterov lerp (lines 555-556) is our EMA form.
    cr_expect_eq(rc.matrix_opt, GM_MATRIX_MUON);
    cr_expect_eq(rc.lr_matrix, 0.03);
    cr_expect_eq(rc.muon.lr, 0.03);
    cr_expect_eq(rc.muon.normuon, 1);
    cr_expect_eq(rc.muon.beta2, 0.95);
    cr_expect_eq(rc.muon.weight_decay, 1.2);
    cr_expect_eq(rc.muon.cautious, 1);
    cr_expect_eq(rc.muon.form, GM_MOMENTUM_EMA);
    cr_expect_eq(rc.muon.nesterov, 1);
    // param_lr = sqrt(max(1, rows / cols)) * lr_mul on the stored shapes, our ASPECT (PRESETS.md 2.10).
    cr_expect_eq(rc.muon.scale, GM_MUON_SCALE_ASPECT);
    // polar_express (lines 368-404): bf16 X, X / (1.02 ||X|| + 1e-6), its 5 triples.
    cr_expect_str_eq(rc.ns_coeffs, "polar-express");
    cr_assert_not_null(rc.muon.ortho.coeffs);
    cr_expect_str_eq(rc.muon.ortho.coeffs->name, "polar-express");
    cr_expect_eq(rc.muon.ortho.coeffs->ntriples, 5);
    cr_expect_eq(rc.muon.ortho.coeffs->norm_scale, 1.02);
    cr_expect_eq(rc.muon.ortho.coeffs->norm_eps, 1e-6);
    cr_expect_eq(rc.muon.ortho.method, GM_ORTHO_NS);
    cr_expect_eq(rc.muon.ortho.steps, 5);
    cr_expect_eq(rc.muon.ortho.bf16, 1);
    cr_expect_eq(rc.muon.ortho.norm_src, GM_NS_NORM_OF_X);
    // get_muon_momentum(muon_warmup_steps=300, muon_cooldown_steps=50, momentum_min=0.85,
    // momentum_max=0.95) (line 1328): the record's step counts at full scale.
    cr_expect_eq(rc.muon.momentum_from, 0.85);
    cr_expect_eq(rc.muon.momentum, 0.95);
    cr_expect_eq(rc.muon.momentum_warmup, 300);
    cr_expect_eq(rc.muon.momentum_cooldown, 50);
    // cooldown_frac 0.50 (line 1214), lr = w + (1 - w) 0.1 (line 1315).
    cr_expect_eq(rc.lr.kind, GM_LR_COOLDOWN_FRAC);
    cr_expect_eq(rc.lr.cooldown_frac, 0.5);
    cr_expect_eq(rc.lr.floor, 0.1);
    // DistAdam(lr=0.008, betas=(0.65, 0.95), eps=1e-8, weight_decay=0.0) (lines 1295-1301); lr_mul
    // 75 for embed and value_embeds, 1 for lm_head, 5 for scalars (lines 948-952). The products
    // are exact in double (0.008 * 75 == 0.6, 0.008 * 5 == 0.04).
    cr_expect_eq(rc.adam.beta1, 0.65);
    cr_expect_eq(rc.adam.beta2, 0.95);
    cr_expect_eq(rc.adam.eps, 1e-8);
    cr_expect_eq(rc.adam.weight_decay, 0.0);
    cr_expect_eq(rc.adam.normalize_grad, 0);
    cr_expect_eq(rc.lr_embed, 0.008 * 75);
    cr_expect_eq(rc.lr_head, 0.008 * 1);
    cr_expect_eq(rc.lr_scalar, 0.008 * 5);
    // Softcap's budget (record #18's 1390 steps of one 65536-token sequence per GPU).
    cr_expect_eq(rc.steps, 1390);
    cr_expect_eq(rc.model.seq_len, 65536);
    cr_expect_eq(rc.model.batch, 1);
}

// The record's get_lr (lines 1309-1316) and get_muon_momentum (lines 1328-1340), written as it
// writes them with its step count N = the preset's 1390, at every step of the full-scale run. The
// lr is the same arithmetic (w * 1.0 is w), so equal bit for bit; the momentum's warmup is
// min + f (max - min) there and (1 - f) min + f max here: a few roundings of numbers below 1 apart,
// so within 4 units of 2^-53 (4.4e-16; bar 1e-15).
static double record_lr(int step, int N) {
    double x = fmin(0.9999, (double)step / N), lr = 1.0;
    if (x >= 1 - 0.5) {
        const double w = (1 - x) / 0.5;
        lr = w * 1.0 + (1 - w) * 0.1;
    }
    return lr;
}

static double record_momentum(int step, int N) {
    const int warmup = 300, cooldown = 50, cd_start = N - cooldown;
    if (step < warmup) return 0.85 + (double)step / warmup * (0.95 - 0.85);
    if (step > cd_start) return 0.95 - (double)(step - cd_start) / cooldown * (0.95 - 0.85);
    return 0.95;
}

Test(preset_normuon, schedules_are_the_records_formulas_at_every_step) {
    const gm_run_config rc = preset("normuon", "full");
    const int N = rc.steps;
    for (int s = 0; s < N; s++) {
        cr_expect_eq(gm_lr_mult(&rc.lr, s), record_lr(s, N), "step %d: lr %.17g, record %.17g", s, gm_lr_mult(&rc.lr, s),
                     record_lr(s, N));
        const double mu = gm_momentum_at(rc.muon.momentum_from, rc.muon.momentum, rc.muon.momentum_warmup,
                                         rc.muon.momentum_cooldown, N, s);
        cr_expect(fabs(mu - record_momentum(s, N)) <= 1e-15, "step %d: momentum %.17g, record %.17g", s, mu,
                  record_momentum(s, N));
    }
    // Other scales keep the shape: 300/1390 and 50/1390 of their steps (test: 200 -> 43 and 7).
    const gm_run_config t = preset("normuon", "test");
    cr_expect_eq(t.muon.momentum_warmup, 43);
    cr_expect_eq(t.muon.momentum_cooldown, 7);
}

// Against softcap, at every scale: the model, the data, the steps and the validation are the
// same, and exactly these optimizer fields differ (50 / 1390 = 0.03597122302158273 is the
// momentum cooldown's fraction) (a model change, or an optimizer field the row
// forgot or added, changes the list).
Test(preset_normuon, differs_from_softcap_only_in_the_optimizer) {
    for (const char *const *scale = gm_scale_names; *scale; scale++) {
        gm_run_config a = preset("softcap", *scale), b = preset("normuon", *scale);
        char *ja = gm_run_config_json(&a), *jb = gm_run_config_json(&b), diff[2048], want[1024];
        gm_run_config_diff(ja, jb, diff, sizeof diff);
        snprintf(want, sizeof want,
                 "preset (\"softcap\" -> \"normuon\"), cooldown_frac (0.4 -> 0.5), lr_floor (0 -> 0.1), lr_matrix (0.05 -> "
                 "0.03), adam_beta1 (0.8 -> 0.65), muon_momentum_cooldown_frac (0 -> 0.03597122302158273), ns_coeffs "
                 "(\"quintic\" -> \"polar-express\"), normuon (0 -> 1), muon_wd (0 -> 1.2), cautious_wd (0 -> 1), out_dir "
                 "(\"runs/softcap-%s\" -> \"runs/normuon-%s\")",
                 *scale, *scale);
        cr_expect_str_eq(diff, want, "%s scale:\n got  %s\n want %s", *scale, diff, want);
        free(ja), free(jb);
    }
}
