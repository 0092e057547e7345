// NS vs SVD report: for every Muon matrix shape at full scale plus odd square/wide/tall shapes,
// every coefficient set, fp64 / fp32 / bf16-emulated, steps 1..10, plain Newton-Schulz and Gram
// Newton-Schulz (gram-ns, one restart before step 2): the distance to the polar factor and the
// singular-value band of the output; the scalar map sigma_in -> sigma_out of each set with the
// measured values overlaid (gnuplot PNG); the time of NS, gram-ns and the SVD per shape on one
// thread; and the time of the orthogonalize kernel over every Muon matrix of the softcap model at
// full scale, on one thread and on all threads. Every rate is a fraction of the OpenBLAS sgemm
// rate measured in the same run at the same thread count. Inputs are Gaussian matrices. With the
// numerics, NorMuon's effect on the update's singular values (record #43): the model's Muon shapes
// (Gaussian) and the real gradients of refdata/matrices/, orthogonalized, then through the CPU
// backend's `normuon` kernel (optim/normuon_effect.h).
//
//   build/bench/ns_report --out=reports/ns --commit=<git describe> [--reps=7] [--only=numerics|timing]
//                         [--matrices=refdata/matrices]
#include <cblas.h>
#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cost.h"
#include "backend/cpu/blas.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/linalg.h"
#include "base/args.h"
#include "base/help.h"
#include "base/error.h"
#include "base/io.h"
#include "base/matfile.h"
#include "base/rng.h"
#include "base/stats.h"
#include "base/timer.h"
#include "model/params.h"
#include "optim/muon.h"
#include "optim/normuon_effect.h"
#include "optim/ns_coeffs.h"
#include "optim/ortho_stats.h"
#include "train/ceilings.h"
#include "train/hardware.h"
#include "train/run_config.h"

#define MAX_STEPS 10
#define MAP_STEPS 5  // the scalar-map figure: what 5 steps (the speedrun's count) do

static const struct {
    int rows, cols;
    const char *what;
} shapes[] = {
    {768, 768, "attn q/k/v/proj; c_attn chunk (#4)"},
    {768, 3072, "mlp c_proj"},
    {3072, 768, "mlp c_fc"},
    {2304, 768, "fused c_attn (#3)"},
    {127, 255, "odd wide"},
    {255, 127, "odd tall"},
    {200, 200, "square"},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))
static const char *prec_name[3] = {"fp64", "fp32", "bf16"};
#define GRAM_RESTARTS (1u << 2)  // gram-ns as Dao-AILab run 5 steps: one restart, before step 2
static const char *method_name(gm_ortho_method m) { return m == GM_ORTHO_GRAM_NS ? "gram-ns" : "ns"; }

typedef struct {
    const gm_polar_ref *ref;
    const double *G;
    gm_ortho_stats st[MAX_STEPS];
    // Measured sigma_out of the final iterate along G's singular vectors: u_i^T X v_i.
    const double *U, *Vt;
    double *diag;
} observer;

static void observe(void *ctx, int k, const double *X, int rows, int cols) {
    observer *o = ctx;
    if (gm_ortho_stats_f64(o->ref, o->G, X, &o->st[k - 1])) gm_die_last();
    if (o->diag && k == MAP_STEPS) {
        const int r = o->ref->k;
        double *UtX = malloc((size_t)r * cols * sizeof(double));  // (k, cols) = U^T (k, rows) X
        if (!UtX) gm_die("ns_report: out of memory");
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, cols, rows, 1.0, o->U, r, X, cols, 0.0, UtX, cols);
        for (int i = 0; i < r; i++) o->diag[i] = cblas_ddot(cols, UtX + (size_t)i * cols, 1, o->Vt + (size_t)i * cols, 1);
        free(UtX);
    }
}

static void write_or_die(gm_atomic_file *af, int rc) {
    if (rc) {
        gm_atomic_abort(af);
        gm_die_last();
    }
}
#define OUT(af, ...) write_or_die(af, gm_atomic_printf(af, __VA_ARGS__))

// Flops: plain NS's products (backend/cost.h's gm_cost_ns_flops). gram-ns's times are quoted
// against the same count ("NS-equivalent" rates): how fast it delivers NS's result.

