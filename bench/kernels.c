// Per-kernel timing of the real training step: the step gm_train runs (gm_trainer_step: data,
// forward and backward, all-reduce, the preset's optimizers) on the timing backend
// (backend/timing), which wraps the chosen backend and records every call the model and the
// optimizers make, with its shape, its FLOPs and bytes (backend/cost.h) and each call's time. So
// the bench follows the model: a kernel the model fuses, adds or reorders shows up here as it is,
// with no list of calls kept by hand. The trainer's phase hook files each call under the part of
// the step it belongs to ("data", "model", "allreduce", "optimizer", "loss") and times the parts
// end to end. Rates are compared with ceilings measured in the same run (train/ceilings.h): on the
// CPU backends the host's, at the thread count the step ran with (OpenBLAS sgemm 2048^3, a 256 MiB
// memcpy); on the CUDA backend the GPU's own (--ceilings=library): cuBLAS's bf16 GEMM at 8192^3 and
// at every GEMM shape of the step's matmuls, and a 1 GiB device-to-device copy, after a warm-up of
// the clocks, so each matmul row also says how far it is from cuBLAS at its own shapes.
//
//   build/bench/kernels [--preset=softcap] [--scale=full] [--steps=3] [--doc_len=700]
//                       [--ceilings=host|library] [--out=reports/bench] [--name=<file base>]
//                       [--<run config key>=value ...]
//   build/bench/kernels --count=1 [--seq_len=65536] [--rates=F] [--measured=F] [--fit=F]   the step counted, not
//                       computed, and its GPU time predicted (backend/predict.h) from the rates of one GPU
//                       (default the H100's), with the model's residual
//   build/bench/kernels --compare A.csv B.csv      ratio B/A per kernel and of the step
//
// Any other flag is a key of the run configuration (build/train --help), e.g. --backend=cuda,
// --device=1, --batch=4, --seq_len=64, --ortho=gram-ns. At full scale the batch is B = 1, T = 1024
// unless given (the record's 64K-token sequence would take minutes a step on a CPU).
//
// Writes <out>/<machine>-<preset>-<scale>.csv (one row per kernel, then step.* and ceiling.*
// rows) and .md, and prints the CSV's path; bench/kernels.gp draws the .png. Timings are never
// pass/fail: the machine may be shared, so the report carries the load average.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/count/count.h"
#include "backend/predict.h"
#include "backend/select.h"
#include "backend/timing/timing.h"
#include "base/args.h"
#include "base/help.h"
#include "base/build_info.h"
#include "base/error.h"
#include "base/io.h"
#include "base/rng.h"
#include "base/runtime.h"
#include "base/stats.h"
#include "base/timer.h"
#include "data/shard.h"
#include "train/ceilings.h"
#include "train/hardware.h"
#include "train/run_config.h"
#include "train/trainer.h"

enum { MAX_STEPS = 50, MAX_PHASES = 8, SGEMM_N = 2048, MAX_GEMMS = 64 };  // SGEMM_N: train/ceilings.c's shape
#define MEMCPY_BYTES ((size_t)256 << 20)                                  // and size
#define GPU_WARM_UP_S 3.0  // a GPU's clocks under load: without it the first rates are about half

// The parts of a step, in the order the trainer first names them, each with its wall time per
// measured step (a part named twice in a step, like "model", adds up).
typedef struct {
    gm_timing *tm;
    const gm_backend *tb;
    int n, cur, step;
    char name[MAX_PHASES][16];
    double ms[MAX_PHASES][MAX_STEPS];
    uint64_t since;
} phases;

// The phase hook: close the running part at a synchronised instant, open the next.
static void on_phase(void *ctx, const char *phase) {
    phases *p = ctx;
    p->tb->sync(p->tb);  // an error here is the step's own and comes back from gm_trainer_step
    uint64_t now = gm_now_ns();
    if (p->cur >= 0) p->ms[p->cur][p->step] += (double)(now - p->since) * 1e-6;
    int i = 0;
    while (i < p->n && strcmp(p->name[i], phase)) i++;
    if (i == p->n) {
        if (p->n == MAX_PHASES) gm_die("kernels: more than %d parts in a step", MAX_PHASES);
        snprintf(p->name[p->n++], sizeof p->name[0], "%s", phase);
    }
    p->cur = i, p->since = now;
    gm_timing_label(p->tm, phase);
}

typedef struct {
    char name[64], shape[72];  // name: "<part>:<kernel>"; no commas (CSV)
    double calls;              // per step
    double med_ms, min_ms, max_ms, flops, bytes;  // per call
    double total_ms;                              // per step
    int n_gemm;                                   // the library GEMMs a call amounts to (backend/cost.h)
    gm_gemm_shape gemm[2];
    double lib_ms;  // library ceilings: the library's time for those GEMMs, per call (0: none)
} row;

// A GEMM shape of the step and the library's time for it (library ceilings).
typedef struct {
    gm_gemm_shape s;
    double ms;
} gemm_ceiling;

typedef struct {
    // Ceilings used (the better of start and end): host: sgemm at all threads, memcpy; library:
    // the square GEMM, the backend's copy.
    double gemm, copy;
    double sgemm_at[2][2], memcpy_at[2][2], load[2];  // host: [start, end][1 thread, all threads]
    double lib_gemm_at[2], lib_copy_at[2];            // library: [start, end]
    gm_lib_ceilings *lib;                             // NULL: host ceilings
    double warm_up_s;                                 // library: seconds of the square GEMM first
    gemm_ceiling gemms[MAX_GEMMS];                    // library: every GEMM shape of the step
    int n_gemms;
    int threads;
    double step_ms, step_min, step_max;
    double free_ms, free_min, free_max;  // the step with the timing backend's syncs off
    double part_ms[MAX_PHASES], part_min[MAX_PHASES], part_max[MAX_PHASES];
    int steps;
} results;

static void measure_ceilings(results *r, int when) {
    if (r->lib) {
        if (when == 0) gm_lib_ceilings_warm_up(r->lib, r->warm_up_s);
        r->lib_gemm_at[when] = gm_lib_ceiling_square_gflops(r->lib), r->lib_copy_at[when] = gm_lib_ceiling_copy_gbs(r->lib);
        if (r->lib_gemm_at[when] < 0 || r->lib_copy_at[when] < 0) gm_die("kernels: library ceilings: %s", gm_error());
        return;
    }
    for (int a = 0; a < 2; a++) {
        const int threads = a ? r->threads : 1;
        r->sgemm_at[when][a] = gm_ceiling_sgemm(threads), r->memcpy_at[when][a] = gm_ceiling_memcpy(threads);
    }
}

static int same_gemm(gm_gemm_shape a, gm_gemm_shape b) {
    return a.transa == b.transa && a.transb == b.transb && a.m == b.m && a.n == b.n && a.k == b.k;
}

static void gemm_text(char *buf, size_t n, gm_gemm_shape s) {
    snprintf(buf, n, "%dx%dx%d %s%s", s.m, s.n, s.k, s.transa ? "T" : "N", s.transb ? "T" : "N");
}

