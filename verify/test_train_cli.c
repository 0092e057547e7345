// The train program: every preset trains at test size; the same seed gives the same loss curve
// bit for bit; a run halted mid-way and resumed from its checkpoint continues bit for bit; gram-ns
// trains and --ckpt_every=-1 writes no checkpoint; bad flags and bad checkpoints are refused with
// one line.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "train/checkpoint.h"
#include "train/run_config.h"
#include "helpers.h"

// softcap on the test model (4 layers).
#define SOFTCAP_TEST_FLAGS "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64"

Test(train_cli, every_preset_trains_at_test_size, .timeout = 600) {
    const char *presets[][2] = {{"adamw", ""},
                                {"muon-v1", ""},
                                {"muon-v2", ""},
                                {"untied", ""},
                                {"value-embed", "--n_value_embeds=2 --window_start_tokens=16 --window_end_tokens=64"},
                                {"softcap", "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64"},
                                {"normuon", "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64"}};
    enum { N = sizeof presets / sizeof presets[0] };
    for (int i = 0; i < N; i++) cr_assert_str_eq(presets[i][0], gm_preset_names[i], "the table above misses a preset");
    cr_assert_null(gm_preset_names[N], "the table above misses %s", gm_preset_names[N]);
    for (int i = 0; i < N; i++) {
        char *dir = th_tmpdir(), *out, *err, log[4200];
        th_make_train_data(dir);
        cr_assert_eq(th_train(dir, presets[i][0], presets[i][1], &out, &err), 0, "%s: %s", presets[i][0], err);
        cr_assert(strstr(out, "train: done after 6 steps"), "%s: %s", presets[i][0], out);
        snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
        // Every line is JSON; the first carries the resolved config, commit, hardware and source.
        char cmd[8600], *po, *pe;
        snprintf(cmd, sizeof cmd,
                 "python3 -c \"import json,sys; rs=[json.loads(l) for l in open(sys.argv[1])]; s=rs[0]; "
                 "assert s['event']=='start' and s['config']['preset']==sys.argv[2] and s['git_commit'] and "
                 "s['hardware']['cpu'] and 'impl/train/trainer.c' in s['source'], s.keys(); "
                 "mp=s['memory_plan']; assert mp['params']>0 and mp['acts']>0 and "
                 "mp['total']==sum(v for k,v in mp.items() if k not in ('total','budget')), mp; print(len(rs))\" '%s' %s",
                 log, presets[i][0]);
        cr_assert_eq(th_run(cmd, &po, &pe), 0, "%s: log is not as expected: %s", presets[i][0], pe);
        free(po), free(pe);
        char *c = th_log_curve(log, 0);
        // Validation at steps 0, 3 and 6 (the end); the loss must come down on this learnable data.
        const char *v0 = strstr(c, "\"val_loss\":"), *v6 = strstr(strstr(c, "\"step\":6"), "\"val_loss\":");
        cr_assert(v0 && v6, "%s: no validation records:\n%s", presets[i][0], c);
        double l0 = atof(v0 + 11), l6 = atof(v6 + 11);
        cr_assert_lt(l6, l0, "%s: val loss %.4f -> %.4f did not decrease", presets[i][0], l0, l6);
        free(c), free(out), free(err);
        th_rmtree(dir);
        free(dir);
    }
}

