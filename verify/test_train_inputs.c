// train refuses inputs that would make a run wrong or fail late, before it creates anything:
// training shards that are also validation shards, a checkpoint holding a non-finite value, a
// memory plan larger than what the process may use.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "model/params.h"
#include "train/run_config.h"
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

// Checkpoint `path` with element `at` of section `section` set to NaN (verify/helpers.h).
static void plant_nan(const char *path, const char *section, size_t at) {
    size_t bytes;
    gm_real *copy = th_ckpt_section(path, section, &bytes);
    cr_assert_lt(at * sizeof(gm_real), bytes);
    copy[at] = NAN;
    th_ckpt_replace(path, section, copy, bytes);
    free(copy);
}

// A NaN in a parameter no batch touches (an embedding row of a token the data never holds) trained
// "fine" to the end and was saved again: --resume checks every tensor of the checkpoint, the
// parameters and the optimizer states, and names the first non-finite value.
Test(train_inputs, a_checkpoint_with_a_non_finite_value_is_refused, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, flags[4400], ckpt[4200], want[9000];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=3", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "muon-v2", "tiny"), 0);
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, ""));
    gm_table tab;
    gm_param_index pix;
    cr_assert_eq(gm_params_build(&rc.model, &tab, &pix), 0, "%s", gm_error());
    const gm_view *embed = &tab.v[pix.embed];
    const int row = 511, col = 3;  // the last row: no batch of th_make_train_data needs to touch it
    plant_nan(ckpt, "params", embed->offset + (size_t)row * embed->shape[1] + col);
    snprintf(flags, sizeof flags, "--resume=%s --out_dir=%s/r2", ckpt, dir);
    snprintf(want, sizeof want, "train: error: rank 0: --resume: %s: params holds a non-finite value (nan) at %s[%d, %d] "
             "(element %zu); the run that wrote it had diverged or the file was changed: it cannot be resumed", ckpt,
             embed->name, row, col, embed->offset + (size_t)row * embed->shape[1] + col);
    char *o2, *e2;
    cr_assert_eq(th_train(dir, "muon-v2", flags, &o2, &e2), 1, "resumed from a NaN: %s", o2);
    cr_expect_str_eq(e2, strcat(want, "\n"));
    free(o2), free(e2);
    // An optimizer state: a fresh checkpoint, Adam's first moment of the (tied) embedding.
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=3 --overwrite=1", &out, &err), 130, "%s", err);
    free(out), free(err);
    plant_nan(ckpt, "adam.head.m", 77);
    snprintf(flags, sizeof flags, "--resume=%s --out_dir=%s/r3", ckpt, dir);
    snprintf(want, sizeof want, "train: error: rank 0: --resume: %s: adam.head.m holds a non-finite value (nan) at element 77; "
             "the run that wrote it had diverged or the file was changed: it cannot be resumed\n", ckpt);
    cr_assert_eq(th_train(dir, "muon-v2", flags, &o2, &e2), 1, "resumed from a NaN: %s", o2);
    cr_expect_str_eq(e2, want);
    free(o2), free(e2);
    gm_table_free(&tab);
    th_rmtree(dir);
    free(dir);
}