// Library ceilings: the library's time at every GEMM shape of the rows (each shape measured once),
// and each row's per-call sum of its GEMMs' times.
static void measure_gemm_shapes(results *r, row *rows, int n) {
    for (int i = 0; i < n; i++)
        for (int g = 0; g < rows[i].n_gemm; g++) {
            int j = 0;
            while (j < r->n_gemms && !same_gemm(r->gemms[j].s, rows[i].gemm[g])) j++;
            if (j == r->n_gemms) {
                if (j == MAX_GEMMS) gm_die("kernels: more than %d GEMM shapes in a step", MAX_GEMMS);
                r->gemms[j].s = rows[i].gemm[g];
                if ((r->gemms[j].ms = gm_lib_ceiling_gemm_ms(r->lib, rows[i].gemm[g])) < 0)
                    gm_die("kernels: library GEMM ceiling: %s", gm_error());
                r->n_gemms++;
            }
            rows[i].lib_ms += r->gemms[j].ms;
        }
}

static void median_of(double *t, int n, double *med, double *mn, double *mx) {
    *med = gm_median(t, n);  // sorts t
    *mn = t[0], *mx = t[n - 1];
}

static void no_commas(char *s) {
    for (; *s; s++)
        if (*s == ',') *s = ';';
}

// The timing backend's records as rows, per step.
static row *rows_of(const gm_timing *tm, int steps, int *n) {
    *n = gm_timing_count(tm);
    row *rows = calloc((size_t)*n + 1, sizeof *rows);
    if (!rows) gm_die("kernels: out of memory");
    for (int i = 0; i < *n; i++) {
        const gm_timing_record *rec = gm_timing_at(tm, i);
        row *r = &rows[i];
        snprintf(r->name, sizeof r->name, "%s:%s", rec->label, rec->op);
        snprintf(r->shape, sizeof r->shape, "%s", rec->cost.shape);
        no_commas(r->name), no_commas(r->shape);
        double *ms = malloc((size_t)rec->calls * sizeof *ms), sum = 0;
        if (!ms) gm_die("kernels: out of memory");
        for (long c = 0; c < rec->calls; c++) ms[c] = rec->ms[c], sum += rec->ms[c];
        median_of(ms, (int)rec->calls, &r->med_ms, &r->min_ms, &r->max_ms);
        free(ms);
        r->calls = (double)rec->calls / steps;
        r->flops = rec->cost.flops, r->bytes = rec->cost.bytes;
        r->total_ms = sum / steps;
        r->n_gemm = rec->cost.n_gemm;
        memcpy(r->gemm, rec->cost.gemm, sizeof r->gemm);
    }
    return rows;
}

static double gflops_of(const row *k) { return k->med_ms > 0 ? k->flops / (k->med_ms * 1e6) : 0; }
static double gbs_of(const row *k) { return k->med_ms > 0 ? k->bytes / (k->med_ms * 1e6) : 0; }
// Roofline: what the machine could reach at this kernel's arithmetic intensity (flops per byte),
// min(GEMM, intensity x copy bandwidth); the kernel's fraction of that is how far from its own
// ceiling it runs.
static double roofline_frac(const row *k, const results *r) {
    if (k->flops <= 0) return r->copy > 0 ? gbs_of(k) / r->copy : 0;  // pure data movement
    double ceiling = k->bytes > 0 ? fmin(r->gemm, k->flops / k->bytes * r->copy) : r->gemm;
    return gflops_of(k) / ceiling;
}
// The ceilings' names in the reports' columns and sentences.
static const char *gemm_word(const results *r) { return r->lib ? "GEMM" : "sgemm"; }
static const char *copy_word(const results *r) { return r->lib ? "copy" : "memcpy"; }
// Does row k belong to part `part` (its name starts "<part>:")?
static int in_part(const row *k, const char *part) {
    size_t n = strlen(part);
    return !strncmp(k->name, part, n) && k->name[n] == ':';
}

static void write_or_die(gm_atomic_file *af, int rc) {
    if (rc) {
        gm_atomic_abort(af);
        gm_die_last();
    }
}
#define OUT(af, ...) write_or_die(af, gm_atomic_printf(af, __VA_ARGS__))

static void csv_row(gm_atomic_file *f, const results *r, const char *name, const char *shape, double calls, double med,
                    double mn, double mx, double flops, double bytes, double total) {
    double gf = med > 0 ? flops / (med * 1e6) : 0, gb = med > 0 ? bytes / (med * 1e6) : 0;
    OUT(f, "%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g,%.4g,%.6g\n", name, shape, calls, med, mn, mx, flops,
        bytes, gf, gb, gf / r->gemm, gb / r->copy, total);
}

typedef struct {
    double flops, bytes, ms;  // per step, of the kernels in a part
} part_sums;
static part_sums sums_of(const row *rows, int n, const char *part) {
    part_sums s = {0, 0, 0};
    for (int i = 0; i < n; i++)
        if (!part || in_part(&rows[i], part))
            s.flops += rows[i].calls * rows[i].flops, s.bytes += rows[i].calls * rows[i].bytes, s.ms += rows[i].total_ms;
    return s;
}

static void write_csv(const row *rows, int n, const phases *ph, const results *r, const char *path) {
    gm_atomic_file f;
    if (gm_atomic_open(&f, path)) gm_die_last();
    OUT(&f, "name,shape,calls,median_ms,min_ms,max_ms,flops,bytes,gflops,gbs,frac_%s,frac_%s,total_ms_per_step\n",
        gemm_word(r), copy_word(r));
    for (int i = 0; i < n; i++) {
        const row *k = &rows[i];
        csv_row(&f, r, k->name, k->shape, k->calls, k->med_ms, k->min_ms, k->max_ms, k->flops, k->bytes, k->total_ms);
    }
    // The parts as measured end to end: flops and bytes are their kernels' per-step sums.
    for (int p = 0; p < ph->n; p++) {
        char name[48];
        snprintf(name, sizeof name, "step.%s", ph->name[p]);
        part_sums s = sums_of(rows, n, ph->name[p]);
        csv_row(&f, r, name, "measured", 1, r->part_ms[p], r->part_min[p], r->part_max[p], s.flops, s.bytes,
                r->part_ms[p]);
    }
    part_sums all = sums_of(rows, n, NULL);
    csv_row(&f, r, "step.total", "measured", 1, r->step_ms, r->step_min, r->step_max, all.flops, all.bytes, r->step_ms);
    // calls 0: no part of the step above, the same step timed another way
    csv_row(&f, r, "step.free", "free-running", 0, r->free_ms, r->free_min, r->free_max, all.flops, all.bytes, 0);
    // Ceilings: calls 0, so they add nothing to a step; their ratios in --compare show the machine.
    if (r->lib) {
        const double s = gm_lib_ceilings_square(r->lib), mb = (double)gm_lib_ceilings_copy_bytes(r->lib);
        const double sg_ms = 2 * s * s * s / (r->gemm * 1e6), cp_ms = 2.0 * mb / (r->copy * 1e6);
        char shape[72];
        snprintf(shape, sizeof shape, "%.0fx%.0fx%.0f NN", s, s, s);
        csv_row(&f, r, "ceiling.gemm", shape, 0, sg_ms, sg_ms, sg_ms, 2 * s * s * s, 0, 0);
        snprintf(shape, sizeof shape, "%.0fMiB", mb / (1 << 20));
        csv_row(&f, r, "ceiling.copy", shape, 0, cp_ms, cp_ms, cp_ms, 0, 2.0 * mb, 0);
        for (int g = 0; g < r->n_gemms; g++) {
            const gm_gemm_shape q = r->gemms[g].s;
            gemm_text(shape, sizeof shape, q);
            csv_row(&f, r, "ceiling.gemm_at", shape, 0, r->gemms[g].ms, r->gemms[g].ms, r->gemms[g].ms,
                    2.0 * q.m * q.n * (double)q.k, 0, 0);
        }
    } else {
        const double s = SGEMM_N, sg_ms = 2 * s * s * s / (r->gemm * 1e6), mc_ms = 2.0 * MEMCPY_BYTES / (r->copy * 1e6);
        csv_row(&f, r, "ceiling.sgemm", "2048x2048x2048", 0, sg_ms, sg_ms, sg_ms, 2 * s * s * s, 4.0 * 3 * s * s, 0);
        csv_row(&f, r, "ceiling.memcpy", "256MiB", 0, mc_ms, mc_ms, mc_ms, 0, 2.0 * MEMCPY_BYTES, 0);
    }
    write_or_die(&f, gm_atomic_commit(&f));
}

