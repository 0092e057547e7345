// --grad_sync=reduce-scatter (record 2025-05-30_noallreduce: each Muon matrix's averaged gradient
// goes only to the rank that orthogonalizes it, which alone keeps its momentum) is the all-reduce's
// computation. Under mpirun on 1..4 ranks, with and without --grad_accum=2, every Muon preset's run
// with it ends with the same checkpoint file, byte for byte (parameters, Adam's and Muon's states,
// data position, step), and logs the same losses, as the run with the all-reduce. Bitwise, not
// within a bound: the reduce-scatter is the all-reduce's own reduction to rank 0 followed by a
// scatter (dist/comm.h), so the owner's Muon step sees the same gradients and momenta, and the
// checkpoint gathers each matrix's momentum from its owner, the one rank that kept it current.
// A run whose Muon momentum differs by one float ulp (0.95 -> 0.9500001) differs in those bytes:
// the comparison sees a change far smaller than a stale or mis-routed momentum would make.
// A reduce-scatter run halted and resumed (under either option) ends bit for bit like the
// uninterrupted one; a checkpoint resumed on another world size, --dump_at on several ranks, ranks
// with different --grad_sync and --grad_sync without Muon are refused with one line.
// Test scale: 4 layers, d 64, T 64, one sequence per rank, 4 steps (val at 2 and 4).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "train/checkpoint.h"
#include "helpers.h"

enum { STEPS = 4 };

// The shrunk presets keep their switches: two value-embedding tables, a layer without attention, a
// window that grows over the run. 768 validation tokens divide among 1..4 ranks of 64.
static const char *preset_flags(const char *preset) {
    if (!strcmp(preset, "value-embed")) return "--n_value_embeds=2 --window_start_tokens=16 --window_end_tokens=64";
    if (!strcmp(preset, "softcap") || !strcmp(preset, "normuon"))
        return "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64";
    return "";
}

// Train preset on `world` ranks into dir/<name>; exit status, stdout and stderr as th_run.
static int run(const char *dir, const char *preset, int world, const char *name, const char *extra, char **out, char **err) {
    char flags[4096], all[2400], cmd[8600];
    snprintf(all, sizeof all, "--batch=1 --steps=%d --val_every=2 --val_tokens=768 --comm=mpi --comm_timeout=120 %s %s --out_dir=%s/%s",
             STEPS, preset_flags(preset), extra, dir, name);
    th_test_flags(flags, sizeof flags, dir, all);
    snprintf(cmd, sizeof cmd, "%s -x OPENBLAS_NUM_THREADS=1 '%s' --preset=%s --scale=tiny %s", th_mpirun(world), th_bin_path("train"),
             preset, flags);
    return th_run(cmd, out, err);
}

static void run_ok(const char *dir, const char *preset, int world, const char *name, const char *extra) {
    char *out, *err;
    int rc = run(dir, preset, world, name, extra, &out, &err);
    cr_assert_eq(rc, 0, "%s W=%d %s: exit %d: %s", preset, world, extra, rc, err);
    free(out), free(err);
}

// The names of the sections in which dir/a/ckpt.bin and dir/b/ckpt.bin differ ("" when none, and
// then the files are the same bytes), and whether the logged losses from step `from` on differ.
static void compare(const char *dir, const char *a, const char *b, int from, char *diff, size_t len, int *curves_differ) {
    char pa[4400], pb[4400];
    gm_ckpt ca, cb;
    snprintf(pa, sizeof pa, "%s/%s/ckpt.bin", dir, a);
    snprintf(pb, sizeof pb, "%s/%s/ckpt.bin", dir, b);
    cr_assert_eq(gm_ckpt_read(&ca, pa), 0, "%s", gm_error());
    cr_assert_eq(gm_ckpt_read(&cb, pb), 0, "%s", gm_error());
    cr_assert_eq(ca.n, cb.n, "%s and %s have different sections", pa, pb);
    diff[0] = '\0';
    for (int i = 0; i < ca.n; i++) {
        cr_assert_str_eq(ca.sections[i].name, cb.sections[i].name);
        if (ca.sections[i].bytes != cb.sections[i].bytes || memcmp(ca.sections[i].data, cb.sections[i].data, ca.sections[i].bytes))
            snprintf(diff + strlen(diff), len - strlen(diff), "%s%s", diff[0] ? " " : "", ca.sections[i].name);
    }
    if (!diff[0]) cr_assert(ca.len == cb.len && !memcmp(ca.blob, cb.blob, ca.len), "%s and %s differ outside their sections", pa, pb);
    gm_ckpt_close(&ca), gm_ckpt_close(&cb);
    snprintf(pa, sizeof pa, "%s/%s/log.jsonl", dir, a);
    snprintf(pb, sizeof pb, "%s/%s/log.jsonl", dir, b);
    char *la = th_log_curve(pa, from), *lb = th_log_curve(pb, from);
    *curves_differ = strcmp(la, lb) != 0;
    free(la), free(lb);
}