Test(train_cli, same_seed_same_curve_and_exact_resume, .timeout = 300) {
    char *dir = th_tmpdir(), *out, *err, log[4200], extra[1024];
    th_make_train_data(dir);
    const char *pf = "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64";
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    cr_assert_eq(th_train(dir, "softcap", pf, &out, &err), 0, "%s", err);
    char *first = th_log_curve(log, 0);
    free(out), free(err);
    snprintf(extra, sizeof extra, "%s --overwrite=1", pf);
    cr_assert_eq(th_train(dir, "softcap", extra, &out, &err), 0, "%s", err);
    char *second = th_log_curve(log, 0);
    cr_assert_str_eq(first, second, "two runs with the same seed differ");
    free(out), free(err), free(second);
    // Halt after 3 steps (as Ctrl-C would: exit 130 and a checkpoint), then resume elsewhere.
    snprintf(extra, sizeof extra, "%s --halt_at=3 --overwrite=1", pf);
    cr_assert_eq(th_train(dir, "softcap", extra, &out, &err), 130, "%s %s", out, err);
    cr_assert(strstr(out, "interrupted after 3 steps"), "%s", out);
    free(out), free(err);
    snprintf(extra, sizeof extra, "%s --resume=%s/run/ckpt.bin --out_dir=%s/resumed", pf, dir, dir);
    cr_assert_eq(th_train(dir, "softcap", extra, &out, &err), 0, "%s", err);
    snprintf(log, sizeof log, "%s/resumed/log.jsonl", dir);
    char *resumed = th_log_curve(log, 3);
    // The full run's records from step 3 on (its val at 3 too).
    const char *from3 = strstr(first, "{\"event\":\"val\",\"step\":3");
    cr_assert_not_null(from3, "%s", first);
    cr_assert_str_eq(resumed, from3, "resumed run differs from the uninterrupted one");
    free(out), free(err), free(first), free(resumed);
    th_rmtree(dir);
    free(dir);
}

// --plan_memory prints the plan of the resolved configuration and exits 0 without reading data:
// every category, a total that is their sum, and the budget line; the record's softcap fits. On a
// host backend, the host plan's two tables follow.
Test(train_cli, plan_memory_prints_the_plan_and_reads_nothing, .timeout = 60) {
    char cmd[4200], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' --preset=softcap --scale=full --plan_memory=1 --train_data=/nonexistent/x_*.bin",
             th_bin_path("train"));
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    const char *rows[] = {"parameters", "parameter gradients", "Adam moments", "Muon momentum",
                          "activations kept for the backward", "per-layer scratch", "reused layer after layer",
                          "across layers", "head chunk", "rotary tables"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) cr_expect(strstr(out, rows[i]), "no '%s' row: %s", rows[i], out);
    cr_expect(strstr(out, "B = 1, T = 65536"), "%s", out);
    cr_expect(strstr(out, "budget 60 GB per GPU") && strstr(out, ": fits by"), "%s", out);
    // The host backend's two more tables (what the process fills and maps beyond the backend) and the
    // line that holds them against the limits.
    cr_expect(strstr(out, "checkpoint: host copy of parameters and optimizer states") &&
                  strstr(out, "OpenBLAS buffer of each OpenMP thread") && strstr(out, "train and val shards, mapped whole") &&
                  strstr(out, "\nhost: "), "%s", out);
    // Each table's total is the sum of its rows: each row ends "<bytes> <GB> <share>%".
    unsigned long long sum = 0;
    int tables = 0;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "memory plan:", 12)) sum = 0;
        char *tok[32], *ts = NULL;
        int n = 0;
        for (char *t = strtok_r(line, " ", &ts); t && n < 32; t = strtok_r(NULL, " ", &ts)) tok[n++] = t;
        if (n < 4 || tok[n - 1][strlen(tok[n - 1]) - 1] != '%') continue;
        unsigned long long bytes = strtoull(tok[n - 3], NULL, 10);
        if (n == 4 && !strcmp(tok[0], "total")) {
            cr_expect(bytes > 0 && bytes == sum, "table %d: total %llu, rows sum to %llu", tables, bytes, sum);
            tables++;
        } else {
            sum += bytes;
        }
    }
    cr_expect_eq(tables, 3, "%d tables", tables);
    free(out), free(err);
}

