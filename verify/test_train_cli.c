// The train program: every preset trains at test size; the same seed gives the same loss curve
// bit for bit; a run halted mid-way and resumed from its checkpoint continues bit for bit; gram-ns
// trains and --ckpt_every=-1 writes no checkpoint; bad flags and bad checkpoints are refused with
// one line.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "train/checkpoint.h"
#include "helpers.h"

static int train(const char *dir, const char *preset, const char *extra, char **out, char **err) {
    char flags[4096], cmd[8600];
    th_test_flags(flags, sizeof flags, dir, extra);
    snprintf(cmd, sizeof cmd, "'%s' --preset=%s --scale=tiny %s", th_bin_path("train"), preset, flags);
    return th_run(cmd, out, err);
}

// The "train"/"val" records of a log, without timing fields: the loss curve.
static char *curve(const char *log_path, int from_step) {
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(log_path, &data, &len), 0, "%s", gm_error());
    char *out = calloc(len + 1, 1), *save = NULL;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strstr(line, "\"event\":\"train\"") && !strstr(line, "\"event\":\"val\"")) continue;
        int step = atoi(strstr(line, "\"step\":") + 7);
        if (step < from_step) continue;
        char *cut = strstr(line, ",\"train_time_s\"");
        if (cut) *cut = '\0';
        strcat(out, line);
        strcat(out, "\n");
    }
    free(data);
    return out;
}