static void expect_same(const char *dir, const char *a, const char *b, int from, const char *what) {
    char diff[1024];
    int curves_differ;
    compare(dir, a, b, from, diff, sizeof diff, &curves_differ);
    cr_assert_str_eq(diff, "", "%s: the checkpoints differ in: %s", what, diff);
    cr_assert_not(curves_differ, "%s: the logged losses differ", what);
}

// Each case: both options on `world` ranks, the same flags otherwise.
static void equivalence(const char *preset, int world, int accum, const char *extra) {
    char *dir = th_tmpdir(), flags[600], what[700];
    th_make_train_data(dir);
    snprintf(flags, sizeof flags, "--grad_accum=%d %s --grad_sync=all-reduce", accum, extra);
    run_ok(dir, preset, world, "ar", flags);
    snprintf(flags, sizeof flags, "--grad_accum=%d %s --grad_sync=reduce-scatter", accum, extra);
    run_ok(dir, preset, world, "rs", flags);
    snprintf(what, sizeof what, "%s on %d ranks, --grad_accum=%d %s", preset, world, accum, extra);
    expect_same(dir, "ar", "rs", 0, what);
    th_rmtree(dir);
    free(dir);
}

// World sizes per preset: every preset on 2 ranks and on 3 or 4, with and without accumulation; 1
// to 4 overall. One case runs on the guarded backend (data channel and gather staged through host
// memory, any host dereference of backend memory a crash).
Test(grad_sync, muon_v1_reduce_scatter_is_the_all_reduce, .timeout = 600) {
    equivalence("muon-v1", 1, 1, "");
    equivalence("muon-v1", 2, 2, "");
    equivalence("muon-v1", 3, 1, "");
}

Test(grad_sync, muon_v2_reduce_scatter_is_the_all_reduce, .timeout = 600) {
    equivalence("muon-v2", 2, 1, "--backend=guarded");
    equivalence("muon-v2", 4, 2, "");
}

Test(grad_sync, untied_reduce_scatter_is_the_all_reduce, .timeout = 600) {
    equivalence("untied", 2, 2, "");
    equivalence("untied", 3, 1, "");
}

Test(grad_sync, value_embed_reduce_scatter_is_the_all_reduce, .timeout = 600) {
    equivalence("value-embed", 2, 1, "");
    equivalence("value-embed", 4, 2, "");
}

Test(grad_sync, softcap_reduce_scatter_is_the_all_reduce, .timeout = 600) {
    equivalence("softcap", 2, 1, "");
    equivalence("softcap", 3, 2, "");
}

// NorMuon's second moments and the cautious decay run after the all-gather on every rank, from
// the gathered updates: the same under either sync, even though the momentum is sharded.
Test(grad_sync, normuon_reduce_scatter_is_the_all_reduce, .timeout = 600) {
    equivalence("normuon", 3, 2, "");
}

// The negative control: one ulp of the Muon momentum (0.95 and 0.9500001 are neighbouring floats)
// shows in the checkpoint's Muon state and parameters and in the losses.
Test(grad_sync, one_ulp_of_muon_momentum_is_seen, .timeout = 300) {
    char *dir = th_tmpdir(), diff[1024];
    th_make_train_data(dir);
    run_ok(dir, "softcap", 2, "ar", "--grad_sync=all-reduce");
    run_ok(dir, "softcap", 2, "rs", "--grad_sync=reduce-scatter --muon_momentum=0.9500001");
    int curves_differ;
    compare(dir, "ar", "rs", 0, diff, sizeof diff, &curves_differ);
    cr_assert(strstr(diff, "params") && strstr(diff, "muon.buf"), "the perturbed run's checkpoint differs only in: '%s'", diff);
    cr_assert(curves_differ, "the perturbed run logged the same losses");
    th_rmtree(dir);
    free(dir);
}

