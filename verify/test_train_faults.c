// A run that goes wrong stops where it did, with one line naming the step and the value or the
// fault: a non-finite train or validation loss (only NaN was checked: +inf trained on, and a NaN
// in validation printed an empty message) also ends the log with an "error" record and writes no
// checkpoint. (A resume on shards that changed since the checkpoint: test_resume_identity.c.)
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/run_config.h"
#include "helpers.h"

typedef void (*params_edit)(float *p, const gm_table *t);

// Copy checkpoint `from` to `to` with its parameters changed by edit; every other section as it
// was (gm_ckpt_write computes the checksums again).
static void rewrite_params(const char *dir, const char *preset, const char *from, const char *to, params_edit edit) {
    gm_run_config rc;
    char flags[4096];
    cr_assert_eq(gm_run_config_preset(&rc, preset, "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, ""));
    gm_model m;
    cr_assert_eq(gm_model_create(&m, &rc.model, gm_backend_cpu()), 0, "%s", gm_error());
    gm_ckpt c;
    cr_assert_eq(gm_ckpt_read(&c, from), 0, "%s", gm_error());
    size_t bytes = m.params.total * sizeof(float);
    const void *old = gm_ckpt_get(&c, "params", bytes);
    cr_assert_not_null(old, "%s", gm_error());
    float *p = malloc(bytes);
    memcpy(p, old, bytes);
    edit(p, &m.params);
    gm_ckpt_section s[64];
    cr_assert_leq(c.n, 64);
    for (int i = 0; i < c.n; i++) {
        s[i] = c.sections[i];
        if (!strcmp(s[i].name, "params")) s[i].data = p;
    }
    cr_assert_eq(gm_ckpt_write(to, s, c.n), 0, "%s", gm_error());
    gm_ckpt_close(&c);
    gm_model_free(&m);
    free(p);
}

static const gm_view *view(const gm_table *t, const char *name) {
    int i = gm_table_find(t, name);
    cr_assert_geq(i, 0, "no tensor %s", name);
    return &t->v[i];
}

// Every block's weights zero and every embedding row all ones, so the last hidden state is all
// ones at every position; head rows alternate +c and -c with C*c = 2.5e38: logits of +-2.5e38,
// finite, whose spread overflows float, so the loss of a target on a negative row is +inf.
static void infinite_logit_spread(float *p, const gm_table *t) {
    memset(p, 0, t->total * sizeof *p);
    const gm_view *e = view(t, "embed"), *h = view(t, "lm_head");
    for (size_t i = 0; i < e->numel; i++) p[e->offset + i] = 1.0f;
    const size_t rows = (size_t)h->shape[0], C = (size_t)h->shape[1];
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < C; j++) p[h->offset + r * C + j] = (r % 2 ? -2.5e38f : 2.5e38f) / (float)C;
}

// Finite parameters (a checkpoint with a NaN is refused at --resume) whose logits overflow: the
// same hidden state of ones, every head row +c with C*c = 1e39, so every logit is +inf and the
// loss's inf - inf is a NaN with the sign bit set, as x86 computes it: the message must still say
// "nan", not "-nan".
static void infinite_logits(float *p, const gm_table *t) {
    memset(p, 0, t->total * sizeof *p);
    const gm_view *e = view(t, "embed"), *h = view(t, "lm_head");
    for (size_t i = 0; i < e->numel; i++) p[e->offset + i] = 1.0f;
    for (size_t i = 0; i < h->numel; i++) p[h->offset + i] = (float)(1e39 / (double)h->shape[1]);
}

// The last line of a log.
static char *last_record(const char *log) {
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(log, &data, &len), 0, "%s", gm_error());
    cr_assert(len > 1 && data[len - 1] == '\n');
    data[len - 1] = '\0';
    char *nl = strrchr(data, '\n');
    char *last = strdup(nl ? nl + 1 : data);
    free(data);
    return last;
}

// Halt `preset` after `halt` steps, rewrite its checkpoint with edit, resume it into dir/bad: it
// must stop with exactly `message` and end its log with the matching error record.
static void stops_with(const char *preset, int halt, params_edit edit, const char *message) {
    char *dir = th_tmpdir(), *out, *err, extra[4400], from[4300], to[4300], want[1200];
    th_make_train_data(dir);
    snprintf(extra, sizeof extra, "--halt_at=%d", halt);
    cr_assert_eq(th_train(dir, preset, extra, &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(from, sizeof from, "%s/run/ckpt.bin", dir);
    snprintf(to, sizeof to, "%s/edited.bin", dir);
    rewrite_params(dir, preset, from, to, edit);
    snprintf(extra, sizeof extra, "--resume=%s --out_dir=%s/bad", to, dir);
    cr_assert_eq(th_train(dir, preset, extra, &out, &err), 1, "%s: the run went on: %s", preset, out);
    snprintf(want, sizeof want, "train: error: rank 0: %s\n", message);
    cr_assert_str_eq(err, want);
    snprintf(to, sizeof to, "%s/bad/log.jsonl", dir);
    char *last = last_record(to);
    int step = atoi(message + 5);
    snprintf(want, sizeof want, "{\"event\":\"error\",\"step\":%d,\"message\":\"%s\"}", step, message);
    cr_assert_str_eq(last, want);
    snprintf(to, sizeof to, "%s/bad/ckpt.bin", dir);
    cr_assert_not(th_file_exists(to), "a checkpoint of the diverged model was written");
    free(last), free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

Test(train_faults, an_infinite_train_loss_stops_the_run, .timeout = 120) {
    stops_with("untied", 2, infinite_logit_spread,
               "step 2: train loss is inf (not finite): training stopped, no checkpoint written for this step");
}

Test(train_faults, a_nan_validation_loss_is_named, .timeout = 120) {
    // Halted at 3, where validation runs (every 3 steps) before the step.
    stops_with("untied", 3, infinite_logits, "step 3: validation loss is nan (not finite): training stopped, no checkpoint written for this step");
}