static int by_total_desc(const void *a, const void *b) {
    double x = ((const row *)a)->total_ms, y = ((const row *)b)->total_ms;
    return (x < y) - (x > y);
}

// The library ceilings' section: the square GEMM and the copy at start and end, and the library at
// every GEMM shape of the step.
static void write_lib_ceilings(gm_atomic_file *f, const results *r) {
    const int sq = gm_lib_ceilings_square(r->lib);
    OUT(f, "## Ceilings measured in this run, on %s\n\n", gm_lib_ceilings_device(r->lib));
    if (r->warm_up_s > 0) OUT(f, "At the start after %.0f s of the square GEMM (clocks), ", r->warm_up_s);
    else OUT(f, "At the start, ");
    OUT(f, "then at the end of the run; the better is used.\n\n| ceiling | at start | at end | used |\n|---|---|---|---|\n");
    OUT(f, "| %s, %d^3 | %.1f GFLOP/s | %.1f GFLOP/s | %.1f GFLOP/s |\n", gm_lib_ceilings_gemm_name(r->lib), sq,
        r->lib_gemm_at[0], r->lib_gemm_at[1], r->gemm);
    OUT(f, "| %s, %.0f MiB (read + write bytes) | %.1f GB/s | %.1f GB/s | %.1f GB/s |\n\n", gm_lib_ceilings_copy_name(r->lib),
        (double)gm_lib_ceilings_copy_bytes(r->lib) / (1 << 20), r->lib_copy_at[0], r->lib_copy_at[1], r->copy);
    OUT(f, "The library at each GEMM shape of the step's matmuls (column-major m x n x k and op(A) op(B), as "
           "the CUDA backend issues them, `impl/backend/cuda/matmul.cu`), measured after the timed steps; a matmul "
           "row's \"library at its shapes\" is the sum of its GEMMs' times over its own median time.\n\n"
           "| GEMM | library ms | GFLOP/s |\n|---|---|---|\n");
    for (int g = 0; g < r->n_gemms; g++) {
        const gm_gemm_shape q = r->gemms[g].s;
        char text[72];
        gemm_text(text, sizeof text, q);
        OUT(f, "| %s | %.4g | %.1f |\n", text, r->gemms[g].ms, 2.0 * q.m * q.n * (double)q.k / (r->gemms[g].ms * 1e6));
    }
    OUT(f, "\n");
}

typedef struct {
    const gm_run_config *rc;
    const char *backend, *cmdline, *png;
    int doc_len;
    const char *memory;  // the memory choices (gm_train_resolve_memory's line)
} report_info;