static void run_single(const gm_ortho *cfg, const float *G, float *X, int m, int n) {
    int rc = cfg->method == GM_ORTHO_SVD       ? gm_svd_polar_f32(G, X, m, n)
             : cfg->method == GM_ORTHO_GRAM_NS ? gm_gram_ns_f32(cfg, G, X, m, n, GM_MM_BLAS)
                                               : gm_ns_f32(cfg, G, X, m, n, GM_MM_BLAS);
    if (rc) gm_die_last();
}

typedef struct {
    const char *name;
    gm_ortho cfg;
} timed;

// ---- NorMuon's effect on the update (record #43) ----
#define NORMUON_SEQ 10      // the fixed sequence's length: steps of the second-moment EMA
#define NORMUON_BETA2 0.95  // record #43's beta2 (2025-11-10_CautiousWD, NorMuon's default)

// O (m, n) in fp64 from G: NS with `set` (5 steps, bf16 emulated, norm of the bf16 X: as record
// #43 runs Polar Express) in fp32, or, set NULL, the exact polar factor from the fp64 SVD.
static void make_update(const gm_ns_coeffs *set, const float *Gf, double *O, int m, int n) {
    const size_t mn = (size_t)m * n;
    double *G = malloc(mn * sizeof *G);
    float *X = malloc(mn * sizeof *X);
    if (!G || !X) gm_die("ns_report: out of memory at %dx%d", m, n);
    const gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = set, .steps = 5, .bf16 = 1, .norm_src = GM_NS_NORM_OF_X};
    for (size_t i = 0; i < mn; i++) G[i] = Gf[i];
    if (set ? gm_ns_f32(&cfg, Gf, X, m, n, GM_MM_BLAS) : gm_svd_polar_f64(G, O, m, n)) gm_die_last();
    if (set)
        for (size_t i = 0; i < mn; i++) O[i] = X[i];
    free(G), free(X);
}

static void normuon_row(gm_atomic_file *md, const char *input, int m, int n, int by_row, const char *upd,
                        const char *what, const gm_ortho_stats *st) {
    const double along = by_row ? st->row_max / st->row_min : st->col_max / st->col_min;
    const double across = by_row ? st->col_max / st->col_min : st->row_max / st->row_min;
    OUT(md, "| %s | %dx%d | %s | %s | %s | %.4f | %.4f | %.4g | %.4f | %.4f | %.4f | %.4f | %.4f |\n", input, m, n,
        by_row ? "row" : "column", upd, what, st->smin, st->smax, st->smax / st->smin, st->orth_err, st->polar_err,
        st->fro, along, across);
}

// The rows of one input G = Gs[T-1] (m, n), fp32: for each update (Polar Express, the quintic, the
// exact polar factor) O itself, NorMuon(O) after one step from a zero state and, when T > 1,
// NorMuon(O) after the T updates made from Gs[0..T-1] in turn.
static void normuon_rows(gm_atomic_file *md, const char *input, float *const *Gs, int T, int m, int n) {
    const size_t mn = (size_t)m * n;
    const int by_row = gm_muon_normuon_by_row(m, n);
    double *G = malloc(mn * sizeof *G), **O = calloc((size_t)T, sizeof *O);
    if (!G || !O) gm_die("ns_report: out of memory at %dx%d", m, n);
    for (int t = 0; t < T; t++)
        if (!(O[t] = malloc(mn * sizeof **O))) gm_die("ns_report: out of memory at %dx%d", m, n);
    for (size_t i = 0; i < mn; i++) G[i] = Gs[T - 1][i];
    gm_polar_ref ref;
    if (gm_polar_ref_init(&ref, G, m, n)) gm_die_last();
    const struct {
        const char *name;
        const gm_ns_coeffs *set;
    } kinds[] = {{"polar-express 5 (#43)", gm_ns_coeffs_find("polar-express")},
                 {"quintic 5", gm_ns_coeffs_find("quintic")},
                 {"SVD polar U V^T", NULL}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        fprintf(stderr, "ns_report: normuon %s %dx%d, %s\n", input, m, n, kinds[k].name);
        for (int t = 0; t < T; t++) make_update(kinds[k].set, Gs[t], O[t], m, n);
        gm_ortho_stats st_o, st_1, st_T;
        if (gm_normuon_effect(&ref, G, (const double *const *)O + T - 1, 1, by_row, NORMUON_BETA2, &st_o, &st_1, NULL))
            gm_die_last();
        normuon_row(md, input, m, n, by_row, kinds[k].name, "O", &st_o);
        normuon_row(md, input, m, n, by_row, kinds[k].name, "NorMuon(O), 1 step", &st_1);
        if (T > 1) {
            if (gm_normuon_effect(&ref, G, (const double *const *)O, T, by_row, NORMUON_BETA2, &st_o, &st_T, NULL))
                gm_die_last();
            char what[64];
            snprintf(what, sizeof what, "NorMuon(O), step %d", T);
            normuon_row(md, input, m, n, by_row, kinds[k].name, what, &st_T);
        }
    }
    gm_polar_ref_free(&ref);
    for (int t = 0; t < T; t++) free(O[t]);
    free(O), free(G);
}

