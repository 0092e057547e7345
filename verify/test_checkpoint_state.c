// What is saved is held to what is loaded: one test of a checkpoint's state (train/trainer.c,
// check_state) refuses, on --resume, states no training produces (a negative second moment, an
// Adam step count or a step that disagrees with the loader's position, a step past --steps), naming
// the section and the fault; and a save whose state fails it stops the run with one line, keeping
// the previous checkpoint. (A finite but impossible state was resumed, the run said "done", and its
// final checkpoint held a NaN that its own resume then refused.)
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "model/params.h"
#include "train/run_config.h"
#include "train/trainer.h"
#include "helpers.h"

// normuon on the test model (4 layers): NorMuon's second moments and three Adam groups.
#define NORMUON_FLAGS "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64"

// Resuming ckpt with section `name` replaced by `data` must be refused with exactly
// "train: error: rank 0: --resume: <ckpt>: <fault>: no run writes this state ..." and leave no folder.
static void expect_impossible(const char *dir, const char *ckpt, const char *pristine, size_t len, const char *name,
                              const void *data, size_t bytes, const char *fault) {
    FILE *f = fopen(ckpt, "wb");
    cr_assert(f && fwrite(pristine, 1, len, f) == len && fclose(f) == 0);
    th_ckpt_replace(ckpt, name, data, bytes);
    char extra[4400], want[9000], path[4200], why[600];
    snprintf(extra, sizeof extra, NORMUON_FLAGS " --resume=%s --out_dir=%s/r", ckpt, dir);
    snprintf(want, sizeof want, "train: error: rank 0: --resume: %s: %s: no run writes this state (the file was changed, or "
             "written by a faulty build); it cannot be resumed\n", ckpt, fault);
    snprintf(path, sizeof path, "%s/r", dir);
    snprintf(why, sizeof why, "resuming a checkpoint whose %s holds %s", name, fault);
    th_expect_train_refused(dir, "normuon", extra, want, path, why);
}

Test(checkpoint_state, resume_refuses_states_no_training_produces, .timeout = 240) {
    char *dir = th_tmpdir(), *out, *err, ckpt[4200];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "normuon", NORMUON_FLAGS " --halt_at=3", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    char *pristine;
    size_t len, bytes;
    cr_assert_eq(gm_read_all(ckpt, &pristine, &len), 0, "%s", gm_error());

    gm_real *v = th_ckpt_section(ckpt, "adam.embed.v", &bytes);
    v[5] = -0.5f;
    expect_impossible(dir, ckpt, pristine, len, "adam.embed.v", v, bytes,
                      "adam.embed.v holds a negative value (-0.5) at element 5 (a second moment is an average of squares)");
    free(v);
    v = th_ckpt_section(ckpt, "muon.v2", &bytes);
    v[3] = -0.25f;
    expect_impossible(dir, ckpt, pristine, len, "muon.v2", v, bytes,
                      "muon.v2 holds a negative value (-0.25) at element 3 (a second moment is an average of squares)");
    free(v);
    long t = 1000000;
    expect_impossible(dir, ckpt, pristine, len, "adam.head.t", &t, sizeof t,
                      "adam.head.t is 1000000 at step 3 (every step steps each Adam group once)");
    // 3 steps of B x T = 4 x 64 tokens: the loader stands at token 768 of the first shard.
    long long step = 2;
    expect_impossible(dir, ckpt, pristine, len, "step", &step, sizeof step,
                      "loader position (shard 0, token 768) is not where 2 steps leave it (shard 0, token 512)");
    long long loader[2] = {1, 768};
    expect_impossible(dir, ckpt, pristine, len, "loader", loader, sizeof loader,
                      "loader position (shard 1, token 768) is not where 3 steps leave it (shard 0, token 768)");
    step = 7;
    expect_impossible(dir, ckpt, pristine, len, "step", &step, sizeof step, "step 7 is outside this run's 6 steps");
    free(pristine);
    th_rmtree(dir);
    free(dir);
}

// The CPU backend whose Adam step sets the second moment of one parameter element to -1 from its
// `corrupt_from`-th step of that element on: a fault no check inside the step sees. The element is
// in embedding row 0, which no batch reads (th_make_train_data has no token 0), so the loss stays
// finite while the parameter turns NaN (an update over sqrt(-1)).
static gm_backend corrupting;
static size_t target;
static int corrupt_from, target_steps;

static void adam_corrupting(const gm_backend *be, gm_real *p, const gm_real *g, gm_real *m, gm_real *v, int count,
                            const gm_adam_span *spans, const gm_adam_args *a) {
    gm_backend_cpu()->adam_update(be, p, g, m, v, count, spans, a);
    for (int i = 0; i < count; i++)
        if (target >= spans[i].offset && target < spans[i].offset + spans[i].n && ++target_steps >= corrupt_from)
            v[spans[i].state_offset + (target - spans[i].offset)] = -1;
}

// untied trained 4 steps with a checkpoint after 2 on the corrupting backend: the final save must
// fail with `fault` and keep the checkpoint of step 2, which resumes.
static void expect_save_refused(int from, const char *fault_fmt) {
    char *dir = th_tmpdir(), flags[4096], want[4096], path[4200];
    th_make_train_data(dir);
    const char *extra = "--steps=4 --ckpt_every=2 --val_every=0 --comm=single";
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "untied", "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, extra));
    cr_assert_eq(gm_run_config_finish(&rc), 0, "%s", gm_error());
    gm_table tab;
    gm_param_index pix;
    cr_assert_eq(gm_params_build(&rc.model, &tab, &pix), 0, "%s", gm_error());
    target = tab.v[pix.embed].offset + 3;  // embed[0, 3]
    corrupting = *gm_backend_cpu();
    corrupting.adam_update = adam_corrupting;
    corrupt_from = from, target_steps = 0;
    cr_assert_eq(gm_train(&rc, NULL, &corrupting, 0, NULL), -1, "the run saved a state it would refuse to resume");
    snprintf(want, sizeof want, fault_fmt, tab.v[pix.embed].name);
    cr_expect_str_eq(gm_error(), want);
    // The checkpoint of step 2 is kept, and resumes to the end.
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    size_t bytes;
    long long *step = th_ckpt_section(path, "step", &bytes);
    cr_expect_eq(*step, 2, "the kept checkpoint is of step %lld", *step);
    free(step);
    char *out, *err, resume[4400];
    snprintf(resume, sizeof resume, "%s --resume=%s", extra, path);
    cr_expect_eq(th_train(dir, "untied", resume, &out, &err), 0, "the kept checkpoint did not resume: %s", err);
    free(out), free(err);
    gm_table_free(&tab);
    th_rmtree(dir);
    free(dir);
}

Test(checkpoint_state, a_save_that_fails_the_check_stops_the_run_and_keeps_the_previous_checkpoint, .timeout = 240) {
    // v < 0 from step 2: step 3's update turns the parameter NaN, which the loss never reads.
    expect_save_refused(3, "step 4: checkpoint not written (an earlier one is kept as it was): params holds a non-finite "
                           "value (nan) at %s[0, 3] (element 3); the run has diverged where its loss does not show it");
    // v < 0 after the last step's update: the parameters are finite, the state is not one training makes.
    expect_save_refused(4, "step 4: checkpoint not written (an earlier one is kept as it was): adam.embed.v holds a "
                           "negative value (-1) at element 3 (a second moment is an average of squares); no training "
                           "reaches this state: a fault of this build");
}