// --ortho=gram-ns trains; --ckpt_every=-1 writes no checkpoint; every train record has its step's
// wall time (step_s, what bench/peers.py reads).
Test(train_cli, gram_ns_and_no_checkpoint, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, path[4200];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "softcap", "--n_value_embeds=2 --skip_attn_mask=4 --ortho=gram-ns --ckpt_every=-1", &out, &err), 0,
                 "%s", err);
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    cr_assert_not(th_file_exists(path), "--ckpt_every=-1 wrote %s", path);
    snprintf(path, sizeof path, "%s/run/log.jsonl", dir);
    char *log;
    size_t len;
    cr_assert_eq(gm_read_all(path, &log, &len), 0, "%s", gm_error());
    int train_records = 0, timed = 0;
    for (char *p = log; (p = strstr(p, "\"event\":\"train\"")); p++) {
        train_records++;
        char *end = strchr(p, '\n'), *t = strstr(p, "\"step_s\":");
        if (t && (!end || t < end) && atof(t + 9) > 0) timed++;
    }
    cr_assert_eq(train_records, 6, "%s", log);
    cr_assert_eq(timed, train_records, "train records without a positive step_s: %s", log);
    free(log), free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// Run train on test data with `extra`; it must be refused (th_expect_refused) naming `fault`.
static void refused(const char *preset, const char *extra, const char *fault) {
    char *dir = th_tmpdir(), flags[4096], args[4200];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, extra);
    snprintf(args, sizeof args, "--preset=%s --scale=tiny %s", preset, flags);
    th_expect_refused("train", args, fault, 0);
    th_rmtree(dir);
    free(dir);
}

Test(train_cli, bad_flags_are_refused, .timeout = 120) {
    refused("muon-v2", "--stepz=5", "--stepz: unknown flag");
    refused("muon-v2", "--steps=many", "--steps: 'many' is not an integer");
    refused("muon-v2", "--steps=0", "--steps: 0 is out of range");
    refused("muon-v2", "--seed=-3", "--seed: '-3' is not an unsigned integer");
    refused("muon-v2", "--muon_scale=huge", "--muon_scale: 'huge' is not one of: none, sqrt-max, aspect");
    refused("muon-v2", "--ns_coeffs=septic",
            "train: error: --ns_coeffs: newton-schulz: unknown coefficient set 'septic' (known: quintic, cubic, you5, polar-express)\n");
    refused("muon-v2", "--cooldown_frac=0.3", "train: error: --cooldown_frac: has no effect on this run");
    // The val shard holds 2000 tokens: 7 batches of 4 x 64 before the loader wraps around.
    refused("muon-v2", "--val_tokens=2048",
            "val_*.bin hold 1792 distinct tokens in batches of W*B*T = 256; at most --val_tokens=1792 (more would count tokens twice)\n");
    refused("softcap", "--ortho=gram-ns --gram_restarts=2,x", "--gram_restarts: '2,x' is not 'none' or a comma-separated");
    refused("softcap", "--ortho=gram-ns --gram_restarts=0", "--gram_restarts: '0' is not 'none'");
    refused("softcap", "--ckpt_every=-2", "--ckpt_every: -2 is out of range");
    refused("muon-v2", "--gram_restarts=2", "--gram_restarts: has no effect on this run");
    refused("gpt5", "", "--preset: unknown preset 'gpt5'");
    refused("muon-v2", "--val_tokens=1000", "val_tokens 1000 is not a positive multiple of world*B*T");
    refused("muon-v2", "--train_data=/nonexistent/x_*.bin", "/nonexistent/x_*.bin: no shard matches");
    refused("muon-v2", "--vocab=100 --vocab_padded=128", "is >= vocab size 100");
}

