// train refuses inputs that would make a run wrong or fail late, before it creates anything:
// training shards that are also validation shards, a checkpoint holding a non-finite value, a
// memory plan larger than what the process may use.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

// A refused run: exit 1, one line on stderr equal to `want` (+ "\n"), no out_dir left behind.
static void expect_refused_run(const char *dir, const char *preset, const char *extra, const char *want) {
    char *out, *err, path[4200];
    cr_assert_eq(th_train(dir, preset, extra, &out, &err), 1, "%s was accepted: %s", extra, err);
    cr_expect_eq(th_count_lines(err), 1, "%s", err);
    cr_expect(strstr(err, want), "expected '%s' in: %s", want, err);
    snprintf(path, sizeof path, "%s/run", dir);
    cr_expect_not(th_file_exists(path), "the refused run left %s behind", path);
    free(out), free(err);
}

// --train_data='data/gcide/*.bin' also matched the val shard, and the run trained on its
// validation set. The files are compared, not the patterns: a link to a val shard is the same file.
Test(train_inputs, training_shards_that_are_validation_shards_are_refused, .timeout = 120) {
    char *dir = th_tmpdir(), extra[4400], want[4400], link[4200], target[4200];
    th_make_train_data(dir);
    snprintf(extra, sizeof extra, "--train_data=%s/*.bin", dir);
    snprintf(want, sizeof want, "train: error: rank 0: --train_data/--val_data: both match %s/val_000000.bin (the run would "
             "train on its validation set); give patterns that share no file", dir);
    expect_refused_run(dir, "muon-v2", extra, want);
    // The same file under another name: a symbolic link beside the training shards.
    snprintf(target, sizeof target, "%s/val_000000.bin", dir);
    snprintf(link, sizeof link, "%s/train_000002.bin", dir);
    cr_assert_eq(symlink(target, link), 0);
    snprintf(want, sizeof want, "--train_data/--val_data: both match %s/train_000002.bin (as %s/val_000000.bin) (the run", dir, dir);
    expect_refused_run(dir, "muon-v2", "", want);
    th_rmtree(dir);
    free(dir);
}
