// How a run ends without losing its work (train/signals.h and the train program): SIGINT,
// SIGTERM and SIGHUP (a closed terminal or SSH session: it once killed the run with nothing
// saved) stop it after the current step, or between two batches of a validation, with a checkpoint,
// exit status 130, and the exact command line that continues it; a closed output pipe (Ctrl-C of
// `train | tee` ends tee too: it once killed the run by SIGPIPE with nothing saved) stops it as a
// closed terminal does; a time-based checkpoint (--ckpt_every_s, on by default) bounds what a
// kill -9 or a power loss costs. The MPI case (mpirun's own signalling) is in test_train_mpi.c.
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "base/timer.h"
#include "data/shard.h"
#include "train/checkpoint.h"
#include "train/run_config.h"
#include "train/signals.h"
#include "train/trainer.h"
#include "helpers.h"

Test(signals, each_stop_signal_is_a_stop_request_not_a_death) {
    signal(SIGHUP, SIG_DFL);  // as a terminal starts it (the tests may run under nohup)
    gm_signals_install();
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        gm_stop_request(0);
        cr_assert_eq(raise(sigs[i]), 0);
        cr_assert_eq(gm_stop_signal(), sigs[i], "signal %d", sigs[i]);
    }
    cr_assert_eq(raise(SIGXFSZ), 0, "ignored: a write past ulimit -f fails with EFBIG instead");
    cr_assert_eq(raise(SIGPIPE), 0, "ignored: a write to a pipe without a reader fails with EPIPE instead");
}

// Under nohup SIGHUP is ignored when the program starts: the run outlives its terminal.
Test(signals, an_ignored_sighup_stays_ignored) {
    signal(SIGHUP, SIG_IGN);
    gm_signals_install();
    cr_assert_eq(raise(SIGHUP), 0);
    cr_assert_eq(gm_stop_signal(), 0);
    cr_assert_eq(raise(SIGINT), 0);
    cr_assert_eq(gm_stop_signal(), SIGINT);
}

// The step a checkpoint holds (-1 when it cannot be read).
static long long ckpt_step(const char *path) {
    gm_ckpt c;
    if (gm_ckpt_read(&c, path)) return -1;
    long long step = -1;
    const void *p = gm_ckpt_get(&c, "step", sizeof step);
    if (p) memcpy(&step, p, sizeof step);
    gm_ckpt_close(&c);
    return step;
}

// The value of the last line of `out` that starts with `prefix`, without the prefix (malloc'd).
static char *line_after(const char *out, const char *prefix) {
    const char *p = NULL;
    for (const char *q = out; (q = strstr(q, prefix)); q++) p = q;
    cr_assert_not_null(p, "no '%s' line in: %s", prefix, out);
    p += strlen(prefix);
    return strndup(p, strcspn(p, "\n"));
}

// SIGHUP as a terminal leaves it to the program (env --default-signal: the tests may run under nohup).
Test(signals, a_closed_terminal_stops_the_run_with_a_checkpoint, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, flags[4096], script[9000], path[4300];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "--steps=1000000 --val_every=0");
    snprintf(script, sizeof script,
             "env --default-signal=HUP '%s' --preset=muon-v2 --scale=tiny %s & p=$!\n"
             "for i in $(seq 300); do [ -s '%s/run/log.jsonl' ] && [ $(wc -l < '%s/run/log.jsonl') -gt 3 ] && break; sleep 0.1; done\n"
             "kill -HUP $p; for i in $(seq 600); do kill -0 $p 2> /dev/null || break; sleep 0.1; done\n"
             "kill -9 $p 2> /dev/null; wait $p  # 137: it did not stop\n",
             th_bin_path("train"), flags, dir, dir);
    cr_assert_eq(th_run_script(dir, "", script, &out, &err), 130, "%s %s", out, err);
    cr_assert(strstr(out, "train: interrupted after"), "%s", out);
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    cr_assert_gt(ckpt_step(path), 0, "%s", gm_error());
    char *resume = line_after(out, "train: to continue: ");
    snprintf(path, sizeof path, "--resume=%s/run/ckpt.bin", dir);
    cr_assert(strstr(resume, path), "%s", resume);
    free(resume), free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// The line printed after an interruption, run as it is, continues the run to its end.
