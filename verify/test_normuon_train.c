// Record #43's Muon in the trainer: NorMuon's second moments are optimizer state, so a run halted
// and resumed is bitwise the run that went through (the parameters and the muon.v2 section of the
// final checkpoints are equal), with the flags on softcap and as the normuon preset at its test
// scale; a checkpoint written without NorMuon cannot resume a --normuon=1
// run (one line naming the difference).
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/shard.h"
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

// `train --preset=P --scale=S FLAGS` run through, then halted at step 3 and resumed: the final
// parameters and NorMuon's second moments (muon.v2, which must exist) are bitwise the same.
static void halted_and_resumed(const char *dir, const char *preset, const char *scale, const char *flags) {
    char cmd[13000], run_flags[8600], owns[3][4400], a[4300], b[4300], *out, *err;
    const char *train = th_bin_path("train");
    // The run through, the halted one, the resumed one: each with its own flags and exit status.
    snprintf(owns[0], sizeof owns[0], "--out_dir=%s/run", dir);
    snprintf(owns[1], sizeof owns[1], "--halt_at=3 --out_dir=%s/h", dir);
    snprintf(owns[2], sizeof owns[2], "--resume=%s/h/ckpt.bin --out_dir=%s/r", dir, dir);
    const int rcs[3] = {0, 130, 0};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "'%s' --preset=%s --scale=%s %s", train, preset, scale,
                 th_flags_override(run_flags, sizeof run_flags, flags, owns[i]));
        cr_assert_eq(th_run(cmd, &out, &err), rcs[i], "%s", err);
        free(out), free(err);
    }
    snprintf(a, sizeof a, "%s/run/ckpt.bin", dir);
    snprintf(b, sizeof b, "%s/r/ckpt.bin", dir);
    expect_same_section(a, b, "params");
    expect_same_section(a, b, "muon.v2");
}

Test(normuon_train, halted_and_resumed_is_bitwise_the_run, .timeout = 240) {
    char *dir = th_tmpdir(), flags[4096];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, REC43);
    halted_and_resumed(dir, "softcap", "tiny", flags);
    th_rmtree(dir);
    free(dir);
}

// Test-scale shards: ids 1..119 below the scale's vocab of 120, documents of 20 to 59 tokens
// opened by its EOT 0, so the document mask and the sliding window have edges to cut.
static void write_test_scale_shard(const char *dir, const char *name, size_t n, unsigned salt) {
    uint16_t *tok = malloc(n * sizeof *tok);
    cr_assert_not_null(tok);
    size_t left = 0;
    for (size_t i = 0; i < n; i++) {
        if (left == 0) {
            tok[i] = 0;
            left = 20 + (i * 7 + salt) % 40;
            continue;
        }
        left--;
        tok[i] = (uint16_t)(1 + (i * 37 + left % 7 * 11 + salt) % 119);
    }
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(gm_shard_write(path, tok, n), 0, "%s", gm_error());
    free(tok);
}

// The normuon preset itself (record #43's optimizer on softcap's model) at its test scale:
// NorMuon is on (muon.v2 is in its checkpoints) and a halted run resumes bit for bit.
Test(normuon_train, the_normuon_preset_resumes_bitwise_at_test_scale, .timeout = 240) {
    char *dir = th_tmpdir(), flags[4400];
    write_test_scale_shard(dir, "train_000000.bin", 4000, 1);
    write_test_scale_shard(dir, "val_000000.bin", 1000, 2);
    snprintf(flags, sizeof flags,
             "--steps=6 --val_every=3 --val_tokens=256 --log_every=0 --train_data=%s/train_*.bin --val_data=%s/val_*.bin",
             dir, dir);
    halted_and_resumed(dir, "normuon", "test", flags);
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