// Halted after 2 of 4 steps under the reduce-scatter on 3 ranks, resumed under either option: the
// final checkpoint and the losses after the halt are the uninterrupted run's, which gathers and
// writes its state after every step on the way (--ckpt_every=1). On 2 ranks the same checkpoint is
// refused (the world size is part of the run).
Test(grad_sync, reduce_scatter_checkpoint_resumes_bit_for_bit_under_either_option, .timeout = 600) {
    char *dir = th_tmpdir(), *out, *err, flags[4600], want[4800];
    th_make_train_data(dir);
    const char *rs = "--grad_accum=2 --grad_sync=reduce-scatter";
    snprintf(flags, sizeof flags, "%s --ckpt_every=1", rs);
    run_ok(dir, "value-embed", 3, "ref", flags);
    snprintf(flags, sizeof flags, "%s --halt_at=2", rs);
    cr_assert_eq(run(dir, "value-embed", 3, "halted", flags, &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(flags, sizeof flags, "--grad_accum=2 --grad_sync=all-reduce --resume=%s/halted/ckpt.bin", dir);
    run_ok(dir, "value-embed", 3, "resumed_ar", flags);
    expect_same(dir, "ref", "resumed_ar", 2, "resumed under all-reduce");
    snprintf(flags, sizeof flags, "%s --resume=%s/halted/ckpt.bin", rs, dir);
    cr_assert_neq(run(dir, "value-embed", 2, "w2", flags, &out, &err), 0, "a 3-rank checkpoint was resumed on 2 ranks: %s", out);
    snprintf(want, sizeof want, "train: error: rank 0: %s/halted/ckpt.bin: written by a different configuration: world_size (3 -> 2)", dir);
    cr_assert(strstr(err, want), "%s", err);
    free(out), free(err);
    run_ok(dir, "value-embed", 3, "halted", flags);
    expect_same(dir, "ref", "halted", 2, "resumed under reduce-scatter");
    th_rmtree(dir);
    free(dir);
}

Test(grad_sync, refusals_are_one_line, .timeout = 300) {
    char *dir = th_tmpdir(), *out, *err, f0[4096], f1[4096], cmd[12000];
    th_make_train_data(dir);
    // --dump_at on 2 ranks: rank 0 would write matrices it never received.
    cr_assert_neq(run(dir, "softcap", 2, "dump", "--grad_sync=reduce-scatter --dump_at=1", &out, &err), 0, "%s", out);
    cr_assert(strstr(err, "train: error: rank 0: --dump_at: under --grad_sync=reduce-scatter on 2 ranks, rank 0 holds only its own "
                          "matrices' gradients and momenta; dump with --grad_sync=all-reduce (the same values)\n"), "%s", err);
    free(out), free(err);
    // Ranks with different options (MPMD): refused at start (unchecked, their collectives would not
    // match: the short --comm_timeout ends such a job in seconds).
    th_test_flags(f0, sizeof f0, dir, "--batch=1 --val_tokens=768 --comm=mpi --comm_timeout=20 --grad_sync=all-reduce");
    th_test_flags(f1, sizeof f1, dir, "--batch=1 --val_tokens=768 --comm=mpi --comm_timeout=20 --grad_sync=reduce-scatter");
    snprintf(cmd, sizeof cmd, "%s '%s' --preset=muon-v1 --scale=tiny %s : -np 1 '%s' --preset=muon-v1 --scale=tiny %s",
             th_mpirun(1), th_bin_path("train"), f0, th_bin_path("train"), f1);
    cr_assert_neq(th_run(cmd, &out, &err), 0, "%s", out);
    cr_assert(strstr(err, "--grad_sync differs between ranks: rank 1 has 0000000000000001, rank 0 has 0000000000000000"), "%s", err);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
    // Nothing to shard without Muon.
    th_expect_refused("train", "--preset=adamw --scale=tiny --grad_sync=reduce-scatter",
                      "--grad_sync: has no effect on this run (--matrix_opt=adam: no Muon matrices to reduce-scatter, preset adamw)", 1);
}