Test(signals, the_printed_command_line_continues_the_run, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, log[4300];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=3", &out, &err), 130, "%s", err);
    char *cmd = line_after(out, "train: to continue: ");
    free(out), free(err);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s: %s", cmd, err);
    cr_assert(strstr(out, "train: done after 6 steps"), "%s", out);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    char *curve = th_log_curve(log, 0);
    cr_assert(strstr(curve, "\"event\":\"train\",\"step\":5,"), "the log was continued: %s", curve);
    free(curve), free(cmd), free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// A stop asked for while the run starts (Ctrl-C while it opens its data and builds its model: a
// while at full scale) is honoured at the first boundary, here between the batches of step 0's
// validation: it once was forgotten as the loop began, and the run trained on.
Test(signals, a_stop_asked_for_during_start_up_is_honoured, .timeout = 60) {
    char *dir = th_tmpdir(), flags[4096], path[4300];
    th_make_train_data(dir);
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "muon-v2", "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, ""));
    cr_assert_eq(gm_run_config_finish(&rc), 0, "%s", gm_error());
    gm_stop_request(SIGINT);
    gm_train_result res = {0};
    cr_assert_eq(gm_train(&rc, NULL, gm_backend_cpu(), 0, &res), 0, "%s", gm_error());
    cr_assert(res.interrupted && res.steps_done == 0, "interrupted %d after %d steps", res.interrupted, res.steps_done);
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    cr_assert_eq(ckpt_step(path), 0, "%s", gm_error());
    th_rmtree(dir);
    free(dir);
}

// The last line of a file that starts with `prefix` (malloc'd), NULL when none does.
static char *last_line_with(const char *path, const char *prefix) {
    char *data, *found = NULL;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0, "%s", gm_error());
    for (char *line = data; *line; line += strcspn(line, "\n"), line += *line == '\n') {
        if (!strncmp(line, prefix, strlen(prefix))) free(found), found = strndup(line, strcspn(line, "\n"));
    }
    free(data);
    return found;
}

// Ctrl-C of `train | tee` ends tee as well (the whole foreground job gets SIGINT): the run's next
// write to the pipe once raised SIGPIPE and ended it (exit 141) before its checkpoint. The reader
// here is a `cat` on a FIFO, ended the same moment the run gets its SIGINT.
Test(signals, ctrl_c_that_also_ends_the_pipe_reader_keeps_the_checkpoint, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, flags[4096], script[9000], ckpt[4300], log[4300];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "--steps=1000000 --val_every=0");
    snprintf(script, sizeof script,
             "mkfifo '%s/out'; cat '%s/out' > /dev/null & r=$!\n"
             "'%s' --preset=muon-v2 --scale=tiny %s > '%s/out' & p=$!\n"
             "for i in $(seq 300); do [ -s '%s/run/log.jsonl' ] && [ $(wc -l < '%s/run/log.jsonl') -gt 3 ] && break; sleep 0.1; done\n"
             "kill $r; kill -INT $p; for i in $(seq 600); do kill -0 $p 2> /dev/null || break; sleep 0.1; done\n"
             "kill -9 $p 2> /dev/null; wait $p  # 137: it did not stop\n",
             dir, dir, th_bin_path("train"), flags, dir, dir, dir);
    cr_assert_eq(th_run_script(dir, "", script, &out, &err), 130, "%s %s", out, err);
    free(out), free(err);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    long long k = ckpt_step(ckpt);
    cr_assert_gt(k, 0, "%s", gm_error());
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    char *last = last_line_with(log, "{\"event\":\"interrupted\"");
    cr_assert_not_null(last, "no interrupted record in %s", log);
    free(last);
    // It continues from there (its printed command line went to the closed pipe).
    char extra[4500];
    snprintf(extra, sizeof extra, "--steps=1000000 --val_every=0 --resume=%s --halt_at=%lld", ckpt, k + 2);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 130, "%s", err);
    char want[64];
    snprintf(want, sizeof want, "train: interrupted after %lld steps", k + 2);
    cr_assert(strstr(out, want), "%s", out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// Output whose reader is gone without a signal (`train | head -3`) counts as a closed terminal: the
// run stops with a checkpoint and says why on stderr; under nohup (SIGHUP ignored) it goes on.
Test(signals, a_closed_output_pipe_stops_the_run_as_a_closed_terminal, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, flags[4096], script[9000], ckpt[4300];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "--steps=1000000 --val_every=0");
    snprintf(script, sizeof script, "env --default-signal=HUP '%s' --preset=muon-v2 --scale=tiny %s | true; exit ${PIPESTATUS[0]}\n",
             th_bin_path("train"), flags);
    cr_assert_eq(th_run_script(dir, "", script, &out, &err), 130, "%s", err);
    cr_assert(strstr(err, "train: note: standard output is gone (a closed pipe or terminal): the run stops after this step with a checkpoint"),
              "%s", err);
    free(out), free(err);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    cr_assert_geq(ckpt_step(ckpt), 1, "%s", gm_error());
    th_rmtree(dir);
    free(dir);

    dir = th_tmpdir();
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "");
    snprintf(script, sizeof script, "env --ignore-signal=HUP '%s' --preset=muon-v2 --scale=tiny %s | true; exit ${PIPESTATUS[0]}\n",
             th_bin_path("train"), flags);
    cr_assert_eq(th_run_script(dir, "", script, &out, &err), 0, "%s", err);
    cr_assert(strstr(err, "under nohup the run goes on without it"), "%s", err);
    free(out), free(err);
    char log[4300];
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    char *end = last_line_with(log, "{\"event\":\"end\",\"step\":6,");
    cr_assert_not_null(end, "the run did not end at step 6");
    free(end);
    th_rmtree(dir);
    free(dir);
}

