// build/bench/kernels on the timing backend: its rows are the calls the real step makes (each part's
// kernels, integral call counts that match the model's layers, the orthogonalizer the run chose),
// its step rows name the trainer's parts, --compare reads what it wrote, and bad flags are refused
// with one line. Timings themselves are never checked (they belong to make bench).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

// Run the bench at test scale into dir; returns the CSV's text.
static char *bench_csv(const char *dir, const char *extra) {
    char cmd[8600], *out, *err, *csv;
    size_t len;
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 '%s' --preset=softcap --scale=test --steps=2 --n_value_embeds=2 --skip_attn_mask=4 "
             "--out='%s' --name=k %s",
             th_bin_path("bench/kernels"), dir, extra);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    char path[4300];
    snprintf(path, sizeof path, "%s/k.csv\n", dir);
    cr_assert_str_eq(out, path, "stdout should be the CSV's path");
    path[strlen(path) - 1] = '\0';
    cr_assert_eq(gm_read_all(path, &csv, &len), 0, "%s", gm_error());
    free(out), free(err);
    return csv;
}

// Calls per step of the rows whose name is `name` (all shapes), and how many such rows.
static double calls_of(const char *csv, const char *name, int *rows) {
    double calls = 0;
    *rows = 0;
    size_t n = strlen(name);
    for (const char *p = csv; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == ',') {
            const char *c = strchr(p + n + 1, ',');  // after the shape
            double v = atof(c + 1);
            cr_assert_eq(v, floor(v), "%s: %g calls per step is not a whole number", name, v);
            calls += v, (*rows)++;
        }
    return calls;
}

Test(bench_kernels, rows_are_the_calls_of_the_real_step, .timeout = 120) {
    char *dir = th_tmpdir();
    char *csv = bench_csv(dir, "");
    int rows;
    // Test-scale softcap: 4 layers, layer 2 without attention (--skip_attn_mask=4): 3 attention
    // layers, one forward and one backward each (the backward reads the kept output and its
    // log-sum-exp instead of recomputing them).
    cr_expect_eq(calls_of(csv, "model:attn_fwd", &rows), 3, "%s", csv);
    cr_expect_eq(calls_of(csv, "model:attn_bwd", &rows), 3, "%s", csv);
    cr_expect_eq(calls_of(csv, "optimizer:orthogonalize", &rows), 1, "%s", csv);
    cr_expect(strstr(csv, "NS5 bf16"), "the default orthogonalizer is the records' NS: %s", csv);
    cr_expect_gt(calls_of(csv, "model:matmul_fwd", &rows), 0, "%s", csv);
    cr_expect_gt(calls_of(csv, "optimizer:adam_update", &rows), 0, "%s", csv);
    const char *parts[] = {"step.model,", "step.data,", "step.allreduce,", "step.optimizer,", "step.loss,",
                           "step.total,", "step.free,", "ceiling.sgemm,", "ceiling.memcpy,"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) cr_expect(strstr(csv, parts[i]), "no %s row", parts[i]);
    // Every kernel row is filed under a part of the step.
    for (const char *p = strchr(csv, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        if (!strncmp(p, "step.", 5) || !strncmp(p, "ceiling.", 8)) continue;
        cr_expect(!strncmp(p, "model:", 6) || !strncmp(p, "data:", 5) || !strncmp(p, "allreduce:", 10) ||
                      !strncmp(p, "optimizer:", 10) || !strncmp(p, "loss:", 5),
                  "a row outside the step's parts: %.60s", p);
    }
    // --compare of a run with itself: every ratio 1.
    char cmd[8800], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' --compare '%s/k.csv' '%s/k.csv'", th_bin_path("bench/kernels"), dir, dir);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "step: B/A = 1.000"), "%s", out);
    cr_expect_null(strstr(out, "only in"), "%s", out);
    free(out), free(err), free(csv);
    // The run configuration's flags reach the step: gram-ns is what is timed.
    csv = bench_csv(dir, "--ortho=gram-ns");
    cr_expect(strstr(csv, "GramNS5 bf16"), "%s", csv);
    free(csv);
    th_rmtree(dir);
    free(dir);
}

// Does text hold a line starting with `prefix`?
static int has_line(const char *text, const char *prefix) {
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, prefix, strlen(prefix))) return 1;
    return 0;
}