static void write_md(row *rows, int n, const phases *ph, const results *r, const report_info *ri, const char *path) {
    gm_atomic_file f;
    if (gm_atomic_open(&f, path)) gm_die_last();
    const gm_config *c = &ri->rc->model;
    const int B = c->batch, T = c->seq_len;
    char *hw = gm_cpu_model(), *slug = gm_hardware_slug();
    OUT(&f, "# Per-kernel timings of the training step: %s / %s, B = %d, T = %d\n\n", c->name, c->scale, B, T);
    OUT(&f, "- Machine: %s, slug `%s`; backend `%s`. Threads: %d OpenMP threads; the CPU kernels run OpenBLAS on "
            "one thread inside their own parallel regions (Muon: one matrix per thread). Ceilings are measured at 1 "
            "and %d threads; rates below are fractions of the %d-thread ones.\n",
        hw, slug, ri->backend, r->threads, r->threads, r->threads);
    if (r->lib)
        OUT(&f, "- Device: **%s**. Its ceilings are its library's, measured in this run (below); the host's "
                "thread counts above do not apply to them.\n",
            gm_lib_ceilings_device(r->lib));
    OUT(&f, "- Commit: `%s`. Command: `%s`. The step's %s.\n", gm_build_commit, ri->cmdline, ri->memory);
    OUT(&f, "- Load average (1 min): %.2f at start, %.2f at end, on %ld hardware threads. Anything above ~0 means "
            "other work shared the CPU and every time below is inflated by it; compare runs only at similar load.\n",
        r->load[0], r->load[1], sysconf(_SC_NPROCESSORS_ONLN));
    OUT(&f, "- Shapes: N = B T = %d tokens, d_model %d, MLP %d, %d heads x %d, padded vocab %d, %d layers; "
            "attention mask %s, window at mid-schedule (step %d of %d); synthetic documents (EOT-opened, exponential "
            "lengths of mean %d tokens). Orthogonalizer: %s.\n",
        B * T, c->d_model, c->d_mlp, c->n_head, c->head_dim, c->vocab_padded, c->n_layer,
        c->doc_mask ? "documents + causal" : "causal", ri->rc->steps / 2, ri->rc->steps, ri->doc_len,
        ri->rc->matrix_opt == GM_MATRIX_MUON ? (ri->rc->muon.ortho.method == GM_ORTHO_GRAM_NS ? "gram-ns"
                                                : ri->rc->muon.ortho.method == GM_ORTHO_NS  ? "newton-schulz"
                                                                                             : "svd")
                                             : "none (AdamW on the matrices)");
    OUT(&f, "- Method: the real step (`gm_trainer_step`, what `build/train` runs) on the timing backend: every backend "
            "call the model and the optimizers make, at their shapes and on their buffers, each bracketed by the "
            "backend's sync; one warm-up step, then %d steps. Per kernel: calls per step, median (min, max) of its "
            "calls, ms per step = the sum of its calls / steps. FLOPs and bytes per call from `impl/backend/cost.c` "
            "(bytes: every element read plus every element written; attention counts the causal and window pairs, "
            "not the document mask's, so its rate is the causal-equivalent one; Gram NS is priced as plain NS).\n\n",
        r->steps);

    if (r->lib) write_lib_ceilings(&f, r);
    else {
        OUT(&f, "## Ceilings measured in this run\n\n| ceiling | threads | at start | at end | used |\n|---|---|---|---|---|\n");
        OUT(&f, "| OpenBLAS sgemm 2048^3 | 1 | %.1f GFLOP/s | %.1f GFLOP/s | |\n", r->sgemm_at[0][0], r->sgemm_at[1][0]);
        OUT(&f, "| OpenBLAS sgemm 2048^3 | %d | %.1f GFLOP/s | %.1f GFLOP/s | %.1f GFLOP/s |\n", r->threads,
            r->sgemm_at[0][1], r->sgemm_at[1][1], r->gemm);
        OUT(&f, "| memcpy 256 MiB (read + write bytes) | 1 | %.1f GB/s | %.1f GB/s | |\n", r->memcpy_at[0][0],
            r->memcpy_at[1][0]);
        OUT(&f, "| memcpy 256 MiB (read + write bytes) | %d | %.1f GB/s | %.1f GB/s | %.1f GB/s |\n\n", r->threads,
            r->memcpy_at[0][1], r->memcpy_at[1][1], r->copy);
    }

    OUT(&f, "## The step end to end\n\n");
    OUT(&f, "| part | measured ms (median) | min | max | its kernels, ms | kernels / measured |\n");
    OUT(&f, "|---|---|---|---|---|---|\n");
    double sum_parts = 0, sum_kernels = 0;
    for (int p = 0; p < ph->n; p++) {
        part_sums s = sums_of(rows, n, ph->name[p]);
        sum_parts += r->part_ms[p], sum_kernels += s.ms;
        OUT(&f, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", ph->name[p], r->part_ms[p], r->part_min[p],
            r->part_max[p], s.ms, r->part_ms[p] > 0 ? s.ms / r->part_ms[p] : 0);
    }
    OUT(&f, "| **sum of the parts** | %.2f | | | %.2f | %.2f |\n", sum_parts, sum_kernels, sum_kernels / sum_parts);
    OUT(&f, "| **whole step (median)** | %.2f | %.2f | %.2f | | |\n", r->step_ms, r->step_min, r->step_max);
    OUT(&f, "| **whole step, free-running (median)** | %.2f | %.2f | %.2f | | |\n\n", r->free_ms, r->free_min,
        r->free_max);
    OUT(&f, "`model` is the forward and backward (with the gradient reset), `data` the batch read and its upload. "
            "The time a part spends outside its kernels is host code between the calls (and, on a GPU, launch and "
            "sync gaps). %.0f tokens/s. Free-running: %d more steps with the timing backend's per-call syncs off, "
            "as training runs them (on a GPU the host queues calls ahead of the device), each timed from its start "
            "to a sync after it: %.0f tokens/s.\n\n",
        B * T * ri->rc->grad_accum / (r->step_ms * 1e-3), r->steps, B * T * ri->rc->grad_accum / (r->free_ms * 1e-3));

    part_sums model = sums_of(rows, n, "model");
    for (int p = 0; p < ph->n; p++)
        if (!strcmp(ph->name[p], "model")) {
            double rate = model.flops / (r->part_ms[p] * 1e6);
            OUT(&f, "**Forward + backward: %.1f GFLOP per step in %.1f ms = %.1f GFLOP/s, %.2f of the measured %s "
                    "rate.**\n\n",
                model.flops * 1e-9, r->part_ms[p], rate, rate / r->gemm, gemm_word(r));
        }
    char thread_note[32];
    snprintf(thread_note, sizeof thread_note, " at %d threads", r->threads);
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].name, "optimizer:orthogonalize"))
            OUT(&f, "**Muon's orthogonalize (%s): %.1f ms per step, %.1f GFLOP/s, %.2f of the %s rate%s.**\n\n",
                rows[i].shape, rows[i].total_ms, gflops_of(&rows[i]), gflops_of(&rows[i]) / r->gemm, gemm_word(r),
                r->lib ? "" : thread_note);
    if (r->lib) {
        double ours = 0, lib = 0;
        for (int i = 0; i < n; i++)
            if (rows[i].n_gemm) ours += rows[i].total_ms, lib += rows[i].lib_ms * rows[i].calls;
        if (ours > 0)
            OUT(&f, "**Matmuls: %.2f ms per step; the library at the same GEMM shapes (%s): %.2f ms, so ours take "
                    "%.2fx its time.**\n\n",
                ours, gm_lib_ceilings_gemm_name(r->lib), lib, lib > 0 ? ours / lib : 0);
    }

    qsort(rows, (size_t)n, sizeof *rows, by_total_desc);
    OUT(&f, "Slowest kernels (time per step; fraction of their roofline ceiling = min(%s, intensity x %s)):\n\n",
        gemm_word(r), copy_word(r));
    for (int i = 0; i < n && i < 3; i++) {
        const row *k = &rows[i];
        OUT(&f, "%d. `%s` (%s): %.1f ms per step (%.0f%% of the step), %.1f GFLOP/s, %.1f GB/s, %.2f of its ceiling.\n",
            i + 1, k->name, k->shape, k->total_ms, 100 * k->total_ms / r->step_ms, gflops_of(k), gbs_of(k),
            roofline_frac(k, r));
    }
    OUT(&f, "\n## Kernels, sorted by time per step\n\n![time per step per kernel](%s)\n\n", ri->png);
    OUT(&f, "| part:kernel | shape | calls | median ms | min | max | GFLOP/s | GB/s | of %s | of %s | of roofline | "
            "%sms per step | of step |\n|---|---|---|---|---|---|---|---|---|---|---|%s---|---|\n",
        gemm_word(r), copy_word(r), r->lib ? "library at its shapes | " : "", r->lib ? "---|" : "");
    for (int i = 0; i < n; i++) {
        const row *k = &rows[i];
        char lib[32] = "";
        if (r->lib) snprintf(lib, sizeof lib, k->n_gemm && k->med_ms > 0 ? "%.2f | " : "- | ", k->lib_ms / k->med_ms);
        OUT(&f, "| %s | %s | %g | %.4g | %.4g | %.4g | %.1f | %.1f | %.3f | %.3f | %.2f | %s%.4g | %.1f%% |\n", k->name,
            k->shape, k->calls, k->med_ms, k->min_ms, k->max_ms, gflops_of(k), gbs_of(k), gflops_of(k) / r->gemm,
            gbs_of(k) / r->copy, roofline_frac(k, r), lib, k->total_ms, 100 * k->total_ms / r->step_ms);
    }
    write_or_die(&f, gm_atomic_commit(&f));
    free(hw), free(slug);
}

// ---- --compare A.csv B.csv ------------------------------------------------------------------

typedef struct {
    char name[64], shape[72];
    double med, total, calls, bytes;
} csv_entry;

