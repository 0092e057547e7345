// A run never loses or replaces output by accident. A second run in a folder that holds a run is
// refused (unless --resume continues it or --overwrite=1 replaces it), and so is a second process
// on a folder in use; temporaries of a cut-short checkpoint write are removed; a folder without
// room for a checkpoint (file system or file size limit) or that cannot be written is refused at
// start, not after the run; a log write that fails stops the run, leaving no partial line; a
// checkpoint write that fails stops it, leaving the previous checkpoint as it was.
// The full and read-only file systems are real: a tmpfs mounted in a private mount namespace
// (unshare); where this machine allows no such mount those tests skip, saying so.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "train/checkpoint.h"
#include "helpers.h"

static char *slurp(const char *path) {
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0, "%s", gm_error());
    return data;
}

// A command prefix under which `mount -t tmpfs` works (a private mount namespace, as root or in a
// user namespace), or NULL.
static const char *mount_prefix(void) {
    static const char *const tries[] = {"unshare --mount --propagation private",
                                        "unshare --user --map-root-user --mount --propagation private"};
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=64k none \"$d\" && umount \"$d\"; s=$?; rmdir \"$d\"; exit $s'",
                 tries[i]);
        if (th_run(cmd, NULL, NULL) == 0) return tries[i];
    }
    return NULL;
}

static const char *need_mount(void) {
    const char *p = mount_prefix();
    if (!p) cr_skip_test("cannot mount a tmpfs in a private mount namespace here (unshare --mount, also as a user namespace)");
    return p;
}

Test(train_output, a_folder_that_holds_a_run_is_refused_unless_continued_or_replaced, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, log[4300], ckpt[4300], extra[4400], want[9000];
    th_make_train_data(dir);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    cr_assert_eq(th_train(dir, "muon-v2", "", &out, &err), 0, "%s", err);
    free(out), free(err);
    char *log1 = slurp(log), *ckpt1 = slurp(ckpt), *curve1 = th_log_curve(log, 0);
    // The README's `make train` twice, or a restart without --resume: refused, nothing touched.
    cr_assert_eq(th_train(dir, "muon-v2", "", &out, &err), 1, "a second run replaced the first: %s", out);
    snprintf(want, sizeof want, "train: error: rank 0: --out_dir: %s/run: already holds a finished run of 6 steps (log.jsonl and "
             "ckpt.bin); replace it with --overwrite=1, or choose another --out_dir (a run of more steps starts over: the schedules "
             "depend on --steps)\n", dir);
    cr_assert_str_eq(err, want);
    free(out), free(err);
    char *log2 = slurp(log), *ckpt2 = slurp(ckpt);
    cr_assert_str_eq(log2, log1, "the log was changed");
    cr_assert(!memcmp(ckpt2, ckpt1, 64), "the checkpoint was changed");
    free(log2), free(ckpt2);
    // --resume of its own checkpoint continues it: the log is appended to.
    snprintf(extra, sizeof extra, "--resume=%s", ckpt);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 0, "%s", err);
    free(out), free(err);
    log2 = slurp(log);
    cr_assert(!strncmp(log2, log1, strlen(log1)) && strlen(log2) > strlen(log1), "the resumed run did not append");
    free(log2);
    // --overwrite=1 replaces it: a fresh log with the same curve.
    cr_assert_eq(th_train(dir, "muon-v2", "--overwrite=1", &out, &err), 0, "%s", err);
    free(out), free(err);
    char *curve2 = th_log_curve(log, 0);
    cr_assert_str_eq(curve2, curve1);
    log2 = slurp(log);
    cr_assert_eq(th_count_lines(log2), th_count_lines(log1));
    free(log1), free(log2), free(ckpt1), free(curve1), free(curve2);
    th_rmtree(dir);
    free(dir);
}