Test(train_cli, bad_checkpoints_are_refused, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, extra[1024], path[4200];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "", &out, &err), 0, "%s", err);
    free(out), free(err);
    // A checkpoint of another configuration: each differing field is named with both values.
    snprintf(extra, sizeof extra, "--lr_matrix=0.1 --seed=7 --resume=%s/run/ckpt.bin --out_dir=%s/r2", dir, dir);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 1);
    snprintf(path, sizeof path, "train: error: rank 0: %s/run/ckpt.bin: written by a different configuration: lr_matrix "
             "(0.00036 -> 0.1), seed (1337 -> 7) (checkpoint -> this run); resume needs the "
             "same flags and world size\n", dir);
    cr_assert_str_eq(err, path);
    free(out), free(err);
    snprintf(path, sizeof path, "%s/r2", dir);  // refused before anything was written: no folder left
    cr_assert_not(th_file_exists(path), "the refused run left %s behind", path);
    // Another preset: more differences than one line holds. Whole fields are listed, then how many
    // more, and the line still ends as it should (a value was once cut in the middle, and the end
    // of the line with it).
    snprintf(extra, sizeof extra, "--resume=%s/run/ckpt.bin --out_dir=%s/r2 " SOFTCAP_TEST_FLAGS, dir, dir);
    cr_assert_eq(th_train(dir, "softcap", extra, &out, &err), 1);
    snprintf(path, sizeof path, "train: error: rank 0: %s/run/ckpt.bin: written by a different configuration: preset "
             "(\"muon-v2\" -> \"softcap\"), tied_head (1 -> 0), ", dir);
    cr_expect(!strncmp(err, path, strlen(path)), "%s", err);
    const char *more = strstr(err, " more (checkpoint -> this run); resume needs the same flags and world size\n");
    cr_expect(more && more[strlen(more) - 1] == '\n' && !strchr(more, '\n')[1], "not one whole line: %s", err);
    int open = 0, close = 0;
    for (const char *p = err; p < (more ? more : err); p++) open += *p == '(', close += *p == ')';
    cr_expect_eq(open, close, "a field's value was cut: %s", err);
    free(out), free(err);
    // A folder instead of the checkpoint file once said "read error".
    snprintf(extra, sizeof extra, "--resume=%s/run --out_dir=%s/r4", dir, dir);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 1);
    snprintf(path, sizeof path, "train: error: rank 0: --resume: %s/run is a folder; give its checkpoint file (%s/run/ckpt.bin)\n",
             dir, dir);
    cr_assert_str_eq(err, path);
    free(out), free(err);
    snprintf(path, sizeof path, "%s/r4", dir);
    cr_assert_not(th_file_exists(path), "the refused run left %s behind", path);
    // A truncated checkpoint.
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0);
    cr_assert_eq(gm_write_file_atomic(path, data, len - 100), 0);
    free(data);
    snprintf(extra, sizeof extra, "--resume=%s/run/ckpt.bin --out_dir=%s/r3", dir, dir);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 1);
    cr_assert(strstr(err, "truncated") && strstr(err, "ckpt.bin"), "%s", err);
    free(out), free(err);
    snprintf(path, sizeof path, "%s/r3", dir);
    cr_assert_not(th_file_exists(path), "the refused run left %s behind", path);
    th_rmtree(dir);
    free(dir);
}