static int read_csv(const char *path, csv_entry *e, int cap) {
    FILE *f = fopen(path, "r");
    if (!f) gm_die("%s: cannot open", path);
    char line[1024];
    if (!fgets(line, sizeof line, f) || strncmp(line, "name,shape,calls,median_ms", 26) != 0)
        gm_die("%s: not a kernels CSV (header should start name,shape,calls,median_ms)", path);
    int n = 0, ln = 1;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (n == cap) gm_die("%s: more than %d rows", path, cap);
        char *field[13];
        int nf = 0;
        for (char *s = strtok(line, ",\n"); s && nf < 13; s = strtok(NULL, ",\n")) field[nf++] = s;
        if (nf != 13) gm_die("%s:%d: %d fields, expected 13", path, ln, nf);
        snprintf(e[n].name, sizeof e[n].name, "%s", field[0]);
        snprintf(e[n].shape, sizeof e[n].shape, "%s", field[1]);
        e[n].med = atof(field[3]), e[n].total = atof(field[12]), e[n].calls = atof(field[2]), e[n].bytes = atof(field[7]);
        n++;
    }
    fclose(f);
    return n;
}

// Rows match by kernel and shape.
static int find_entry(const csv_entry *e, int n, const csv_entry *key) {
    for (int i = 0; i < n; i++)
        if (!strcmp(e[i].name, key->name) && !strcmp(e[i].shape, key->shape)) return i;
    return -1;
}

static void compare(const char *pa, const char *pb) {
    enum { CAP = 512 };
    static csv_entry a[CAP], b[CAP];
    int na = read_csv(pa, a, CAP), nb = read_csv(pb, b, CAP);
    printf("A = %s\nB = %s\n\n%-32s %-30s %12s %12s %8s %14s %14s %8s\n", pa, pb, "kernel", "shape", "A median ms",
           "B median ms", "B/A", "A ms/step", "B ms/step", "B/A");
    for (int i = 0; i < na; i++) {
        int j = find_entry(b, nb, &a[i]);
        if (j < 0) {
            printf("%-32s %-30s %12.4g %12s (only in A)\n", a[i].name, a[i].shape, a[i].med, "-");
            continue;
        }
        printf("%-32s %-30s %12.4g %12.4g %8.3f %14.4g %14.4g %8.3f\n", a[i].name, a[i].shape, a[i].med, b[j].med,
               b[j].med / a[i].med, a[i].total, b[j].total, a[i].total > 0 ? b[j].total / a[i].total : NAN);
    }
    for (int j = 0; j < nb; j++)
        if (find_entry(a, na, &b[j]) < 0) printf("%-32s %-30s %12s %12.4g (only in B)\n", b[j].name, b[j].shape, "-", b[j].med);
    const csv_entry total = {"step.total", "measured", 0, 0, 0, 0};
    int i = find_entry(a, na, &total), j = find_entry(b, nb, &total);
    if (i >= 0 && j >= 0)
        printf("\nstep: B/A = %.3f (%.4g ms -> %.4g ms); below 1 means B is faster\n", b[j].med / a[i].med, a[i].med,
               b[j].med);
}

// ---- --count=1: the step counted, and its GPU time predicted ---------------------------------

// The op of a measured kernel row ("part:op"), NULL for step.* and ceiling.* rows.
static const char *row_op(const csv_entry *e) {
    const char *op = strchr(e->name, ':');
    return op && e->calls > 0 ? op + 1 : NULL;
}
// The op of a row the memory-bound fit reads (a memory-bound kernel, not a host transfer), else NULL.
static const char *memory_op(const csv_entry *e) {
    const char *op = row_op(e);
    if (!op || strcmp(gm_predict_category(op), "memory") || !strcmp(op, "upload") || !strcmp(op, "download")) return NULL;
    return op;
}

// The fit of the step model on a measured table (predict.h): the memory-bound kernels' bytes over
// their time as a fraction of the copy bandwidth, over all of them and per op (every row of the op,
// whatever its part and shape), and the fastest call's median time.
static void fit_rates(gm_rates *rates, const csv_entry *m, int n, const char *path) {
    double bytes = 0, ms = 0, floor_ms = INFINITY;
    for (int i = 0; i < n; i++) {
        if (row_op(&m[i])) floor_ms = fmin(floor_ms, m[i].med);
        if (memory_op(&m[i])) bytes += m[i].bytes * m[i].calls, ms += m[i].total;
    }
    if (!(ms > 0) || !isfinite(floor_ms)) gm_die("kernels: %s has no kernel rows to fit the model on", path);
    const double copy = gm_rates_copy_gbs(rates) * 1e6;  // bytes per ms
    gm_rates_fit(rates, bytes / ms / copy, floor_ms);
    for (int i = 0; i < n; i++) {  // each op once, at its first row, over all its rows
        const char *op = memory_op(&m[i]);
        int first = op != NULL;
        for (int j = 0; j < i && first; j++) {
            const char *o = memory_op(&m[j]);
            first = !o || strcmp(o, op);
        }
        if (!first) continue;
        double op_bytes = 0, op_ms = 0;
        for (int j = i; j < n; j++) {
            const char *o = memory_op(&m[j]);
            if (o && !strcmp(o, op)) op_bytes += m[j].bytes * m[j].calls, op_ms += m[j].total;
        }
        if (op_bytes > 0 && op_ms > 0 && gm_rates_fit_op(rates, op, op_bytes / op_ms / copy))
            gm_die("kernels: %s: %s", path, gm_error());
    }
}

typedef struct {
    const char *cat;
    // ms per step; measured: the measured rows' time per call times this step's calls (the measured
    // table may be of code that calls a kernel more or less often); matched: the predicted ms of them
    double predicted, measured, matched;
} category_sum;