// Two processes on one folder (another terminal, or the ranks of a --comm=single job under
// mpirun): the second is refused while the first runs, even with --overwrite=1.
Test(train_output, a_folder_in_use_is_refused, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, flags[4096], script[20000];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "--steps=1000000 --val_every=0");
    snprintf(script, sizeof script,
             "T='%s --preset=muon-v2 --scale=tiny %s'\n"
             "$T > /dev/null & p=$!\n"
             "for i in $(seq 100); do [ -s '%s/run/log.jsonl' ] && break; sleep 0.2; done\n"
             "$T --overwrite=1 > /dev/null; rc=$?\n"
             "kill -INT $p; wait $p\n"
             "echo \"second: $rc\"\n",
             th_bin_path("train"), flags, dir);
    cr_assert_eq(th_run_script(dir, "", script, &out, &err), 0, "%s %s", out, err);
    cr_assert(strstr(out, "second: 1"), "the second process ran: %s", out);
    char want[4600];
    snprintf(want, sizeof want, "train: error: rank 0: --out_dir: %s/run: in use by another train process (it holds the folder's lock)\n", dir);
    cr_assert_str_eq(err, want);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// kill -9 during a checkpoint write leaves ckpt.bin.tmp.XXXXXX behind (40 MB at tiny scale): the