static int is_bin(const struct dirent *e) {
    const size_t len = strlen(e->d_name);
    return len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0;
}

// Every *.bin of the folder, in name order; any fault ends the program before a report is opened.
static gm_matrix *read_matrices(const char *dir, int *count) {
    struct dirent **names;
    const int n = scandir(dir, &names, is_bin, alphasort);
    if (n < 0) gm_die("--matrices: cannot read the folder %s", dir);
    if (n == 0) gm_die("--matrices: %s holds no *.bin matrices", dir);
    gm_matrix *mats = calloc((size_t)n, sizeof *mats);
    if (!mats) gm_die("ns_report: out of memory");
    for (int f = 0; f < n; f++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, names[f]->d_name);
        if (gm_matfile_read(path, &mats[f])) gm_die("--matrices: %s", gm_error());
        free(names[f]);
    }
    free(names);
    *count = n;
    return mats;
}

static void normuon_section(gm_atomic_file *md, const char *matrices, gm_matrix *mats, int nmats) {
    OUT(md,
        "\n## NorMuon: how far from orthogonal the final update is (record #43)\n\n"
        "Record #43 (modded-nanogpt records/track_1_short/2025-11-10_CautiousWD, NorMuon from 2025-10-24_NorMuon) "
        "orthogonalizes the momentum with Polar Express and then applies NorMuon: each line of the update (a row when "
        "rows > cols, else a column: `gm_muon_normuon_by_row`) is divided by the root of its second moment, an EMA "
        "(beta2 = %.2f, zero start) of the line's mean square, and the whole matrix is rescaled to the Frobenius norm "
        "it had. Here O goes through the CPU backend's `normuon` kernel (fp32). A row scaling D O (or a column scaling "
        "O D) of an orthogonal O is orthogonal only when D is a multiple of the identity, so wherever O's line norms "
        "differ NorMuon's output is not orthogonal, by design: its singular values spread away from O's while its "
        "Frobenius norm stays ||O||_F (the rescale; equal to rounding in every row below). After one step from the zero "
        "state v2 = (1 - beta2) mean(line^2), so every line leaves with the same norm whatever beta2 and the input's "
        "scale: that column reads 1 up to rounding. A square polar factor U V^T has every row and column of norm 1, so "
        "NorMuon leaves it as it is; a rectangular one has orthonormal lines only along its long side, and NorMuon "
        "(which normalises the other lines of a wide c_proj and of a tall c_fc) takes it away from orthogonal. Row "
        "`step %d`: the same O after %d updates made from independent Gaussian inputs of the same shape (Philox seed 9, "
        "the last input the one above), so the state averages line statistics over steps: line norms are then only "
        "partly equalised. Gaussian inputs are one sample each (Philox seed 9, entries N(0,1)), the model's Muon shapes "
        "at full scale; the real inputs are the trainer's gradient/momentum dumps in `%s` (their README: tiny softcap "
        "run, step 30). Columns: sigma min/max and ||QQ^T - I||_2 (small side) of the update, sigma max/min, polar error "
        "against G's polar factor, ||.||_F, and the largest over the smallest line norm along NorMuon's axis and along "
        "the other axis. Checked by verify/test_normuon_effect.c.\n\n",
        NORMUON_BETA2, NORMUON_SEQ, NORMUON_SEQ, matrices);
    OUT(md, "| input | shape | NorMuon axis | orthogonalizer | update | sigma min | sigma max | sigma max/min | "
            "QQ^T-I (2) | polar err | norm F | line norm max/min (axis) | max/min (other axis) |\n");
    OUT(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    static const struct {
        int rows, cols;
        const char *what;
    } model[] = {{768, 768, "attn block (Gaussian)"}, {3072, 768, "mlp c_fc (Gaussian)"}, {768, 3072, "mlp c_proj (Gaussian)"}};
    for (int sh = 0; sh < 3; sh++) {
        const int m = model[sh].rows, n = model[sh].cols;
        float *Gs[NORMUON_SEQ];
        for (int t = 0; t < NORMUON_SEQ; t++) {
            if (!(Gs[t] = malloc((size_t)m * n * sizeof(float)))) gm_die("ns_report: out of memory at %dx%d", m, n);
            for (size_t i = 0; i < (size_t)m * n; i++) Gs[t][i] = gm_rng_normal(9, (uint64_t)(sh * NORMUON_SEQ + t), i);
        }
        normuon_rows(md, model[sh].what, Gs, NORMUON_SEQ, m, n);
        for (int t = 0; t < NORMUON_SEQ; t++) free(Gs[t]);
    }
    for (int f = 0; f < nmats; f++) normuon_rows(md, mats[f].name, &mats[f].data, 1, mats[f].rows, mats[f].cols);
}

static void usage(void) {
    printf("usage: ns_report [--out=DIR] [--commit=TEXT] [--reps=N] [--only=numerics|timing|all] [--matrices=DIR]\n"
           "  Newton-Schulz vs SVD: error vs steps vs time per coefficient set and precision, the scalar\n"
           "  map data of bench/ns_map.gp, NorMuon's effect on the update's singular values, and the\n"
           "  timings; Markdown tables in OUT.\n"
           "  --out       report folder (default reports/ns)\n"
           "  --commit    commit named in the reports (default unknown)\n"
           "  --reps      timed repetitions, the median reported (default 7)\n"
           "  --only      numerics, timing or all (default all)\n"
           "  --matrices  the NorMuon section's real gradient matrices, *.bin (default refdata/matrices)\n");
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    if (gm_help_requested(argc, argv)) return usage(), 0;
    const char *out = "reports/ns", *commit = "unknown", *only = "all", *matrices = "refdata/matrices";
    int reps = 7;
    for (int i = 1; i < argc;) {
        const char *key, *val;
        gm_arg_next(argc, argv, &i, &key, &val);
        if (strcmp(key, "out") == 0) out = val;
        else if (strcmp(key, "commit") == 0) commit = val;
        else if (strcmp(key, "reps") == 0) reps = (int)gm_arg_int(key, val, 1, 64);
        else if (strcmp(key, "only") == 0) only = val;
        else if (strcmp(key, "matrices") == 0) matrices = val;
        else gm_die("--%s: unknown flag (known: --out, --commit, --reps, --only, --matrices)", key);
    }
    if (strcmp(only, "all") && strcmp(only, "numerics") && strcmp(only, "timing"))
        gm_die("--only: '%s' is not numerics, timing or all", only);
    const int do_numerics = strcmp(only, "timing") != 0, do_timing = strcmp(only, "numerics") != 0;
    int nmats = 0;
    gm_matrix *mats = do_numerics ? read_matrices(matrices, &nmats) : NULL;
    char cmdline[1024] = "";
    for (int i = 0; i < argc; i++) {
        strncat(cmdline, i ? " " : "", sizeof cmdline - strlen(cmdline) - 1);
        strncat(cmdline, argv[i], sizeof cmdline - strlen(cmdline) - 1);
    }
    char path[4096];
    char *cpu = gm_cpu_model();
    const int nsets = gm_ns_coeffs_count(), nthreads = omp_get_max_threads();
    const gm_ns_coeffs *quintic = gm_ns_coeffs_find("quintic"), *pe = gm_ns_coeffs_find("polar-express");
    gm_cpu_blas_single_thread();  // NS and the SVD run on one thread each, as the backend runs them

    gm_atomic_file md;
    snprintf(path, sizeof path, "%s/ns_vs_svd.md", out);
    if (gm_atomic_open(&md, path)) gm_die_last();
    OUT(&md, "# Newton-Schulz vs SVD polar factor\n\n");
    OUT(&md, "Machine: %s, %ld hardware threads. Commit: `%s`.\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), commit);
    OUT(&md, "Command: `%s` (run by `make bench`, bench/run.sh).\n\n", cmdline);

    if (do_timing) {
        // ---- time per orthogonalization, one thread: every method interleaved rep by rep ----
        const gm_ortho ns_bf16 = {.method = GM_ORTHO_NS, .coeffs = quintic, .steps = 5, .bf16 = 1,
                                  .norm_src = GM_NS_NORM_OF_X};
        const timed methods[] = {
            {"NS quintic bf16 (trained)", ns_bf16},
            {"NS quintic fp32", {.method = GM_ORTHO_NS, .coeffs = quintic, .steps = 5, .norm_src = GM_NS_NORM_OF_X}},
            {"NS polar-express bf16",
             {.method = GM_ORTHO_NS, .coeffs = pe, .steps = 5, .bf16 = 1, .norm_src = GM_NS_NORM_OF_X}},
            {"gram-ns quintic bf16",
             {.method = GM_ORTHO_GRAM_NS, .coeffs = quintic, .steps = 5, .bf16 = 1, .norm_src = GM_NS_NORM_OF_X,
              .gram_restarts = GRAM_RESTARTS}},
            {"gram-ns polar-express bf16",
             {.method = GM_ORTHO_GRAM_NS, .coeffs = pe, .steps = 5, .bf16 = 1, .norm_src = GM_NS_NORM_OF_X,
              .gram_restarts = GRAM_RESTARTS}},
            {"SVD polar fp32", {.method = GM_ORTHO_SVD}},
        };
        enum { NM = sizeof methods / sizeof methods[0] };
        const double load0 = gm_load_average(), sg1_start = gm_ceiling_sgemm(1);
        double med[NSHAPES][NM], mn[NSHAPES][NM];
        for (int sh = 0; sh < NSHAPES; sh++) {
            const int m = shapes[sh].rows, n = shapes[sh].cols;
            float *G = malloc((size_t)m * n * 4), *X = malloc((size_t)m * n * 4);
            if (!G || !X) gm_die("ns_report: out of memory at %dx%d", m, n);
            for (size_t i = 0; i < (size_t)m * n; i++) G[i] = gm_rng_normal(7, (uint64_t)sh, i);
            fprintf(stderr, "ns_report: timing %dx%d on 1 thread\n", m, n);
            double t[NM][64];
            for (int r = -1; r < reps; r++)  // r = -1: warm-up, not counted
                for (int w = 0; w < NM; w++) {
                    uint64_t t0 = gm_now_ns();
                    run_single(&methods[w].cfg, G, X, m, n);
                    if (r >= 0) t[w][r] = gm_seconds_since(t0);
                }
            for (int w = 0; w < NM; w++) med[sh][w] = gm_median(t[w], reps), mn[sh][w] = t[w][0];
            free(G), free(X);
        }
        const double sg1 = fmax(sg1_start, gm_ceiling_sgemm(1));
        OUT(&md, "## Time per orthogonalization, one thread\n\n");
        OUT(&md, "Every cell ran on 1 thread (OpenBLAS 1 thread), the methods interleaved rep by rep: median (min) ms of "
                 "%d after one warm-up. Rate: plain NS's flops (per step 3 m^2 n + 2 m^3, m <= n) over the time, as a "
                 "fraction of OpenBLAS sgemm 2048^3 on 1 thread measured in this run: %.1f GFLOP/s (the better of "
                 "before and after). gram-ns rows give the NS-equivalent rate, i.e. how fast they deliver what NS "
                 "computes. 1-minute load average %.2f at the start, %.2f at the end (on %ld hardware threads: above "
                 "that, other work shared the CPU and the times are inflated).\n\n",
            reps, sg1, load0, gm_load_average(), sysconf(_SC_NPROCESSORS_ONLN));
        OUT(&md, "| shape | role | threads |");
        for (int w = 0; w < NM; w++) OUT(&md, " %s |", methods[w].name);
        OUT(&md, " NS rate / sgemm (trained) | gram-ns / NS time (quintic bf16) |\n|---|---|---|");
        for (int w = 0; w < NM + 2; w++) OUT(&md, "---|");
        OUT(&md, "\n");
        for (int sh = 0; sh < NSHAPES; sh++) {
            const int m = shapes[sh].rows, n = shapes[sh].cols;
            OUT(&md, "| %dx%d | %s | 1 |", m, n, shapes[sh].what);
            for (int w = 0; w < NM; w++) OUT(&md, " %.1f (%.1f) |", 1e3 * med[sh][w], 1e3 * mn[sh][w]);
            OUT(&md, " %.3f | %.3f |\n", gm_cost_ns_flops(m, n, 5) / med[sh][0] * 1e-9 / sg1, med[sh][3] / med[sh][0]);
        }

        // ---- the orthogonalize kernel over every Muon matrix of softcap at full scale ----
        gm_config mc;
        gm_table tab;
        gm_param_index ix;
        if (gm_preset_model(&mc, "softcap", "full") || gm_params_build(&mc, &tab, &ix)) gm_die_last();
        gm_ortho_item *items = calloc((size_t)tab.n, sizeof *items);
        if (!items) gm_die("ns_report: out of memory");
        int count = 0;
        double flops = 0;
        for (int i = 0; i < tab.n; i++) {
            const gm_view *v = &tab.v[i];
            if (v->group != GM_GROUP_MATRIX) continue;
            const int r = (int)v->shape[0], c = (int)v->shape[1];
            float *G = malloc((size_t)r * c * 4), *X = malloc((size_t)r * c * 4);
            if (!G || !X) gm_die("ns_report: out of memory for %s", v->name);
            for (size_t j = 0; j < (size_t)r * c; j++) G[j] = gm_rng_normal(8, (uint64_t)i, j);
            items[count++] = (gm_ortho_item){v->name, X, G, r, c, 1.0};
            flops += gm_cost_ns_flops(r, c, 5);
        }
        const gm_backend *be = gm_backend_cpu();
        const timed kmethods[] = {methods[0], methods[3]};
        enum { NK = 2 };
        const int thread_counts[2] = {1, nthreads};
        double kt[NK][2][64], ksg[2][2];
        const double load1 = gm_load_average();
        for (int a = 0; a < 2; a++) ksg[a][0] = gm_ceiling_sgemm(thread_counts[a]);
        const int kreps = reps < 3 ? reps : 3;
        fprintf(stderr, "ns_report: the orthogonalize kernel over %d matrices, %d reps\n", count, kreps);
        for (int r = 0; r < kreps; r++)
            for (int w = 0; w < NK; w++)
                for (int a = 0; a < 2; a++) {
                    omp_set_num_threads(thread_counts[a]);
                    uint64_t t0 = gm_now_ns();
                    be->orthogonalize(be, &kmethods[w].cfg, count, items);
                    if (be->sync(be)) gm_die_last();
                    kt[w][a][r] = gm_seconds_since(t0);
                    omp_set_num_threads(nthreads);
                }
        for (int a = 0; a < 2; a++) ksg[a][1] = gm_ceiling_sgemm(thread_counts[a]);
        OUT(&md, "\n## The orthogonalize kernel over a whole model, one thread and all threads\n\n");
        OUT(&md, "The CPU backend's `orthogonalize` over the %d Muon matrices of `softcap` at full scale (Gaussian "
                 "inputs; %.1f GFLOP of plain NS per call): the items run in parallel over the OpenMP threads, "
                 "largest first, each on one thread with single-threaded OpenBLAS. Median (min) of %d calls, methods "
                 "and thread counts interleaved; rate as above, against OpenBLAS sgemm 2048^3 measured at the same "
                 "thread count before and after (the better is used). 1-minute load average %.2f at the start, %.2f "
                 "at the end.\n\n",
            count, flops * 1e-9, kreps, load1, gm_load_average());
        OUT(&md, "| method | threads | ms per call | NS-equivalent GFLOP/s | sgemm GFLOP/s (before, after) | rate / sgemm |\n");
        OUT(&md, "|---|---|---|---|---|---|\n");
        for (int w = 0; w < NK; w++)
            for (int a = 0; a < 2; a++) {
                const double m_s = gm_median(kt[w][a], kreps), sg = fmax(ksg[a][0], ksg[a][1]);
                OUT(&md, "| %s | %d | %.0f (%.0f) | %.1f | %.1f, %.1f | %.3f |\n", kmethods[w].name, thread_counts[a],
                    1e3 * m_s, 1e3 * kt[w][a][0], flops / m_s * 1e-9, ksg[a][0], ksg[a][1], flops / m_s * 1e-9 / sg);
            }
        for (int i = 0; i < count; i++) free(items[i].out), free((void *)items[i].G);
        free(items);
        gm_table_free(&tab);
        OUT(&md, "\n");
    }

    if (do_numerics) {
        gm_atomic_file dat, full;
        // Scalar-map figure data: curves, then measured (x_in, sigma_out) points per set (plain NS).
        snprintf(path, sizeof path, "%s/ns_map.dat", out);
        if (gm_atomic_open(&dat, path)) gm_die_last();
        for (int si = 0; si < nsets; si++) {
            const gm_ns_coeffs *set = gm_ns_coeffs_at(si);
            OUT(&dat, "# curve %s: x_in p_%d(x_in)\n", set->name, MAP_STEPS);
            for (int i = 0; i <= 500; i++) {
                double x = pow(10.0, -5.0 + 5.05 * i / 500);
                OUT(&dat, "%.6e %.6e\n", x, gm_ns_scalar_map(set, MAP_STEPS, x));
            }
            OUT(&dat, "\n\n");
        }
        OUT(&md,
            "Inputs: one Gaussian matrix per shape (Philox seed 7, entries N(0,1)); not real gradients. Reference: "
            "polar factor U V^T from the fp64 SVD (LAPACK dgesdd). `bf16`: bf16 emulated on the CPU (normalized input "
            "and every product rounded to bf16, fp32 accumulation). Normalization X = G / (s ||X||_F + eps) with the "
            "norm of the bf16 X (records #8+). `polar-express` rows are Polar Express as records "
            "2025-09-29_PolarExpress and 2025-11-10_CautiousWD (#43) run it (their `polar_express`, printed at the top "
            "of their logs in modded-nanogpt records/track_1_short/): bf16 input, X / (||X||_F (1 + 2e-2) + 1e-6) with "
            "the norm of the bf16 X, a tall input transposed (and the result back), their five triples (beyond step 5, "
            "full table, the fifth repeats). Its bf16 rows at K = 5 are the record's computation but for one "
            "rounding: eager PyTorch returns the norm of a bf16 tensor as bf16, so the denominator is rounded to 8 bits "
            "(a scale change below 2^-7 relative; the record's compiled function may keep it wider), where ours stays "
            "fp64. Methods: `ns` plain Newton-Schulz; `gram-ns` Gram Newton-Schulz "
            "(iterating on X X^T, one restart before step 2; a square input runs NS with symmetric products). "
            "Columns: polar error ||Q - UV^T||_F / ||UV^T||_F; sigma min/max of Q; ||QQ^T - I||_2 (small side); dual "
            "gap (||G||_* - <G, Q>) / ||G||_* (negative when ||Q||_2 > 1); bound violation max(||Q||_2 - 1, 0). The "
            "scalar map of each set is in ns_map.png.\n\n");
        snprintf(path, sizeof path, "%s/ns_table_full.md", out);
        if (gm_atomic_open(&full, path)) gm_die_last();
        OUT(&full, "# NS vs SVD, every shape x set x method x precision x steps 1..%d\n\n", MAX_STEPS);
        OUT(&full, "Same run and columns as ns_vs_svd.md (commit `%s`, %s).\n\n", commit, cpu);
        OUT(&full, "| shape | set | method | prec | K | polar err | sigma min | sigma max | QQ^T-I (2) | dual gap | bound "
                   "viol |\n");
        OUT(&full, "|---|---|---|---|---|---|---|---|---|---|---|\n");

        // Summary rows (K = 5) go to ns_vs_svd.md after the loop.
        static char summary[1 << 17];
        size_t slen = 0;
        for (int sh = 0; sh < NSHAPES; sh++) {
            const int m = shapes[sh].rows, n = shapes[sh].cols, k = m < n ? m : n;
            const size_t mn = (size_t)m * n;
            fprintf(stderr, "ns_report: numerics %dx%d (%s)\n", m, n, shapes[sh].what);
            double *G = malloc(mn * 8), *U = malloc((size_t)m * k * 8), *s = malloc((size_t)k * 8);
            double *Vt = malloc((size_t)k * n * 8), *diag = malloc((size_t)k * 8), *X = malloc(mn * 8);
            float *Gf = malloc(mn * 4), *Xf = malloc(mn * 4);
            if (!G || !U || !s || !Vt || !diag || !X || !Gf || !Xf) gm_die("ns_report: out of memory at %dx%d", m, n);
            for (size_t i = 0; i < mn; i++) Gf[i] = gm_rng_normal(7, (uint64_t)sh, i), G[i] = Gf[i];
            gm_polar_ref ref;
            if (gm_polar_ref_init(&ref, G, m, n) || gm_svd_f64(G, m, n, U, s, Vt)) gm_die_last();
            const int plot = m == 768 && (n == 768 || n == 3072);  // the scalar-map figure's measured points

            for (int si = 0; si < nsets; si++) {
                const gm_ns_coeffs *set = gm_ns_coeffs_at(si);
                double fro = 0;
                for (int i = 0; i < k; i++) fro += s[i] * s[i];
                const double scale = set->norm_scale * sqrt(fro) + set->norm_eps;
                for (int meth = GM_ORTHO_NS; meth <= GM_ORTHO_GRAM_NS; meth++)
                    for (int p = 0; p < 3; p++) {
                        const int gram = meth == GM_ORTHO_GRAM_NS;
                        observer o = {.ref = &ref, .G = G, .U = U, .Vt = Vt, .diag = plot && p > 0 && !gram ? diag : NULL};
                        gm_ortho cfg = {.method = (gm_ortho_method)meth, .coeffs = set, .steps = MAX_STEPS, .bf16 = p == 2,
                                        .norm_src = GM_NS_NORM_OF_X, .gram_restarts = GRAM_RESTARTS, .observe = observe,
                                        .observe_ctx = &o};
                        int rc = p == 0 ? (gram ? gm_gram_ns_f64 : gm_ns_f64)(&cfg, G, X, m, n, GM_MM_BLAS)
                                        : (gram ? gm_gram_ns_f32 : gm_ns_f32)(&cfg, Gf, Xf, m, n, GM_MM_BLAS);
                        if (rc) gm_die_last();
                        for (int K = 1; K <= MAX_STEPS; K++) {
                            const gm_ortho_stats *st = &o.st[K - 1];
                            char row[512];
                            int len = snprintf(row, sizeof row,
                                               "| %dx%d | %s | %s | %s | %d | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |\n", m,
                                               n, set->name, method_name(cfg.method), prec_name[p], K, st->polar_err,
                                               st->smin, st->smax, st->orth_err, st->dual_gap, st->bound_viol);
                            OUT(&full, "%s", row);
                            if (K == 5 && slen + (size_t)len < sizeof summary)
                                memcpy(summary + slen, row, (size_t)len + 1), slen += (size_t)len;
                        }
                        if (o.diag) {
                            OUT(&dat, "# measured %s %s %dx%d K=%d: x_in u_i^T X v_i\n", set->name, prec_name[p], m, n,
                                MAP_STEPS);
                            for (int i = 0; i < k; i++) OUT(&dat, "%.6e %.6e\n", s[i] / scale, diag[i]);
                            OUT(&dat, "\n\n");
                        }
                    }
            }
            gm_polar_ref_free(&ref);
            free(G), free(U), free(s), free(Vt), free(diag), free(X), free(Gf), free(Xf);
        }
        OUT(&md, "## After 5 steps (every shape, set, method and precision)\n\n");
        OUT(&md, "| shape | set | method | prec | K | polar err | sigma min | sigma max | QQ^T-I (2) | dual gap | bound viol |\n");
        OUT(&md, "|---|---|---|---|---|---|---|---|---|---|---|\n");
        OUT(&md, "%s", summary);
        OUT(&md, "\nSteps 1..%d: ns_table_full.md. Scalar map after %d steps with the measured u_i^T Q v_i of the "
                 "768x768 and 768x3072 inputs (plain NS, fp32 and bf16): ns_map.png.\n", MAX_STEPS, MAP_STEPS);
        normuon_section(&md, matrices, mats, nmats);
        if (gm_atomic_commit(&full) || gm_atomic_commit(&dat)) gm_die_last();
    }
    if (gm_atomic_commit(&md)) gm_die_last();
    for (int f = 0; f < nmats; f++) gm_matrix_free(&mats[f]);
    free(mats), free(cpu);
    return 0;
}