// --ceilings=library (the CUDA backend's default, run here on the CPU backend: OpenBLAS in the
// library's place): the report rates every matmul against the library at the GEMM shapes the CUDA
// backend issues for it, measured in the same run, and names the device.
Test(bench_kernels, library_ceilings_rate_every_matmul_at_its_shapes, .timeout = 120) {
    char *dir = th_tmpdir();
    char *csv = bench_csv(dir, "--ceilings=library");
    cr_expect(has_line(csv, "name,shape,calls,median_ms,min_ms,max_ms,flops,bytes,gflops,gbs,frac_GEMM,frac_copy,"),
              "%.200s", csv);
    cr_expect(has_line(csv, "ceiling.gemm,2048x2048x2048 NN,"), "%s", csv);
    cr_expect(has_line(csv, "ceiling.copy,256MiB,"), "%s", csv);
    cr_expect(!has_line(csv, "ceiling.sgemm,") && !has_line(csv, "ceiling.memcpy,"), "host ceilings: %s", csv);
    // Every matmul row's GEMMs (cuda/matmul.cu: forward OC x N x C, op T N; backward dinp C x N x OC,
    // N N, and dW C x OC x N, N T) have a ceiling row, and no other GEMM does.
    int expected = 0, rows = 0;
    for (const char *p = csv; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        int N, C, OC, C2, bwd = !strncmp(p, "model:matmul_bwd,", 17);
        if (!bwd && strncmp(p, "model:matmul_fwd,", 17)) continue;
        cr_assert_eq(sscanf(p + 17, "%dx%d @ %dx%d^T", &N, &C, &OC, &C2), 4, "%.80s", p);
        char want[3][80];
        snprintf(want[0], sizeof want[0], "ceiling.gemm_at,%dx%dx%d TN,", OC, N, C);
        snprintf(want[1], sizeof want[1], "ceiling.gemm_at,%dx%dx%d NN,", C, N, OC);
        snprintf(want[2], sizeof want[2], "ceiling.gemm_at,%dx%dx%d NT,", C, OC, N);
        for (int g = bwd; g < (bwd ? 3 : 1); g++) cr_expect(has_line(csv, want[g]), "no %s in %s", want[g], csv);
        expected++;
    }
    for (const char *p = csv; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) rows += !strncmp(p, "ceiling.gemm_at,", 16);
    cr_expect(expected > 0 && rows > 0 && rows <= 3 * expected, "%d GEMM ceilings for %d matmul rows", rows, expected);
    free(csv);
    // The Markdown: the device named, the per-shape table, a fraction on every matmul row and "-"
    // on the others, and the matmuls' time against the library's.
    char path[4200], *md;
    size_t len;
    snprintf(path, sizeof path, "%s/k.md", dir);
    cr_assert_eq(gm_read_all(path, &md, &len), 0, "%s", gm_error());
    cr_expect(strstr(md, "- Device: **") && strstr(md, "## Ceilings measured in this run, on "), "%s", md);
    cr_expect(strstr(md, "| GEMM | library ms | GFLOP/s |"), "%s", md);
    cr_expect(strstr(md, "| of GEMM | of copy | of roofline | library at its shapes | ms per step |"), "%s", md);
    cr_expect(strstr(md, "**Matmuls: ") && strstr(md, "the library at the same GEMM shapes (OpenBLAS sgemm"), "%s", md);
    for (const char *p = strstr(md, "| part:kernel |"); p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "| model:", 8) && strncmp(p, "| optimizer:", 12)) continue;
        const char *cell = p;  // the 12th cell: "library at its shapes"
        for (int c = 0; c < 11 && cell; c++) cell = strchr(cell + 1, '|');
        cr_assert(cell, "%.100s", p);
        const int matmul = !strncmp(p, "| model:matmul_", 15);
        cr_expect(matmul ? cell[2] != '-' && atof(cell + 2) > 0 : !strncmp(cell, "| - |", 5), "%.200s", p);
    }
    free(md);
    th_rmtree(dir);
    free(dir);
}