// Counts the step's calls on the counting backend, predicts each kernel's time on the GPU of the rates, compares with
// the measured table row by row, writes <base>.md and prints the totals, the last line for scripts.
static void count_step(gm_trainer *tr, phases *ph, int s_mid, const report_info *ri, const char *rates_path,
                       const char *measured_path, const char *fit_path, const char *md_path) {
    gm_timing *tm = ph->tm;
    double loss;
    // As the timed mode: the first step's one-off calls (uploads of tables made on first use) are not
    // the step's.
    gm_timing_reset(tm);
    gm_timing_enable(tm, 0);
    if (gm_trainer_step(tr, s_mid, &loss, NULL, NULL)) gm_die("kernels: counted step: %s", gm_error());
    gm_timing_enable(tm, 1);
    ph->cur = -1;
    if (gm_trainer_step(tr, s_mid, &loss, on_phase, ph)) gm_die("kernels: counted step: %s", gm_error());
    gm_timing_label(tm, "");
    gm_rates *rates = gm_rates_load(rates_path);
    if (!rates) gm_die_last();
    enum { CAP = 512 };
    static csv_entry measured[CAP], fitted[CAP];
    const int nm = read_csv(measured_path, measured, CAP);
    const int in_sample = !strcmp(fit_path, measured_path);
    if (in_sample) fit_rates(rates, measured, nm, fit_path);
    else fit_rates(rates, fitted, read_csv(fit_path, fitted, CAP), fit_path);

    const int n = gm_timing_count(tm);
    category_sum cats[] = {{"matmul", 0, 0, 0}, {"attention", 0, 0, 0}, {"orthogonalize", 0, 0, 0}, {"memory", 0, 0, 0}};
    double flops = 0, bytes = 0, calls = 0, predicted = 0;
    gm_atomic_file f;
    if (gm_atomic_open(&f, md_path)) gm_die_last();
    const gm_config *c = &ri->rc->model;
    OUT(&f, "# The training step counted, and its %s time predicted: %s / %s, B = %d, T = %d\n\n", gm_rates_device(rates), c->name, c->scale,
        c->batch, c->seq_len);
    OUT(&f, "- **Level: predicted**, on a machine without a GPU: the real step (`gm_trainer_step`) on the counting "
            "backend (`impl/backend/count`: every call recorded, nothing computed) through the timing backend, each "
            "call priced by `impl/backend/cost.c` and timed by the model of `impl/backend/predict.h` with the rates of "
            "`%s`. Activations and their gradients counted at %zu bytes an element, as `--backend=%s` stores them "
            "(the CUDA backend: bf16). Commit `%s`. Command: `%s`. The step's %s.\n",
        rates_path, gm_backend_act_size(ri->rc->backend), ri->rc->backend, gm_build_commit, ri->cmdline, ri->memory);
    OUT(&f, "- Fitted on `%s`: each memory-bound op at its own fraction of the copy bandwidth (%.0f GB/s) there, "
            "all its rows together (column `eff`), an op it lacks at their overall %.3f; no call under %.4g ms. ",
        fit_path, gm_rates_copy_gbs(rates), gm_predict_fit_efficiency(rates), gm_predict_fit_floor(rates));
    if (in_sample)
        OUT(&f, "The model's error is its residual against that measured table below: each memory-bound op's total is "
                "fitted (its residual is zero by construction, the rows' are not where an op has several shapes), the "
                "GEMMs and attention are predicted from independent measurements. ");
    else
        OUT(&f, "Compared below with `%s`, a table it was not fitted on: every ratio is out of sample, the "
                "memory-bound total's too. ",
            measured_path);
    OUT(&f, "Where the measured table is of other code (its commit is in its own report), a row is compared per call "
            "(measured: its time per call times this step's calls; its own calls beside it), and a kernel rewritten "
            "since was measured as it was.\n\n");
    OUT(&f, "| part:kernel | shape | calls | GFLOP | GB | eff | predicted ms | measured ms (its calls) | predicted / "
            "measured |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const gm_timing_record *rec = gm_timing_at(tm, i);
        const double ms = gm_predict_ms(rates, rec->op, &rec->cost) * rec->calls;
        csv_entry key;
        snprintf(key.name, sizeof key.name, "%s:%s", rec->label, rec->op);
        snprintf(key.shape, sizeof key.shape, "%s", rec->cost.shape);
        no_commas(key.name), no_commas(key.shape);
        const int j = find_entry(measured, nm, &key);
        category_sum *cs = &cats[3];
        for (size_t k = 0; k < 3; k++)
            if (!strcmp(cats[k].cat, gm_predict_category(rec->op))) cs = &cats[k];
        // the measured row's time at this step's calls
        const double mt = j >= 0 && measured[j].calls > 0 ? measured[j].total / measured[j].calls * rec->calls : 0;
        cs->predicted += ms;
        if (j >= 0) cs->measured += mt, cs->matched += ms;
        flops += rec->cost.flops * rec->calls, bytes += rec->cost.bytes * rec->calls, calls += rec->calls;
        predicted += ms;
        char meas[48] = "not measured", ratio[24] = "-", eff[16] = "-";
        if (!strcmp(gm_predict_category(rec->op), "memory"))
            snprintf(eff, sizeof eff, "%.3f", gm_predict_op_efficiency(rates, rec->op));
        if (j >= 0)
            snprintf(meas, sizeof meas, "%.4g (%ld)", mt, (long)measured[j].calls), snprintf(ratio, sizeof ratio, "%.2f", ms / mt);
        OUT(&f, "| %s | %s | %ld | %.4g | %.4g | %s | %.4g | %s | %s |\n", key.name, key.shape, rec->calls,
            rec->cost.flops * rec->calls * 1e-9, rec->cost.bytes * rec->calls * 1e-9, eff, ms, meas, ratio);
    }
    OUT(&f, "\n| category | predicted ms | measured ms (rows found) | predicted / measured |\n|---|---|---|---|\n");
    double pm = 0, mm = 0;
    for (size_t k = 0; k < sizeof cats / sizeof cats[0]; k++) {
        pm += cats[k].matched, mm += cats[k].measured;
        OUT(&f, "| %s | %.2f | %.2f | %.3f |\n", cats[k].cat, cats[k].predicted, cats[k].measured,
            cats[k].measured > 0 ? cats[k].matched / cats[k].measured : NAN);
    }
    const csv_entry total_key = {"step.total", "measured", 0, 0, 0, 0};
    const int t = find_entry(measured, nm, &total_key);
    OUT(&f, "| **kernels** | %.2f | %.2f | %.3f |\n", predicted, mm, mm > 0 ? pm / mm : NAN);
    if (t >= 0)
        OUT(&f, "\nThe measured table's step end to end (`step.total`, with the host's gaps between calls, of the code it "
                "measured): %.2f ms; this prediction, which has no gaps, is %.3f of it.\n",
            measured[t].med, predicted / measured[t].med);
    write_or_die(&f, gm_atomic_commit(&f));
    for (size_t k = 0; k < sizeof cats / sizeof cats[0]; k++)
        printf("%-14s predicted %9.2f ms, measured %9.2f ms\n", cats[k].cat, cats[k].predicted, cats[k].measured);
    printf("%s\n", md_path);
    printf("step: %.4g GB, %.4g TFLOP, %.0f launches; predicted %s %.1f ms\n", bytes * 1e-9, flops * 1e-12, calls,
           gm_rates_device(rates), predicted);
    gm_rates_free(rates);
}

// ---- data -----------------------------------------------------------------------------------

// The synthetic train (v = 0) or val (v = 1) shard in dir, into buf.
static const char *shard_path(const char *dir, int v, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s_000000.bin", dir, v ? "val" : "train");
    return buf;
}

// Shards of the llm.c format with documents like FineWeb's: an EOT opens each document, lengths
// exponential with mean doc_len, other tokens uniform; 16 distinct batches, then the loader wraps.
// Written into dir as train_000000.bin and val_000000.bin (the same tokens) for the trainer's globs.
static void write_synthetic_data(const char *dir, const gm_config *c, int doc_len) {
    const size_t count = 16 * (size_t)c->batch * c->seq_len + 1;
    uint16_t *tok = malloc(count * sizeof *tok);
    if (!tok) gm_die("kernels: out of memory for the synthetic shard");
    size_t next_doc = 0;
    for (size_t i = 0; i < count; i++) {
        if (i == next_doc) {
            tok[i] = (uint16_t)c->eot;
            next_doc += 1 + (size_t)(-log(1.0 - gm_rng_uniform(7, 1, i)) * (doc_len - 1));
            continue;
        }
        uint32_t t = gm_rng_u32(7, 2, i) % (uint32_t)(c->vocab - 1);
        tok[i] = (uint16_t)(t >= (uint32_t)c->eot ? t + 1 : t);
    }
    char path[4200];
    for (int v = 0; v < 2; v++)
        if (gm_shard_write(shard_path(dir, v, path, sizeof path), tok, count)) gm_die_last();
    free(tok);
}

