// A run's output folder (train/run_dir.h): what a folder that already holds something is told.
// A log without a trained step (a run refused at its first step) once blocked the retry ("already
// holds a run"); a finished run was told to --resume, which cannot train more steps (--steps is
// part of the checked configuration); a log without a checkpoint was told to --resume a
// checkpoint that does not exist. The end-to-end refusals (a folder in use, a full disk, ...) are
// in test_train_output.c.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "train/run_config.h"
#include "train/run_dir.h"
#include "helpers.h"

static void put(const char *dir, const char *name, const char *text) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(gm_write_file_atomic(path, text, strlen(text)), 0, "%s", gm_error());
}

// Open dir/run for the test configuration (6 steps) with `extra` flags: 0, or -1 with the message.
static int open_run(const char *dir, const char *extra, gm_run_dir *d) {
    gm_run_config rc;
    char flags[4096];
    cr_assert_eq(gm_run_config_preset(&rc, "muon-v2", "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, extra));
    static gm_run_config keep;  // d->path points into it
    keep = rc;
    int r = gm_run_dir_open(d, &keep, 1000, 0);
    gm_run_dir_close(d);
    return r;
}

static const char *START = "{\"event\":\"start\",\"config\":{}}\n";
static const char *TRAIN = "{\"event\":\"train\",\"step\":0,\"tokens\":256,\"train_loss\":6.3}\n";

Test(run_dir, a_log_without_a_trained_step_does_not_block_the_retry) {
    char *dir = th_tmpdir(), run[4300];
    gm_run_dir d;
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_eq(gm_mkdir_p(run, NULL), 0);
    char log[1000];
    snprintf(log, sizeof log, "%s{\"event\":\"error\",\"step\":0,\"message\":\"cannot allocate 35892756480 bytes\"}\n", START);
    put(run, "log.jsonl", log);
    cr_assert_eq(open_run(dir, "", &d), 0, "a run that trained no step blocks the retry: %s", gm_error());
    th_rmtree(dir);
    free(dir);
}

Test(run_dir, each_kind_of_run_in_the_folder_is_told_what_it_can_do) {
    char *dir = th_tmpdir(), run[4300], text[4400], want[9000];
    gm_run_dir d;
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_eq(gm_mkdir_p(run, NULL), 0);
    // A finished run: replace it or go elsewhere; --resume cannot add steps.
    snprintf(text, sizeof text, "%s%s{\"event\":\"end\",\"step\":6,\"final_val_loss\":6.1}\n", START, TRAIN);
    put(run, "log.jsonl", text);
    put(run, "ckpt.bin", "a checkpoint");
    cr_assert_eq(open_run(dir, "", &d), -1);
    snprintf(want, sizeof want, "--out_dir: %s: already holds a finished run of 6 steps (log.jsonl and ckpt.bin); replace it with "
             "--overwrite=1, or choose another --out_dir (a run of more steps starts over: the schedules depend on --steps)", run);
    cr_assert_str_eq(gm_error(), want);
    cr_assert_eq(open_run(dir, "--steps=10", &d), -1);
    cr_assert_str_eq(gm_error(), want, "more steps are not a resume either");
    // An interrupted run: continue it.
    snprintf(text, sizeof text, "%s%s{\"event\":\"interrupted\",\"step\":1}\n", START, TRAIN);
    put(run, "log.jsonl", text);
    cr_assert_eq(open_run(dir, "", &d), -1);
    snprintf(want, sizeof want, "--out_dir: %s: already holds a run (log.jsonl and ckpt.bin); continue it with --resume=%s/ckpt.bin, "
             "or replace it with --overwrite=1", run, run);
    cr_assert_str_eq(gm_error(), want);
    // A killed run (its log stops at a train record) with its checkpoint: continue it too.
    snprintf(text, sizeof text, "%s%s", START, TRAIN);
    put(run, "log.jsonl", text);
    cr_assert_eq(open_run(dir, "", &d), -1);
    cr_assert_str_eq(gm_error(), want);
    // Trained steps, no checkpoint (--ckpt_every=-1, or killed before the first): nothing to resume.
    snprintf(text, sizeof text, "%s/ckpt.bin", run);
    cr_assert_eq(remove(text), 0);
    cr_assert_eq(open_run(dir, "", &d), -1);
    snprintf(want, sizeof want, "--out_dir: %s: already holds a run (log.jsonl, no checkpoint to continue from); replace it with "
             "--overwrite=1, or choose another --out_dir", run);
    cr_assert_str_eq(gm_error(), want);
    cr_assert_eq(open_run(dir, "--overwrite=1", &d), 0, "%s", gm_error());
    th_rmtree(dir);
    free(dir);
}

// The folder's lock is per open: a second open while the first holds it is refused.
Test(run_dir, a_locked_folder_is_refused) {
    char *dir = th_tmpdir(), flags[4096], want[4400];
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "muon-v2", "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, ""));
    gm_run_dir a, b;
    cr_assert_eq(gm_run_dir_open(&a, &rc, 1000, 0), 0, "%s", gm_error());
    cr_assert_eq(gm_run_dir_open(&b, &rc, 1000, 0), -1);
    snprintf(want, sizeof want, "--out_dir: %s/run: in use by another train process (it holds the folder's lock)", dir);
    cr_assert_str_eq(gm_error(), want);
    gm_run_dir_close(&b);
    gm_run_dir_close(&a);
    cr_assert_eq(gm_run_dir_open(&b, &rc, 1000, 0), 0, "closing released the lock: %s", gm_error());
    gm_run_dir_close(&b);
    th_rmtree(dir);
    free(dir);
}

// End to end: a fresh run that fails at its first step (here: --dump_at=0 into a folder where
// "matrices" is a file) leaves its log, with the error record; the retry is not refused.
Test(run_dir, a_run_refused_at_its_first_step_can_be_retried, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, run[4300], path[4400];
    th_make_train_data(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_eq(gm_mkdir_p(run, NULL), 0);
    put(run, "matrices", "not a folder");
    cr_assert_eq(th_train(dir, "muon-v2", "--dump_at=0", &out, &err), 1, "%s", out);
    snprintf(path, sizeof path, "%s/log.jsonl", run);
    cr_assert(th_file_exists(path), "the failed run's log (its error record) is kept");
    free(out), free(err);
    cr_assert_eq(th_train(dir, "muon-v2", "", &out, &err), 0, "the retry was refused: %s", err);
    cr_assert(strstr(out, "holds the log of a run that trained no step; it is replaced\n"), "%s", out);
    cr_assert(strstr(out, "train: done after 6 steps"), "%s", out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// --out_dir equal to the data folder put the log and checkpoints among the shards (a pattern like
// 'data/gcide/*' then matches them), and one holding it put the data inside a run; both are refused
// before anything is written, the folders compared as files (a link to the data folder is the data
// folder). A run in a subfolder of the data folder stays apart from the shards and is accepted.
static void expect_out_dir_refused(const char *dir, const char *out_dir, const char *data, const char *how) {
    char extra[14000], want[14000], *out, *err;
    snprintf(extra, sizeof extra, "--train_data=%s/train_*.bin --val_data=%s/val_*.bin --out_dir=%s", data, data, out_dir);
    int before = th_dir_entries(out_dir);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 1, "--out_dir=%s was accepted: %s", out_dir, out);
    snprintf(want, sizeof want, "train: error: rank 0: --out_dir: %s: %s the folder of the --train_data shard "
             "%s/train_000000.bin; a run's log and checkpoints go in a folder of their own, apart from the data\n", out_dir, how, data);
    cr_expect_str_eq(err, want);
    cr_expect_eq(th_dir_entries(out_dir), before, "the refused run wrote into %s", out_dir);
    free(out), free(err);
}

Test(run_dir, an_out_dir_that_is_or_holds_the_data_folder_is_refused, .timeout = 120) {
    char *dir = th_tmpdir(), data[4300], link[4300], extra[14000], *out, *err;
    snprintf(data, sizeof data, "%s/data", dir);
    cr_assert_eq(gm_mkdir_p(data, NULL), 0, "%s", gm_error());
    th_make_train_data(data);
    expect_out_dir_refused(dir, data, data, "is");
    snprintf(link, sizeof link, "%s/link", dir);
    cr_assert_eq(symlink(data, link), 0);
    expect_out_dir_refused(dir, link, data, "is");
    expect_out_dir_refused(dir, dir, data, "holds");
    snprintf(extra, sizeof extra, "--train_data=%s/train_*.bin --val_data=%s/val_*.bin --out_dir=%s/run", data, data, data);
    cr_expect_eq(th_train(dir, "muon-v2", extra, &out, &err), 0, "a run in a subfolder of the data folder: %s", err);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