// --count=1 counts the very calls the timed step makes: run beside a timed run of the same
// configuration, every counted row is found in the timed CSV, and the totals of its last line are
// that CSV's sums (calls x FLOPs, calls x bytes, calls), to the printed digits.
Test(bench_kernels, count_mode_counts_the_timed_steps_calls, .timeout = 120) {
    char *dir = th_tmpdir();
    char *csv = bench_csv(dir, "");
    double flops = 0, bytes = 0, calls = 0;
    for (const char *p = strchr(csv, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        if (!strncmp(p, "step.", 5) || !strncmp(p, "ceiling.", 8)) continue;
        const char *f = p;
        double v[8];  // fields 1..8: shape, calls, median, min, max, flops, bytes, ...
        for (int c = 0; c < 8; c++) f = strchr(f, ',') + 1, v[c] = atof(f);
        calls += v[1], flops += v[1] * v[5], bytes += v[1] * v[6];
    }
    free(csv);
    char cmd[9000], *out, *err;
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 GM_CUDA_ATTN=auto,wgmma1 '%s' --count=1 --preset=softcap --scale=test "
             "--n_value_embeds=2 --skip_attn_mask=4 "
             "--out='%s' --name=c --rates='%s' --measured='%s/k.csv'",
             th_bin_path("bench/kernels"), dir, th_root_path("reports/gpu-h100/h100_rates.csv"), dir);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    const char *last = strstr(out, "step: ");
    cr_assert(last, "%s", out);
    double gb, tflop, launches, ms;
    cr_assert_eq(sscanf(last, "step: %lf GB, %lf TFLOP, %lf launches; predicted H100 %lf ms\n", &gb, &tflop, &launches, &ms),
                 4, "%s", last);
    cr_expect_eq(strchr(last, '\n')[1], '\0', "the step line is the last: %s", out);
    // printed to 4 significant digits
    cr_expect(fabs(gb - bytes * 1e-9) <= 1e-3 * gb, "%g GB counted, %g timed", gb, bytes * 1e-9);
    cr_expect(fabs(tflop - flops * 1e-12) <= 1e-3 * tflop, "%g TFLOP counted, %g timed", tflop, flops * 1e-12);
    cr_expect_eq(launches, calls, "%g calls counted, %g timed", launches, calls);
    cr_expect(ms > 0 && isfinite(ms), "%s", last);
    char path[4200], *md;
    size_t len;
    snprintf(path, sizeof path, "%s/c.md", dir);
    cr_assert_eq(gm_read_all(path, &md, &len), 0, "%s", gm_error());
    cr_expect(strstr(md, "**Level: predicted**"), "%s", md);
    // the environment that chose the CUDA backend's attention, in the command that reruns it
    cr_expect(strstr(md, "Command: `GM_CUDA_ATTN=auto,wgmma1 "), "%s", md);
    cr_expect_null(strstr(md, "not measured"), "a counted call the timed step did not make: %s", md);
    free(md), free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// A rates file with a fault is refused with one line naming the file, the line and the fault.
Test(bench_kernels, bad_rates_file_is_refused_with_one_line, .timeout = 60) {
    char *dir = th_tmpdir();
    const char *bad[][2] = {{"kind,key,value,unit,source\ngemm,65536x768 bf16,0.1,ms,x\n", ":2: a gemm key is MxNxK bf16|f32"},
                            {"kind,key,value,unit,source\ncopy,d2d,-3,GB/s,x\n", ":2: the value is not a positive number"},
                            {"kind,key,value\n", ":1: the header is not kind,key,value,unit,source"},
                            {"kind,key,value,unit,source\ndevice,H 100,81559,MiB,x\n",
                             ":2: a device key is the GPU's short name"},
                            {"kind,key,value,unit,source\ncopy,d2d,3000,GB/s,x\n", ": needs device, gemm, copy, attn_fwd"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[4200], args[9000], want[4400];
        snprintf(path, sizeof path, "%s/rates%zu.csv", dir, i);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs(bad[i][0], f);
        fclose(f);
        snprintf(args, sizeof args, "--count=1 --preset=adamw --scale=test --out=%s --rates=%s", dir, path);
        snprintf(want, sizeof want, "%s%s", path, bad[i][1]);
        th_expect_refused("bench/kernels", args, want, 1);
    }
    th_rmtree(dir);
    free(dir);
}

Test(bench_kernels, bad_flags_are_refused_with_one_line, .timeout = 60) {
    th_expect_refused("bench/kernels", "--preset=adamw --scale=test --ceilings=gpu", "--ceilings: 'gpu' is not one of", 1);
    th_expect_refused("bench/kernels", "--preset=adamw --scale=test --ortho=qr", "--ortho: 'qr' is not one of", 1);
    th_expect_refused("bench/kernels", "--preset=adamw --scale=test --steps=0", "--steps", 1);
    th_expect_refused("bench/kernels", "--preset=adamw --scale=test --backend=tpu", "--backend", 1);
}

// --count=1 counts activations in --backend's element: the CUDA backend's bf16 halves the activations'
// bytes (and the matmuls' activation conversions), the same calls and FLOPs otherwise.
Test(bench_kernels, count_mode_prices_the_backends_activation_element, .timeout = 120) {
    char *dir = th_tmpdir();
    double gb[2], tflop[2], launches[2], ms[2];
    const char *backends[2] = {"cpu", "cuda"};
    for (int b = 0; b < 2; b++) {
        char cmd[9000], *out, *err, path[4200], *md;
        size_t len;
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=1 '%s' --count=1 --backend=%s --recompute=off --preset=softcap --scale=test "
                 "--out='%s' --name=%s --rates='%s'",
                 th_bin_path("bench/kernels"), backends[b], dir, backends[b],
                 th_root_path("reports/gpu-h100/h100_rates.csv"));
        cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
        const char *last = strstr(out, "step: ");
        cr_assert(last, "%s", out);
        cr_assert_eq(sscanf(last, "step: %lf GB, %lf TFLOP, %lf launches; predicted H100 %lf ms\n", &gb[b], &tflop[b],
                            &launches[b], &ms[b]),
                     4, "%s", last);
        snprintf(path, sizeof path, "%s/%s.md", dir, backends[b]);
        cr_assert_eq(gm_read_all(path, &md, &len), 0, "%s", gm_error());
        char want[160];
        snprintf(want, sizeof want, "counted at %d bytes an element, as `--backend=%s`", b ? 2 : (int)sizeof(gm_real),
                 backends[b]);
        cr_expect(strstr(md, want), "no '%s' in %s", want, md);
        free(md), free(out), free(err);
    }
    // At the test scale the parameters' and optimizer's fp32 bytes weigh more, and every call is at the
    // model's per-call floor: fewer bytes, no slower.
    cr_expect(gb[1] < 0.9 * gb[0], "cuda %g GB against cpu %g GB", gb[1], gb[0]);
    cr_expect(ms[1] <= ms[0], "cuda predicted %g ms against cpu %g ms", ms[1], ms[0]);
    cr_expect_eq(launches[1], launches[0]);
    cr_expect_eq(tflop[1], tflop[0]);
    th_rmtree(dir);
    free(dir);
}

// bench/gpu_rates.py turns a GPU report folder into the model's rates: on the committed H200 report,
// every kind the model needs, the device, the copy ceiling and a shared GEMM key as the report's own
// numbers, and a file the counting run accepts, naming the device in its last line. A report missing
// a file is refused with one line naming it, and no rates file is written.
Test(bench_kernels, gpu_rates_from_a_report_folder, .timeout = 120) {
    char *dir = th_tmpdir();
    char rates[4200], cmd[20000], script[4200], report[4200], *out, *err;
    snprintf(script, sizeof script, "%s", th_root_path("bench/gpu_rates.py"));  // th_root_path: one static buffer
    snprintf(report, sizeof report, "%s", th_root_path("reports/gpu-h200"));
    snprintf(rates, sizeof rates, "%s/rates.csv", dir);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s'", script, report, rates);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    free(out), free(err);
    char *text;
    size_t len;
    cr_assert_eq(gm_read_all(rates, &text, &len), 0, "%s", gm_error());
    // kernels-softcap.csv: ceiling.copy 4164.68 GB/s; ceiling.gemm_at 768x65536x768 TN 0.107298 and
    // NN 0.116964 ms, one key (65536x768x768 row-major): their mean 0.112131.
    const char *want[] = {"\ndevice,H200,143771,MiB,", "\ncopy,device-to-device,4164.68,GB/s,", "\ngemm,65536x768x768 bf16,0.112131,ms,",
                          "\ngemm,65536x768x768 f32,", "\nattn_fwd,T 65536 window 14,114.7,TFLOP/s,",
                          "\nattn_bwd,T 65536 window 14,120,TFLOP/s,", "\northogonalize,"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(text, want[i]), "no '%s' in\n%s", want[i] + 1, text);
    free(text);
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 '%s' --count=1 --backend=cuda --preset=softcap --scale=test --out='%s' --name=p "
             "--rates='%s'",
             th_bin_path("bench/kernels"), dir, rates);
    cr_expect_eq(th_run(cmd, &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "launches; predicted H200 "), "%s", out);
    free(out), free(err);

    // A report folder without peers-gpu.csv.
    char bad[4200], bad_rates[4300];
    snprintf(bad, sizeof bad, "%s/report", dir);
    snprintf(bad_rates, sizeof bad_rates, "%s/bad.csv", dir);
    snprintf(cmd, sizeof cmd, "mkdir '%s' && cd '%s' && cp info.log kernels-softcap.csv attention-window.csv '%s'/", bad,
             report, bad);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s'", script, bad, bad_rates);
    cr_expect_eq(th_run(cmd, &out, &err), 1, "%s", err);
    cr_expect(strstr(err, "gpu_rates.py: error: ") && strstr(err, "peers-gpu.csv: cannot read") &&
                  strchr(err, '\n') == err + strlen(err) - 1,
              "not one line naming the file: %s", err);
    cr_expect_not(th_file_exists(bad_rates), "%s written on a fault", bad_rates);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// The step model prices each memory-bound op at its own efficiency in the table it is fitted on:
// on the H200's softcap table, act_fwd (one shape, 12 calls far above the per-call floor) comes out
// at its measured time and its measured fraction of the copy rate (3582.17 GB/s of 4164.68: 0.860).
// --fit names another table: the report then says its ratios are out of sample.
Test(bench_kernels, count_mode_fits_each_op_and_compares_out_of_sample, .timeout = 120) {
    char *dir = th_tmpdir();
    char root[4200], cmd[20000], path[4300], *out, *err, *md;
    size_t len;
    snprintf(root, sizeof root, "%s", th_root_path("reports/gpu-h200"));  // th_root_path: one static buffer
    const char *fits[2] = {"softcap", "normuon"};
    for (int f = 0; f < 2; f++) {
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=1 '%s' --count=1 --backend=cuda --recompute=off --preset=softcap --scale=full "
                 "--seq_len=65536 --rates='%s/h200_rates.csv' --fit='%s/kernels-%s.csv' "
                 "--measured='%s/kernels-softcap.csv' --out='%s' --name=%s",
                 th_bin_path("bench/kernels"), root, root, fits[f], root, dir, fits[f]);
        cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
        free(out), free(err);
        snprintf(path, sizeof path, "%s/%s.md", dir, fits[f]);
        cr_assert_eq(gm_read_all(path, &md, &len), 0, "%s", gm_error());
        if (f == 0) {
            cr_expect(strstr(md, "| model:act_fwd | 201326592 relu2 | 12 | 4.832 | 9.664 | 0.860 | 2.699 | 2.699 (12) | 1.00 |"),
                      "%s", md);
            cr_expect_null(strstr(md, "not fitted on"), "%s", md);
        } else {
            cr_expect(strstr(md, "a table it was not fitted on: every ratio is out of sample"), "%s", md);
        }
        free(md);
    }
    th_rmtree(dir);
    free(dir);
}
