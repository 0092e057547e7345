// Record #43's Muon in the trainer: NorMuon's second moments are optimizer state, so a run halted
// and resumed is bitwise the run that went through (the parameters and the muon.v2 section of the
// final checkpoints are equal); a checkpoint written without NorMuon cannot resume a --normuon=1
// run (one line naming the difference).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "train/checkpoint.h"
#include "helpers.h"

#define SOFTCAP "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64 "
#define REC43 SOFTCAP "--normuon=1 --muon_wd=1.2 --cautious_wd=1 --ns_coeffs=polar-express"

static void expect_same_section(const char *a, const char *b, const char *name) {
    gm_ckpt x, y;
    cr_assert_eq(gm_ckpt_read(&x, a), 0, "%s", gm_error());
    cr_assert_eq(gm_ckpt_read(&y, b), 0, "%s", gm_error());
    size_t nx, ny;
    const void *px = gm_ckpt_get_any(&x, name, &nx), *py = gm_ckpt_get_any(&y, name, &ny);
    cr_assert(px && py, "%s", gm_error());
    cr_assert_eq(nx, ny, "%s: %zu vs %zu bytes", name, nx, ny);
    cr_expect_eq(memcmp(px, py, nx), 0, "%s differs between the resumed run and the one that went through", name);
    gm_ckpt_close(&x), gm_ckpt_close(&y);
}

Test(normuon_train, halted_and_resumed_is_bitwise_the_run, .timeout = 240) {
    char *dir = th_tmpdir(), *out, *err, extra[4400], a[4300], b[4300];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "softcap", REC43, &out, &err), 0, "%s", err);
    free(out), free(err);
    snprintf(extra, sizeof extra, REC43 " --halt_at=3 --out_dir=%s/h", dir);
    cr_assert_eq(th_train(dir, "softcap", extra, &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(extra, sizeof extra, REC43 " --resume=%s/h/ckpt.bin --out_dir=%s/r", dir, dir);
    cr_assert_eq(th_train(dir, "softcap", extra, &out, &err), 0, "%s", err);
    free(out), free(err);
    snprintf(a, sizeof a, "%s/run/ckpt.bin", dir);
    snprintf(b, sizeof b, "%s/r/ckpt.bin", dir);
    expect_same_section(a, b, "params");
    expect_same_section(a, b, "muon.v2");
    th_rmtree(dir);
    free(dir);
}

Test(normuon_train, a_checkpoint_without_normuon_is_refused, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, extra[4400];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "softcap", SOFTCAP "--halt_at=2", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(extra, sizeof extra, SOFTCAP "--normuon=1 --resume=%s/run/ckpt.bin --out_dir=%s/r", dir, dir);
    cr_assert_eq(th_train(dir, "softcap", extra, &out, &err), 1, "the run went on: %s", out);
    cr_expect(strstr(err, "normuon") && strstr(err, "different configuration") && !strchr(strchr(err, '\n') + 1, '\n'),
              "not one line naming normuon: %s", err);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