Test(train_cli, ctrl_c_stops_cleanly_with_a_checkpoint, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, flags[4096], script[9000], path[4300];
    th_make_train_data(dir);
    th_test_flags(flags, sizeof flags, dir, "--steps=1000000 --val_every=0");
    // SIGINT after 2 s, as Ctrl-C sends it; the run must finish its step, checkpoint and exit 130.
    snprintf(script, sizeof script, "'%s' --preset=muon-v2 --scale=tiny %s & p=$!; sleep 2; kill -INT $p; wait $p",
             th_bin_path("train"), flags);
    cr_assert_eq(th_run_script(dir, "", script, &out, &err), 130, "%s %s", out, err);
    cr_assert(strstr(out, "train: interrupted after"), "%s", out);
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    gm_ckpt c;
    cr_assert_eq(gm_ckpt_read(&c, path), 0, "%s", gm_error());
    gm_ckpt_close(&c);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// What the person at the terminal reads: progress lines with the elapsed time and an estimate of
// the rest; a summary that says which step its val loss is from ("final" only at the last step;
// an interrupted run once called step 0's loss final), that a run of <= 10 steps measured no
// speed (it said "0 tokens/s"), and where the log and the checkpoint are; an error as the last
// line even with stdout redirected (stdout is flushed before it).
Test(train_cli, terminal_lines_say_what_happened, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, want[9000], flags[4096], cmd[8800];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "step 1/6 [###.................] | loss "), "%s", out);
    cr_assert(strstr(out, " tok/s | ") && strstr(out, " s elapsed, ETA "), "%s", out);
    cr_assert(strstr(out, "train: done after 6 steps: final val loss "), "%s", out);
    cr_assert(strstr(out, " (step 6), speed not measured (the first 10 steps are warm-up), peak RSS "), "%s", out);
    snprintf(want, sizeof want, " MiB, log %s/run/log.jsonl, checkpoint %s/run/ckpt.bin\n", dir, dir);
    cr_assert(strstr(out, want), "%s", out);
    free(out), free(err);
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=5 --overwrite=1", &out, &err), 130, "%s", err);
    cr_assert(strstr(out, "train: interrupted after 5 steps: last val loss "), "%s", out);
    cr_assert(strstr(out, " (step 3), speed not measured"), "%s", out);
    free(out), free(err);
    // --ckpt_every=-1 writes no checkpoint, and the last line names none (it named ckpt.bin).
    snprintf(cmd, sizeof cmd, "%s/run/ckpt.bin", dir);
    cr_assert_eq(unlink(cmd), 0);
    cr_assert_eq(th_train(dir, "muon-v2", "--ckpt_every=-1 --overwrite=1", &out, &err), 0, "%s", err);
    snprintf(want, sizeof want, " MiB, log %s/run/log.jsonl, no checkpoint written (--ckpt_every=-1)\n", dir);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert_neq(access(cmd, F_OK), 0, "--ckpt_every=-1 wrote %s", cmd);
    free(out), free(err);
    // Both streams into one file: the error must come after everything printed before it.
    th_test_flags(flags, sizeof flags, dir, "--val_tokens=2048");
    snprintf(cmd, sizeof cmd, "'%s' --preset=muon-v2 --scale=tiny %s > '%s/both.txt' 2>&1", th_bin_path("train"), flags, dir);
    cr_assert_eq(th_run(cmd, NULL, NULL), 1);
    snprintf(cmd, sizeof cmd, "%s/both.txt", dir);
    char *both;
    size_t len;
    cr_assert_eq(gm_read_all(cmd, &both, &len), 0);
    cr_assert_eq(th_count_lines(both), 2, "%s", both);
    cr_assert(!strncmp(both, "train: muon-v2/tiny on 1 rank(s)", 32) && strstr(both, "\ntrain: error: rank 0: --val_tokens=2048: "),
              "the error is not the last line:\n%s", both);
    free(both);
    th_rmtree(dir);
    free(dir);
}

// Started from another folder (or before `make data`), the tiny scale's data patterns match
// nothing: the message says they are relative to the current folder and what builds them (it
// said only "no shard matches this pattern"). The start line is a short summary (it was a 2 KB
// one-line JSON of the configuration, which is in the log).
Test(train_cli, a_run_from_another_folder_is_told_where_the_data_comes_from, .timeout = 60) {
    char *dir = th_tmpdir(), *out, *err, cmd[8600], want[9000];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' --preset=muon-v2 --scale=tiny", dir, th_bin_path("train"));
    cr_assert_eq(th_run(cmd, &out, &err), 1, "%s", out);
    snprintf(want, sizeof want, "train: error: rank 0: --train_data: data/gcide/train_*.bin: no shard matches this pattern (relative "
             "to the current folder %s); `make data` in the repository's folder builds data/gcide/\n", dir);
    cr_assert_str_eq(err, want);
    cr_assert_eq(th_count_lines(out), 1, "%s", out);
    cr_assert(!strchr(out, '{') && strlen(out) < 400, "not a short summary: %s", out);
    cr_assert(strstr(out, "train: muon-v2/tiny on 1 rank(s) (single, data channel staged), backend cpu: 12 layers, d_model 128, 200 steps "
                          "of 1024 tokens (B 4 x T 256 x 1 rank(s) x 1 micro-batch(es)), out_dir runs/muon-v2-tiny"), "%s", out);
    cr_assert_not(th_file_exists(strcat(strcpy(want, dir), "/runs")), "an out_dir was made");
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