// --batch=512 planned 50.6 GB on a 24 GB machine: the run created its folder and log, then failed at
// step 0 ("cannot allocate ..."), or woke the OOM killer. The plan is compared with what the
// process may use before anything is created.
static void expect_memory_refusal(const char *limit, const char *flags, const char *want) {
    char *dir = th_tmpdir(), cmd[8800], path[4200], *out, *err;
    snprintf(cmd, sizeof cmd, "%s '%s' --preset=softcap --scale=tiny %s --out_dir='%s/run'", limit, th_bin_path("train"), flags,
             dir);
    cr_assert_eq(th_run(cmd, &out, &err), 1, "%s: %s", cmd, err);
    cr_expect_eq(th_count_lines(err), 1, "%s", err);
    cr_expect(strstr(err, "train: error: rank 0: memory plan: this run needs "), "%s", err);
    cr_expect(strstr(err, want), "expected '%s' in: %s", want, err);
    snprintf(path, sizeof path, "%s/run", dir);
    cr_expect_not(th_file_exists(path), "the refused run created %s", path);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

Test(train_inputs, a_memory_plan_above_the_virtual_memory_limit_is_refused, .timeout = 60) {
#ifdef __SANITIZE_ADDRESS__
    // ASan reserves terabytes of address space for its shadow: under `ulimit -v` it cannot start.
    cr_skip_test("ulimit -v and AddressSanitizer do not mix (the release build runs this test)");
#endif
    // 6.52 GB planned for the backend alone (softcap tiny, B = 64), 3 GB of address space.
    expect_memory_refusal("ulimit -v 3000000 && OMP_NUM_THREADS=2", "--batch=64 --val_tokens=65536",
                          "GB of address space (B = 64, T = 1024 per rank, 2 OpenMP thread(s); --plan_memory=1 lists it), above "
                          "the virtual memory limit (ulimit -v) less the ");
}

Test(train_inputs, a_memory_plan_above_the_machine_is_refused, .timeout = 60) {
    // B = 16384 plans about 1.7 TB: above the memory available or the cgroup's limit on any machine this runs on.
    expect_memory_refusal("", "--batch=16384 --val_tokens=16777216", "GB of host memory (B = 16384, T = 1024 per rank, ");
}

// Under `ulimit -v`, a run refused for memory spun at 100% CPU forever after its message (exit()
// joined an OpenBLAS thread retrying, forever, a buffer that did not fit), and a run that passed
// the check hung at step 0 in cblas_sgemm or failed at its first checkpoint with its folder made:
// the plan left out OpenBLAS's buffers, the threads' stacks and malloc arenas, the mapped shards and
// the checkpoint's host copy. Now, around the limit the plan names (--plan_memory=1 prints it and
// what the process maps at the check), below it the run is refused with one line and nothing
// created, above it the run writes its checkpoint; each run is killed after a bound, so that a
// hang fails the test instead of stalling the suite.
Test(train_inputs, every_virtual_memory_limit_gives_a_run_or_a_refusal, .timeout = 900) {
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("ulimit -v and AddressSanitizer do not mix (the release build runs this test)");
#endif
    char *dir = th_tmpdir(), flags[4400], cmd[9000], path[4200], *out, *err;
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "--ckpt_every=2 --n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16");
    snprintf(cmd, sizeof cmd, "ulimit -v 64000000 && '%s' --preset=softcap --scale=tiny %s --plan_memory=1", th_bin_path("train"), flags);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    const char *key = " GB mapped (held against the virtual memory limit (ulimit -v) less the ", *at = strstr(out, key), *num = at;
    cr_assert(at, "no host plan in: %s", out);
    while (num[-1] != ' ') num--;
    const double mapped = strtod(num, NULL), at_check = strtod(at + strlen(key), NULL);
    free(out), free(err);
    const long need_kib = (long)((mapped + at_check) * 1e9 / 1024);  // both printed to 1 MB
    // Far below (the refusal that never ended), just below and just above the limit, well above.
    const long mib = 1024, limit[] = {(long)(at_check * 1e9 / 1024) + 64 * mib, need_kib - 16 * mib, need_kib + 16 * mib,
                                      need_kib + 256 * mib};
    for (size_t k = 0; k < sizeof limit / sizeof *limit; k++) {
        snprintf(path, sizeof path, "%s/run", dir);
        th_rmtree(path);
        // 240 s: a step of this model takes milliseconds; a hang is all that can last that long.
        snprintf(cmd, sizeof cmd, "ulimit -v %ld && timeout -s KILL 240 '%s' --preset=softcap --scale=tiny %s", limit[k],
                 th_bin_path("train"), flags);
        int rc = th_run(cmd, &out, &err);
        if (limit[k] < need_kib) {
            cr_expect_eq(rc, 1, "ulimit -v %ld (the plan needs %ld KiB): exit %d (137: hung, killed): %s", limit[k], need_kib, rc, err);
            cr_expect_eq(th_count_lines(err), 1, "%s", err);
            cr_expect(strstr(err, "train: error: rank 0: memory plan: this run needs "), "%s", err);
            cr_expect_not(th_file_exists(path), "ulimit -v %ld: the refused run created %s", limit[k], path);
        } else {
            cr_expect_eq(rc, 0, "ulimit -v %ld (the plan needs %ld KiB): exit %d (137: hung, killed): %s", limit[k], need_kib, rc, err);
            snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
            cr_expect(th_file_exists(path), "ulimit -v %ld: no checkpoint: %s", limit[k], err);
            // The plan covers what the process mapped (VmPeak, monotone: the last record holds the peak).
            char *log;
            size_t len;
            snprintf(path, sizeof path, "%s/run/log.jsonl", dir);
            cr_assert_eq(gm_read_all(path, &log, &len), 0, "%s", gm_error());
            const char *peak = NULL;
            for (const char *p = log; (p = strstr(p, "\"peak_vm_kb\":")); p++) peak = p;
            cr_assert(peak, "no peak_vm_kb in %s", path);
            long peak_kib = strtol(peak + strlen("\"peak_vm_kb\":"), NULL, 10);
            cr_expect_leq(peak_kib, need_kib, "VmPeak %ld KiB, above the plan's %ld KiB", peak_kib, need_kib);
            cr_log_info("ulimit -v %ld: VmPeak %ld KiB, plan %ld KiB (margin %.1f MiB)", limit[k], peak_kib, need_kib,
                        (need_kib - peak_kib) / 1024.0);
            free(log);
        }
        free(out), free(err);
    }
    th_rmtree(dir);
    free(dir);
}