// next run in the folder removes it, and nothing else.
Test(train_output, stale_checkpoint_temporaries_are_removed, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, run[4300], path[4400];
    th_make_train_data(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_eq(gm_mkdir_p(run, NULL), 0);
    snprintf(path, sizeof path, "%s/ckpt.bin.tmp.Ab12Cd", run);
    cr_assert_eq(gm_write_file_atomic(path, "half a checkpoint", 17), 0);
    snprintf(path, sizeof path, "%s/notes.txt", run);
    cr_assert_eq(gm_write_file_atomic(path, "mine", 4), 0);
    cr_assert_eq(th_train(dir, "muon-v2", "", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "train: removed 1 stale temporary checkpoint file(s) from "), "%s", out);
    snprintf(path, sizeof path, "%s/ckpt.bin.tmp.Ab12Cd", run);
    cr_assert_not(th_file_exists(path), "the stale temporary file is still there");
    snprintf(path, sizeof path, "%s/notes.txt", run);
    cr_assert(th_file_exists(path), "a file that is not a checkpoint temporary was removed");
    cr_assert_eq(th_dir_entries(run), 3, "log.jsonl, ckpt.bin, notes.txt");
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

Test(train_output, an_out_dir_that_is_a_file_is_named_once, .timeout = 60) {
    char *dir = th_tmpdir(), *out, *err, extra[4400], want[9000];
    th_make_train_data(dir);
    snprintf(extra, sizeof extra, "--out_dir=%s/val_000000.bin", dir);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 1);
    snprintf(want, sizeof want, "train: error: rank 0: --out_dir: %s/val_000000.bin: not a folder\n", dir);
    cr_assert_str_eq(err, want);
    free(out), free(err);
    snprintf(extra, sizeof extra, "--out_dir=%s/val_000000.bin/run", dir);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 1);
    snprintf(want, sizeof want, "train: error: rank 0: --out_dir: %s/val_000000.bin/run: cannot create: Not a directory\n", dir);
    cr_assert_str_eq(err, want);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// A file size limit below the checkpoint (ulimit -f) once let the run train to the end and then
// killed it while writing the checkpoint: now it is refused before anything is written, and the
// folder it had created for the run is gone again.
Test(train_output, a_file_size_limit_below_a_checkpoint_is_refused_at_start, .timeout = 60) {
    char *dir = th_tmpdir(), *out, *err, flags[4096], script[8600], run[4300];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "");
    snprintf(script, sizeof script, "ulimit -f 1000  # KiB, in bash\n'%s' --preset=muon-v2 --scale=tiny %s\n", th_bin_path("train"), flags);
    cr_assert_eq(th_run_script(dir, "", script, &out, &err), 1, "%s", err);
    cr_assert_eq(th_count_lines(err), 1, "%s", err);
    cr_assert(strstr(err, "/run: a checkpoint of this run is 1.38 MiB, above the file size limit of 0.98 MiB (ulimit -f)\n"), "%s", err);
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_not(th_file_exists(run), "the refused run left its folder %s behind", run);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// The log on a device that is always full: the first record fails, and that is the error.
Test(train_output, a_log_that_cannot_be_written_stops_the_run, .timeout = 60) {
    char *dir = th_tmpdir(), *out, *err, run[4300], cmd[8800], want[9000];
    th_make_train_data(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(cmd, sizeof cmd, "mkdir '%s' && ln -s /dev/full '%s/log.jsonl'", run, run);
    cr_assert_eq(th_run(cmd, NULL, NULL), 0);
    cr_assert_eq(th_train(dir, "muon-v2", "--overwrite=1", &out, &err), 1, "%s", out);
    snprintf(want, sizeof want, "train: error: rank 0: %s/log.jsonl: cannot write the log: No space left on device\n", run);
    cr_assert_str_eq(err, want);
    cr_assert_not(strstr(out, "train: done"), "%s", out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

Test(train_output, a_full_disk_is_refused_at_start, .timeout = 60) {
    const char *prefix = need_mount();
    char *dir = th_tmpdir(), *out, *err, flags[4096], own[4400], script[12000];
    th_make_train_data(dir);
    snprintf(own, sizeof own, "--out_dir=%s/mnt/run", dir);
    th_test_flags(flags, sizeof flags, dir, own);
    snprintf(script, sizeof script,
             "m='%s/mnt'; mkdir \"$m\" && mount -t tmpfs -o size=1m none \"$m\" || exit 99\n"
             "'%s' --preset=muon-v2 --scale=tiny %s > /dev/null; rc=$?\n"
             "echo \"rc $rc, entries $(ls -A \"$m/run\" | wc -l)\"\n",
             dir, th_bin_path("train"), flags);
    cr_assert_eq(th_run_script(dir, prefix, script, &out, &err), 0, "%s", err);
    cr_assert_str_eq(out, "rc 1, entries 0\n", "%s", err);
    // What the log needs depends on the size of the source snapshot in its first record.
    // Two copies: the time-based checkpoints (--ckpt_every_s) may write several.
    cr_assert(strstr(err, "/mnt/run: 1.00 MiB free, this run needs ") && strstr(err, " MiB (two copies of its 1.38 MiB checkpoint and its log)\n"),
              "%s", err);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

Test(train_output, a_read_only_folder_is_refused_at_start, .timeout = 60) {
    const char *prefix = need_mount();
    char *dir = th_tmpdir(), *out, *err, flags[4096], own[4400], script[12000], want[9000];
    th_make_train_data(dir);
    snprintf(own, sizeof own, "--out_dir=%s/mnt", dir);
    th_test_flags(flags, sizeof flags, dir, own);
    snprintf(script, sizeof script,
             "m='%s/mnt'; mkdir \"$m\" && mount -t tmpfs -o size=16m,ro none \"$m\" || exit 99\n"
             "'%s' --preset=muon-v2 --scale=tiny %s > /dev/null; echo \"rc $?\"\n",
             dir, th_bin_path("train"), flags);
    cr_assert_eq(th_run_script(dir, prefix, script, &out, &err), 0, "%s", err);
    cr_assert_str_eq(out, "rc 1\n", "%s", err);
    snprintf(want, sizeof want, "train: error: rank 0: --out_dir: %s/mnt/ckpt.bin: cannot create temporary file: Read-only file system\n", dir);
    cr_assert_str_eq(err, want);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// Start a long run (the test flags and `extra`) on a 8 MiB tmpfs, wait until `ready` holds, run
// `fill` to take the free space, and copy the log (and checkpoint) out before the mount goes. *out
// gets the script's report.
static int run_then_fill(const char *dir, const char *extra, const char *ready, const char *fill, char **out, char **err) {
    char script[20000], flags[4096], own[4400];
    snprintf(own, sizeof own, "%s --out_dir=%s/mnt/run", extra, dir);
    th_test_flags(flags, sizeof flags, dir, own);
    snprintf(script, sizeof script,
             "m='%s/mnt'; mkdir \"$m\" && mount -t tmpfs -o size=8m none \"$m\" || exit 99\n"
             "'%s' --preset=muon-v2 --scale=tiny %s > /dev/null & p=$!\n"
             "for i in $(seq 300); do %s && break; sleep 0.1; done\n"
             "%s\n"
             "wait $p; rc=$?\n"
             "cp \"$m/run/log.jsonl\" '%s/log.copy'; cp \"$m/run/ckpt.bin\" '%s/ckpt.copy' 2>/dev/null\n"
             "echo \"rc $rc, files: $(cd \"$m/run\" && ls | tr '\\n' ' ')\"\n",
             dir, th_bin_path("train"), flags, ready, fill, dir, dir);
    return th_run_script(dir, need_mount(), script, out, err);
}

// Every line of the copied log is a JSON record, the train steps run 0, 1, 2, ... without a gap,
// and the last record is one of the given events ("a|b").
static void log_is_whole(const char *dir, const char *last_event) {
    char cmd[8600], *out, *err;
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import json,sys; rs=[json.loads(l) for l in open(sys.argv[1])]; "
             "st=[r['step'] for r in rs if r['event']=='train']; assert st==list(range(len(st))), st; "
             "assert rs[-1]['event'] in sys.argv[2].split('|'), rs[-1]; print(len(st))\" '%s/log.copy' '%s'",
             dir, last_event);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "the log is not whole: %s", err);
    cr_assert_gt(atoi(out), 3, "%s", out);
    free(out), free(err);
}

// The disk fills up mid-run: records of some steps once vanished, one line was corrupt, and the
// run still said done with exit 0. Now the failed write stops the run and the log stays whole.
Test(train_output, a_disk_filling_up_mid_run_stops_it_with_a_whole_log, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err;
    th_make_train_data(dir);
    cr_assert_eq(run_then_fill(dir, "--steps=2000 --val_every=0", "[ -f \"$m/run/log.jsonl\" ] && [ $(wc -l < \"$m/run/log.jsonl\") -gt 5 ]",
                               "dd if=/dev/zero of=\"$m/fill\" bs=4k 2>/dev/null", &out, &err), 0, "%s", err);
    cr_assert_str_eq(out, "rc 1, files: log.jsonl \n", "%s", err);
    cr_assert_eq(th_count_lines(err), 1, "%s", err);
    cr_assert(strstr(err, "/mnt/run/log.jsonl: cannot write the log: No space left on device\n"), "%s", err);
    log_is_whole(dir, "train|error");  // the error record may find no room either
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// The disk fills up before the first checkpoint: its write fails, and the message said "an earlier
// one is kept as it was" where there was none; it says what is true.
Test(train_output, a_failed_first_checkpoint_says_there_is_no_earlier_one, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err;
    th_make_train_data(dir);
    // The first checkpoint (1.4 MiB) at step 300, long after the fill; 1 MiB left holds the log's records till then.
    cr_assert_eq(run_then_fill(dir, "--steps=2000 --val_every=0 --ckpt_every=300", "[ -f \"$m/run/log.jsonl\" ] && [ $(wc -l < \"$m/run/log.jsonl\") -gt 5 ]",
                               "a=$(df -k --output=avail \"$m\" | tail -1); dd if=/dev/zero of=\"$m/fill\" bs=1k count=$((a - 1024)) 2>/dev/null",
                               &out, &err), 0, "%s", err);
    cr_assert_str_eq(out, "rc 1, files: log.jsonl \n", "%s", err);
    cr_assert_eq(th_count_lines(err), 1, "%s", err);
    cr_assert(strstr(err, "train: error: rank 0: step 300: checkpoint not written (this run's folder holds no earlier one): ") &&
                  strstr(err, "No space left on device\n"), "%s", err);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// The disk fills up between two checkpoints: the write of the next fails, the run stops, and the
// previous checkpoint is intact (no temporary left); the log ends with the error record.
Test(train_output, a_failed_checkpoint_write_keeps_the_previous_one, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, path[4300];
    th_make_train_data(dir);
    // Leave 256 KiB free, topped up a few times: a checkpoint being written while the space is
    // measured frees its old copy's space when it is renamed into place.
    cr_assert_eq(run_then_fill(dir, "--steps=2000 --val_every=0 --ckpt_every=2", "[ -f \"$m/run/ckpt.bin\" ]",
                               "for k in 1 2 3 4 5; do a=$(df -k --output=avail \"$m\" | tail -1); [ $a -gt 300 ] && "
                               "dd if=/dev/zero of=\"$m/fill$k\" bs=1k count=$((a - 256)) 2>/dev/null; sleep 0.2; done",
                               &out, &err), 0, "%s", err);
    cr_assert_str_eq(out, "rc 1, files: ckpt.bin log.jsonl \n", "%s", err);
    cr_assert_eq(th_count_lines(err), 1, "%s", err);
    cr_assert(strstr(err, ": checkpoint not written (an earlier one is kept as it was): ") && strstr(err, "No space left on device\n"),
              "%s", err);
    snprintf(path, sizeof path, "%s/ckpt.copy", dir);
    gm_ckpt c;
    cr_assert_eq(gm_ckpt_read(&c, path), 0, "the kept checkpoint is damaged: %s", gm_error());
    long long step;
    memcpy(&step, gm_ckpt_get(&c, "step", sizeof step), sizeof step);
    cr_assert(step > 0 && step % 2 == 0, "step %lld", step);
    gm_ckpt_close(&c);
    log_is_whole(dir, "error");
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