// ---- main -----------------------------------------------------------------------------------

static int bench_flag(const char *k) {
    return !strcmp(k, "preset") || !strcmp(k, "scale") || !strcmp(k, "steps") || !strcmp(k, "doc_len") ||
           !strcmp(k, "out") || !strcmp(k, "name") || !strcmp(k, "ceilings") || !strcmp(k, "count") ||
           !strcmp(k, "rates") || !strcmp(k, "measured") || !strcmp(k, "fit");
}

static void usage(void) {
    printf("usage: kernels [--preset=NAME] [--scale=SCALE] [--steps=N] [--doc_len=L] [--out=DIR] [--name=BASE]\n"
           "               [--<build/train flag>=value ...]\n"
           "       kernels --compare A.csv B.csv\n"
           "  Per-kernel timing of the real training step on synthetic data; writes OUT/NAME.csv and .md and\n"
           "  prints the CSV's path. Any build/train flag is passed to the run configuration (build/train\n"
           "  --help lists them with their defaults), e.g. --backend=cuda, --batch=4, --ortho=gram-ns.\n"
           "  --preset    preset to time (default softcap)\n"
           "  --scale     its scale (default full, at B = 1, T = 1024 unless --batch/--seq_len are given)\n"
           "  --steps     timed steps after one warm-up (default 3)\n"
           "  --doc_len   mean document length of the synthetic shards (default 700)\n"
           "  --ceilings  what rates are fractions of (default: library on --backend=cuda, else host): host,\n"
           "              OpenBLAS sgemm 2048^3 and memcpy at 1 and all threads; library, the backend's GEMM at a\n"
           "              large square and at each matmul shape of the step, and its copy (cuBLAS bf16 and\n"
           "              device-to-device on the GPU; OpenBLAS and the backend's copy on the CPU)\n"
           "  --out       report folder (default reports/bench)\n"
           "  --name      report file base (default <machine or GPU>-<preset>-<scale>; with --count,\n"
           "              predicted-h100-<preset>-<scale>-T<seq_len>)\n"
           "  --count     1: count the step's calls without computing (default 0): the counting backend, any\n"
           "              scale in seconds, activations in --backend's element (cuda: bf16), --recompute\n"
           "              and --head_rows left to auto decided for an 80 GB H100 (cuda); each\n"
           "              kernel's time predicted from --rates (one GPU's), fitted on and compared with\n"
           "              the --measured table; writes OUT/NAME.md; the last line reads 'step: <N> GB,\n"
           "              <N> TFLOP, <N> launches; predicted <GPU> <N> ms' (launches: backend calls;\n"
           "              GPU: the rates' device, e.g. H100)\n"
           "  --rates     the rates of one GPU for --count (default reports/gpu-h100/h100_rates.csv; made from\n"
           "              a GPU report folder by bench/gpu_rates.py: reports/gpu-h200/h200_rates.csv)\n"
           "  --measured  a measured CSV of this program for --count, the model's fit and check (default\n"
           "              reports/gpu-h100/h100-softcap-full-T65536.csv)\n"
           "  --fit       a measured CSV to fit the model on (default: --measured's); another one makes the\n"
           "              comparison out of sample\n"
           "  --compare   print B/A per kernel and of the step for two CSVs of this program (default: off)\n");
}