// A validation set of `n` tokens in dir/val_000000.bin (vocabulary and documents as
// th_make_train_data's), long enough that a validation takes seconds.
static void write_long_val(const char *dir, size_t n) {
    uint16_t *tok = malloc(n * sizeof *tok);
    cr_assert_not_null(tok);
    for (size_t i = 0; i < n; i++) tok[i] = (uint16_t)(i % 97 == 0 ? 1 : 2 + (i * 37 + i / 97) % 510);
    char path[4300];
    snprintf(path, sizeof path, "%s/val_000000.bin", dir);
    cr_assert_eq(gm_shard_write(path, tok, n), 0, "%s", gm_error());
    free(tok);
}

// A stop during a validation (at full scale one takes many steps' time, longer than a scheduler's
// grace period) is honoured between two of its batches: no val record for it, a checkpoint of the
// step before it (the validation changes nothing a checkpoint holds) and an `interrupted` record
// with "val_abandoned":true; the resumed run validates that step again from its first batch and
// ends bit for bit as the uninterrupted run: the same log from that step on, the same final
// checkpoint. Both a validation between steps (--val_every=3: step 3's) and the final one.
Test(signals, a_stop_during_a_validation_ends_it_at_the_next_batch_and_resumes_bit_for_bit, .timeout = 300) {
    const struct {
        const char *flags;
        int last_train_step;  // the run is in the validation after this step's record
    } cases[] = {{"--val_every=3", 2}, {"--val_every=0", 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *dir = th_tmpdir(), *out, *err, extra[4600], flags[4096], script[9000], path[4300], whole[4300];
        th_make_train_data(dir);
        write_long_val(dir, 70000);
        const char *val = "--val_tokens=65536";  // 256 batches of B 4 x T 64
        int s = cases[c].last_train_step + 1;
        snprintf(extra, sizeof extra, "%s %s --out_dir=%s/whole", cases[c].flags, val, dir);
        cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 0, "%s", err);
        free(out), free(err);
        // Interrupted as soon as its record of the step before the validation is seen (polled every
        // 20 ms; the validation takes a few tenths of a second at least, seconds here): in the
        // validation, or just before its first batch, which is checked too.
        snprintf(extra, sizeof extra, "%s %s", cases[c].flags, val);
        th_test_flags(flags, sizeof flags, dir, extra);
        snprintf(script, sizeof script,
                 "'%s' --preset=muon-v2 --scale=tiny %s & p=$!\n"
                 "for i in $(seq 3000); do grep -q '\"event\":\"train\",\"step\":%d,' '%s/run/log.jsonl' 2> /dev/null && break; sleep 0.02; done\n"
                 "kill -INT $p; wait $p\n",
                 th_bin_path("train"), flags, cases[c].last_train_step, dir);
        cr_assert_eq(th_run_script(dir, "", script, &out, &err), 130, "%s %s", out, err);
        char said[64];
        snprintf(said, sizeof said, "train: interrupted after %d steps", s);
        cr_assert(strstr(out, said), "%s", out);
        free(out), free(err);
        snprintf(path, sizeof path, "%s/run/log.jsonl", dir);
        char prefix[64], *rec;
        snprintf(prefix, sizeof prefix, "{\"event\":\"val\",\"step\":%d,", s);
        cr_assert_null(rec = last_line_with(path, prefix), "the abandoned validation was logged: %s", rec);
        snprintf(prefix, sizeof prefix, "{\"event\":\"interrupted\",\"step\":%d,", s);
        cr_assert_not_null(rec = last_line_with(path, prefix), "no interrupted record at step %d", s);
        cr_assert(strstr(rec, "\"val_abandoned\":true"), "%s", rec);
        free(rec);
        snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
        cr_assert_eq(ckpt_step(path), s, "%s", gm_error());
        // The resumed run is the uninterrupted one.
        snprintf(extra, sizeof extra, "%s %s --resume=%s", cases[c].flags, val, path);
        cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 0, "%s", err);
        free(out), free(err);
        snprintf(path, sizeof path, "%s/run/log.jsonl", dir);
        snprintf(whole, sizeof whole, "%s/whole/log.jsonl", dir);
        char *resumed = th_log_curve(path, s), *uninterrupted = th_log_curve(whole, s);
        cr_assert_str_eq(resumed, uninterrupted, "resumed vs uninterrupted from step %d", s);
        free(resumed), free(uninterrupted);
        char *a, *b;
        size_t na, nb;
        snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
        snprintf(whole, sizeof whole, "%s/whole/ckpt.bin", dir);
        cr_assert_eq(gm_read_all(path, &a, &na), 0, "%s", gm_error());
        cr_assert_eq(gm_read_all(whole, &b, &nb), 0, "%s", gm_error());
        cr_assert(na == nb && memcmp(a, b, na) == 0, "the final checkpoints differ");
        free(a), free(b);
        th_rmtree(dir);
        free(dir);
    }
}