Test(train_cli, every_preset_trains_at_test_size, .timeout = 600) {
    const char *presets[][2] = {{"adamw", ""},
                                {"muon-v1", ""},
                                {"muon-v2", ""},
                                {"untied", ""},
                                {"value-embed", "--n_value_embeds=2 --window_start_tokens=16 --window_end_tokens=64"},
                                {"softcap", "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64"}};
    for (int i = 0; i < 6; i++) {
        char *dir = th_tmpdir(), *out, *err, log[4200];
        th_make_train_data(dir);
        cr_assert_eq(train(dir, presets[i][0], presets[i][1], &out, &err), 0, "%s: %s", presets[i][0], err);
        cr_assert(strstr(out, "train: done after 6 steps"), "%s: %s", presets[i][0], out);
        snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
        // Every line is JSON; the first carries the resolved config, commit, hardware and source.
        char cmd[8600], *po, *pe;
        snprintf(cmd, sizeof cmd,
                 "python3 -c \"import json,sys; rs=[json.loads(l) for l in open(sys.argv[1])]; s=rs[0]; "
                 "assert s['event']=='start' and s['config']['preset']==sys.argv[2] and s['git_commit'] and "
                 "s['hardware']['cpu'] and 'impl/train/trainer.c' in s['source'], s.keys(); print(len(rs))\" '%s' %s",
                 log, presets[i][0]);
        cr_assert_eq(th_run(cmd, &po, &pe), 0, "%s: log is not as expected: %s", presets[i][0], pe);
        free(po), free(pe);
        char *c = curve(log, 0);
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
    cr_assert_eq(train(dir, "softcap", pf, &out, &err), 0, "%s", err);
    char *first = curve(log, 0);
    free(out), free(err);
    cr_assert_eq(train(dir, "softcap", pf, &out, &err), 0, "%s", err);
    char *second = curve(log, 0);
    cr_assert_str_eq(first, second, "two runs with the same seed differ");
    free(out), free(err), free(second);
    // Halt after 3 steps (as Ctrl-C would: exit 130 and a checkpoint), then resume elsewhere.
    snprintf(extra, sizeof extra, "%s --halt_at=3", pf);
    cr_assert_eq(train(dir, "softcap", extra, &out, &err), 130, "%s %s", out, err);
    cr_assert(strstr(out, "interrupted after 3 steps"), "%s", out);
    free(out), free(err);
    snprintf(extra, sizeof extra, "%s --resume=%s/run/ckpt.bin --out_dir=%s/resumed", pf, dir, dir);
    cr_assert_eq(train(dir, "softcap", extra, &out, &err), 0, "%s", err);
    snprintf(log, sizeof log, "%s/resumed/log.jsonl", dir);
    char *resumed = curve(log, 3);
    // The full run's records from step 3 on (its val at 3 too).
    const char *from3 = strstr(first, "{\"event\":\"val\",\"step\":3");
    cr_assert_not_null(from3, "%s", first);
    cr_assert_str_eq(resumed, from3, "resumed run differs from the uninterrupted one");
    free(out), free(err), free(first), free(resumed);
    th_rmtree(dir);
    free(dir);
}

// --ortho=gram-ns trains; --ckpt_every=-1 writes no checkpoint; every train record has its step's
// wall time (step_s, what bench/peers.py reads).
Test(train_cli, gram_ns_and_no_checkpoint, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, path[4200];
    th_make_train_data(dir);
    cr_assert_eq(train(dir, "softcap", "--n_value_embeds=2 --skip_attn_mask=4 --ortho=gram-ns --ckpt_every=-1", &out, &err), 0,
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

// Run train with `extra`; it must exit 1 with one stderr line containing `fault`.
static void refused(const char *preset, const char *extra, const char *fault) {
    char *dir = th_tmpdir(), *out, *err;
    th_make_train_data(dir);
    int rc = train(dir, preset, extra, &out, &err);
    cr_assert_eq(rc, 1, "'%s' exited %d: %s", extra, rc, err);
    cr_assert_eq(th_count_lines(err), 1, "not one line: %s", err);
    cr_assert(strstr(err, fault), "expected '%s' in: %s", fault, err);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

Test(train_cli, bad_flags_are_refused, .timeout = 120) {
    refused("muon-v2", "--stepz=5", "--stepz: unknown flag");
    refused("muon-v2", "--steps=many", "--steps: 'many' is not an integer");
    refused("muon-v2", "--steps=0", "--steps: 0 is out of range");
    refused("muon-v2", "--seed=-3", "--seed: '-3' is not an unsigned integer");
    refused("muon-v2", "--muon_scale=huge", "--muon_scale: 'huge' is not one of: none, sqrt-max, aspect");
    refused("muon-v2", "--ns_coeffs=septic", "--ns_coeffs:");
    refused("softcap", "--ortho=gram-ns --gram_restarts=2,x", "--gram_restarts: '2,x' is not 'none' or a comma-separated");
    refused("softcap", "--gram_restarts=0", "--gram_restarts: '0' is not 'none'");
    refused("softcap", "--ckpt_every=-2", "--ckpt_every: -2 is out of range");
    refused("gpt5", "", "--preset: unknown preset 'gpt5'");
    refused("muon-v2", "--val_tokens=1000", "val_tokens 1000 is not a positive multiple of world*B*T");
    refused("muon-v2", "--train_data=/nonexistent/x_*.bin", "/nonexistent/x_*.bin: no shard matches");
    refused("muon-v2", "--vocab=100 --vocab_padded=128", "is >= vocab size 100");
}

Test(train_cli, bad_checkpoints_are_refused, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, extra[1024], path[4200];
    th_make_train_data(dir);
    cr_assert_eq(train(dir, "muon-v2", "", &out, &err), 0, "%s", err);
    free(out), free(err);
    // A checkpoint of another configuration.
    snprintf(extra, sizeof extra, "--lr_matrix=0.1 --resume=%s/run/ckpt.bin --out_dir=%s/r2", dir, dir);
    cr_assert_eq(train(dir, "muon-v2", extra, &out, &err), 1);
    cr_assert(strstr(err, "written by a different configuration"), "%s", err);
    free(out), free(err);
    // A truncated checkpoint.
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0);
    cr_assert_eq(gm_write_file_atomic(path, data, len - 100), 0);
    free(data);
    snprintf(extra, sizeof extra, "--resume=%s/run/ckpt.bin --out_dir=%s/r3", dir, dir);
    cr_assert_eq(train(dir, "muon-v2", extra, &out, &err), 1);
    cr_assert(strstr(err, "truncated") && strstr(err, "ckpt.bin"), "%s", err);
    free(out), free(err);
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
    snprintf(path, sizeof path, "%s/int.sh", dir);
    FILE *f = fopen(path, "w");
    fputs(script, f);
    fclose(f);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "bash '%s'", path);
    cr_assert_eq(th_run(cmd, &out, &err), 130, "%s %s", out, err);
    cr_assert(strstr(out, "train: interrupted after"), "%s", out);
    snprintf(path, sizeof path, "%s/run/ckpt.bin", dir);
    gm_ckpt c;
    cr_assert_eq(gm_ckpt_read(&c, path), 0, "%s", gm_error());
    gm_ckpt_close(&c);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