int main(int argc, char **argv) {
    gm_runtime_init(argc, argv);
    if (gm_help_requested(argc, argv)) return usage(), 0;
    if (argc > 1 && !strcmp(argv[1], "--compare")) {
        if (argc != 4) gm_die("--compare: give two CSV files, A then B (prints B/A)");
        compare(argv[2], argv[3]);
        return 0;
    }
    const char *preset = "softcap", *scale = "full", *out = "reports/bench", *name = NULL, *ceilings = NULL;
    int doc_len = 700, steps = 3, count = 0;
    const char *rates_path = "reports/gpu-h100/h100_rates.csv", *measured_path = "reports/gpu-h100/h100-softcap-full-T65536.csv";
    const char *fit_path = NULL;
    for (int i = 1; i < argc;) {
        const char *key, *val;
        gm_arg_next(argc, argv, &i, &key, &val);
        if (!strcmp(key, "preset")) preset = val;
        else if (!strcmp(key, "scale")) scale = val;
        else if (!strcmp(key, "steps")) steps = (int)gm_arg_int(key, val, 1, MAX_STEPS);
        else if (!strcmp(key, "doc_len")) doc_len = (int)gm_arg_int(key, val, 1, 1 << 24);
        else if (!strcmp(key, "out")) out = val;
        else if (!strcmp(key, "name")) name = val;
        else if (!strcmp(key, "count")) count = (int)gm_arg_int(key, val, 0, 1);
        else if (!strcmp(key, "rates")) rates_path = val;
        else if (!strcmp(key, "measured")) measured_path = val;
        else if (!strcmp(key, "fit")) fit_path = val;
        else if (!strcmp(key, "ceilings")) {
            if (strcmp(val, "host") && strcmp(val, "library")) gm_die("--ceilings: '%s' is not one of host, library", val);
            ceilings = val;
        }
    }
    gm_run_config rc;
    if (gm_run_config_preset(&rc, preset, scale)) gm_die_last();
    if (!strcmp(scale, "full")) rc.model.batch = 1, rc.model.seq_len = 1024;
    for (int i = 1; i < argc;) {
        const char *key, *val;
        gm_arg_next(argc, argv, &i, &key, &val);
        if (!bench_flag(key) && gm_run_config_set(&rc, key, val)) gm_die_last();
    }
    // The synthetic data, and one validation batch for the trainer's start-up checks.
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[400];
    if (snprintf(dir, sizeof dir, "%s/gm_kernels_XXXXXX", tmp) >= (int)sizeof dir) gm_die("kernels: TMPDIR is too long");
    if (!mkdtemp(dir)) gm_die("kernels: cannot create a temporary folder under %s", tmp);
    snprintf(rc.train_data, sizeof rc.train_data, "%s/train_*.bin", dir);
    snprintf(rc.val_data, sizeof rc.val_data, "%s/val_*.bin", dir);
    rc.val_tokens = (long long)rc.model.batch * rc.model.seq_len;
    const gm_backend *be = NULL;
    if (gm_run_config_finish(&rc) || !(be = count ? gm_backend_counting(gm_backend_act_size(rc.backend)) : gm_backend_open(rc.backend, rc.device))) {
        rmdir(dir);
        gm_die_last();
    }
    write_synthetic_data(dir, &rc.model, doc_len);
    // The step is the one train would run here: --recompute and --head_rows left to auto decided as
    // train decides them; counted, --backend=cuda's against an 80 GB H100 (the budget of mem_plan.h).
    char memory_why[320];
    if (gm_train_resolve_memory(&rc, 1, 0, count ? GM_MEM_BUDGET_BYTES : 0, memory_why, sizeof memory_why))
        gm_die_last();
    if (!count) fprintf(stderr, "kernels: %s\n", memory_why);

    // The command as it reran this step, with the environment that changes what the CUDA backend
    // runs (its attention's form, the vendor libraries or their references) in front where set.
    char cmdline[1024] = "";
    static const char *const choices[] = {"GM_CUDA_ATTN", "GM_CUDA_LIBS"};
    for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++) {
        const char *v = getenv(choices[i]);
        if (!v || !*v) continue;
        const size_t at = strlen(cmdline);
        snprintf(cmdline + at, sizeof cmdline - at, "%s=%s ", choices[i], v);
    }
    for (int i = 0; i < argc; i++) {
        strncat(cmdline, i ? " " : "", sizeof cmdline - strlen(cmdline) - 1);
        strncat(cmdline, argv[i], sizeof cmdline - strlen(cmdline) - 1);
    }
    results r = {0};
    if (!count && (ceilings ? !strcmp(ceilings, "library") : !strcmp(be->name, "cuda")))
        if (!(r.lib = gm_lib_ceilings_open(be, rc.device))) gm_die_last();
    r.warm_up_s = r.lib && !strcmp(be->name, "cuda") ? GPU_WARM_UP_S : 0;  // a CPU has no clocks to wake
    char *slug = r.lib && !strcmp(be->name, "cuda") ? gm_device_slug(gm_lib_ceilings_device(r.lib)) : gm_hardware_slug();
    char base[1024], csv[1200], md[1200], png[1200];
    if (name) snprintf(base, sizeof base, "%s/%s", out, name);
    else if (count)  // not the measured report's name: a prediction never replaces a measurement
        snprintf(base, sizeof base, "%s/predicted-h100-%s-%s-T%d", out, preset, scale, rc.model.seq_len);
    else snprintf(base, sizeof base, "%s/%s-%s-%s", out, slug, preset, scale);
    snprintf(csv, sizeof csv, "%s.csv", base), snprintf(md, sizeof md, "%s.md", base), snprintf(png, sizeof png, "%s.png", base);
    if (gm_mkdir_p(out, NULL)) gm_die_last();

    r.steps = steps, r.threads = omp_get_max_threads();
    r.load[0] = gm_load_average();
    if (!count) {
        fprintf(stderr, "kernels: %s %s B=%d T=%d on %s, backend %s (load %.2f); ceilings...\n", preset, scale,
                rc.model.batch, rc.model.seq_len, slug, rc.backend, r.load[0]);
        measure_ceilings(&r, 0);
    }

    gm_timing *tm = gm_timing_open(be);
    if (!tm) gm_die_last();
    phases ph = {.tm = tm, .tb = gm_timing_backend(tm), .cur = -1};
    gm_trainer *tr = gm_trainer_open(&rc, NULL, ph.tb);
    // The loader has the shards open: their names can go (also when the trainer refused).
    for (int v = 0; v < 2; v++) {
        char path[4200];
        unlink(shard_path(dir, v, path, sizeof path));
    }
    rmdir(dir);
    if (!tr) gm_die_last();

    // Every step at mid-schedule (the window and the learning rates of step steps/2).
    const int s_mid = rc.steps / 2;
    if (count) {
        report_info ri = {&rc, be->name, cmdline, NULL, doc_len, memory_why};
        count_step(tr, &ph, s_mid, &ri, rates_path, measured_path, fit_path ? fit_path : measured_path, md);
        gm_trainer_close(tr), gm_timing_close(tm), free(slug);
        return 0;
    }
    double loss, whole[MAX_STEPS];
    fprintf(stderr, "kernels: 1 warm-up step + %d timed steps...\n", steps);
    gm_timing_reset(tm);  // not the set-up's uploads
    gm_timing_enable(tm, 0);
    if (gm_trainer_step(tr, s_mid, &loss, NULL, NULL)) gm_die("kernels: warm-up step: %s", gm_error());
    gm_timing_enable(tm, 1);
    for (ph.step = 0; ph.step < steps; ph.step++) {
        uint64_t t0 = gm_now_ns();
        ph.cur = -1;
        if (gm_trainer_step(tr, s_mid, &loss, on_phase, &ph) || ph.tb->sync(ph.tb))
            gm_die("kernels: step: %s", gm_error());
        uint64_t t1 = gm_now_ns();
        if (ph.cur >= 0) ph.ms[ph.cur][ph.step] += (double)(t1 - ph.since) * 1e-6;
        whole[ph.step] = (double)(t1 - t0) * 1e-6;
        fprintf(stderr, "  step %d: %.0f ms, loss %.4f\n", ph.step, whole[ph.step], loss);
    }
    gm_timing_label(tm, "");
    for (int p = 0; p < ph.n; p++) median_of(ph.ms[p], steps, &r.part_ms[p], &r.part_min[p], &r.part_max[p]);
    median_of(whole, steps, &r.step_ms, &r.step_min, &r.step_max);
    gm_timing_enable(tm, 0);  // the same steps free-running: no sync around each call
    for (int k = 0; k < steps; k++) {
        uint64_t t0 = gm_now_ns();
        if (gm_trainer_step(tr, s_mid, &loss, NULL, NULL) || ph.tb->sync(ph.tb))
            gm_die("kernels: free-running step: %s", gm_error());
        whole[k] = (double)(gm_now_ns() - t0) * 1e-6;
        fprintf(stderr, "  free-running step %d: %.0f ms, loss %.4f\n", k, whole[k], loss);
    }
    median_of(whole, steps, &r.free_ms, &r.free_min, &r.free_max);
    int n;
    row *rows = rows_of(tm, steps, &n);
    gm_trainer_close(tr);

    if (r.lib) measure_gemm_shapes(&r, rows, n);
    measure_ceilings(&r, 1);
    r.load[1] = gm_load_average();
    if (r.lib) r.gemm = fmax(r.lib_gemm_at[0], r.lib_gemm_at[1]), r.copy = fmax(r.lib_copy_at[0], r.lib_copy_at[1]);
    else r.gemm = fmax(r.sgemm_at[0][1], r.sgemm_at[1][1]), r.copy = fmax(r.memcpy_at[0][1], r.memcpy_at[1][1]);

    const char *png_name = strrchr(png, '/') ? strrchr(png, '/') + 1 : png;
    report_info ri = {&rc, be->name, cmdline, png_name, doc_len, memory_why};
    write_csv(rows, n, &ph, &r, csv);
    write_md(rows, n, &ph, &r, &ri, md);
    printf("%s\n", csv);
    free(rows), free(slug);
    gm_timing_close(tm);
    gm_lib_ceilings_close(r.lib);
    return 0;
}