// The wall time of the train records' steps from step k on in a log.jsonl (what a kill loses when
// the checkpoint on disk holds step k), and the longest step in the log.
static double seconds_trained_since(const char *log, long long k, double *longest) {
    char *data;
    size_t len;
    double sum = 0;
    if (gm_read_all(log, &data, &len)) return 0;
    for (char *line = data; *line; line += strcspn(line, "\n"), line += *line == '\n') {
        const char *head = "{\"event\":\"train\",\"step\":", *dt = strstr(line, "\"step_s\":");
        if (strncmp(line, head, strlen(head)) || !dt || dt > line + strcspn(line, "\n")) continue;
        double step_s = atof(dt + 9);
        if (step_s > *longest) *longest = step_s;
        if (atoll(line + strlen(head)) >= k) sum += step_s;
    }
    free(data);
    return sum;
}

// --ckpt_every_s=S: a kill -9 (or a power loss) costs at most S seconds plus one step (plus a
// checkpoint write cut short): the time is checked at every step boundary. The checkpoints were once
// also spaced 20 times their write time apart (at most 5% of the run spent writing them), which
// overruled S: with S = 1 a kill lost 4 s. Sampled every quarter second for 10 s: what a kill
// then would lose, the wall time of the steps trained since the state on disk, stays within S plus
// two of the longest steps plus 0.5 s of slack (what the steps' own times leave out: log writes).
// The model's checkpoint is 40 MB (a good part of a second to write, even on a quiet disk), its
// step a few hundredths of one. 300 s is the default.
Test(signals, a_time_based_checkpoint_bounds_what_a_kill_loses, .timeout = 180) {
    char *dir = th_tmpdir(), flags[4096], cmd[9000], log[4300], ckpt[4300];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir,
                  "--n_layer=1 --d_model=512 --n_head=4 --head_dim=128 --d_mlp=2048 --batch=1 --steps=1000000 --val_every=0 "
                  "--ckpt_every_s=1");
    snprintf(cmd, sizeof cmd, "exec '%s' --preset=adamw --scale=tiny %s > /dev/null", th_bin_path("train"), flags);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    double worst = 0, longest = 0;
    int samples = 0, checkpoints = 0;
    long long seen = -1;
    uint64_t start = gm_now_ns();
    while (gm_seconds_since(start) < 60 && samples < 40) {
        struct timespec nap = {0, 250 * 1000 * 1000};
        nanosleep(&nap, NULL);
        cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "train ended early");
        // The log first: a checkpoint newer than it only lowers the estimate.
        char *data;
        size_t len;
        if (gm_read_all(log, &data, &len)) continue;
        free(data);
        long long k = ckpt_step(ckpt);
        if (k < 0) continue;  // none yet
        double lost = seconds_trained_since(log, k, &longest);
        if (lost > worst) worst = lost;
        checkpoints += k != seen, seen = k;
        samples++;
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    cr_assert_eq(samples, 40, "%d samples in 60 s", samples);
    cr_assert_geq(checkpoints, 2, "the checkpoint was not replaced");
    cr_assert_leq(worst, 1 + 2 * longest + 0.5, "a kill would have lost %.2f s of steps (the longest %.2f s)", worst, longest);
    // The default, as logged.
    char *logged;
    size_t len;
    cr_assert_eq(gm_read_all(log, &logged, &len), 0, "%s", gm_error());
    cr_assert(strstr(logged, "\"ckpt_every_s\":1,"), "not in the logged configuration");
    free(logged);
    for (const char *const *scale = gm_scale_names; *scale; scale++) {
        gm_run_config rc;
        cr_assert_eq(gm_run_config_preset(&rc, "softcap", *scale), 0, "%s", gm_error());
        cr_assert_eq(rc.ckpt_every_s, 300, "the default at scale %s", *scale);
    }
    th_rmtree(dir);
    free(dir);
}
