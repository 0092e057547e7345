// NS vs SVD report: for every Muon matrix shape at full scale plus odd square/wide/tall shapes,
// every coefficient set, fp64 / fp32 / bf16-emulated, steps 1..10: the distance of Newton-Schulz
// to the polar factor and the singular-value band of its output; the scalar map sigma_in ->
// sigma_out of each set with the measured values overlaid (gnuplot PNG); and the time of NS vs
// the SVD per shape on this CPU. Inputs are Gaussian matrices (no real gradients yet).
//
//   build/bench/ns_report --out=reports/ns --commit=<git describe> [--reps=7]
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/args.h"
#include "base/error.h"
#include "train/hardware.h"
#include "base/io.h"
#include "base/rng.h"
#include "base/stats.h"
#include "base/timer.h"
#include "optim/ortho_stats.h"
#include "backend/cpu/linalg.h"
#include "optim/ns_coeffs.h"
#include "train/hardware.h"

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

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    const char *out = "reports/ns", *commit = "unknown";
    int reps = 7;
    for (int i = 1; i < argc;) {
        const char *key, *val;
        gm_arg_next(argc, argv, &i, &key, &val);
        if (strcmp(key, "out") == 0) out = val;
        else if (strcmp(key, "commit") == 0) commit = val;
        else if (strcmp(key, "reps") == 0) reps = (int)gm_arg_int(key, val, 1, 1000);
        else gm_die("--%s: unknown flag (known: --out, --commit, --reps)", key);
    }
    char cmdline[1024] = "";
    for (int i = 0; i < argc; i++) {
        strncat(cmdline, i ? " " : "", sizeof cmdline - strlen(cmdline) - 1);
        strncat(cmdline, argv[i], sizeof cmdline - strlen(cmdline) - 1);
    }
    char path[4096];
    char *cpu = gm_cpu_model();
    const int nsets = gm_ns_coeffs_count();

    gm_atomic_file md;
    snprintf(path, sizeof path, "%s/ns_vs_svd.md", out);
    if (gm_atomic_open(&md, path)) gm_die_last();
    // Scalar-map figure data: curves, then measured (x_in, sigma_out) points per set.
    gm_atomic_file dat;
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

    const double load_start = gm_load_average();
    double timing[NSHAPES][3][2];  // (median, min) seconds: NS fp32 (quintic, 5 steps), SVD polar fp32 and fp64
    OUT(&md, "# Newton-Schulz vs SVD polar factor\n\n");
    OUT(&md, "Machine: %s, %ld hardware threads, OpenBLAS with %d threads. Commit: `%s`.\n", cpu,
        sysconf(_SC_NPROCESSORS_ONLN), openblas_get_num_threads(), commit);
    OUT(&md, "Command: `%s` (run by `make bench`, bench/run.sh).\n\n", cmdline);
    OUT(&md,
        "Inputs: one Gaussian matrix per shape (Philox seed 7, entries N(0,1)); not real gradients. Reference: "
        "polar factor U V^T from the fp64 SVD (LAPACK dgesdd). `bf16`: bf16 emulated on the CPU (normalized input "
        "and every product rounded to bf16, fp32 accumulation). Normalization X = G / (s ||X||_F + eps) with the "
        "norm of the bf16 X (records #8+). Columns: polar error ||Q - UV^T||_F / ||UV^T||_F; sigma min/max of Q; "
        "||QQ^T - I||_2 (small side); dual gap (||G||_* - <G, Q>) / ||G||_* (negative when ||Q||_2 > 1); bound "
        "violation max(||Q||_2 - 1, 0). The scalar map of each set is in ns_map.png.\n\n");

    gm_atomic_file full;
    snprintf(path, sizeof path, "%s/ns_table_full.md", out);
    if (gm_atomic_open(&full, path)) gm_die_last();
    OUT(&full, "# NS vs SVD, every shape x set x precision x steps 1..%d\n\n", MAX_STEPS);
    OUT(&full, "Same run and columns as ns_vs_svd.md (commit `%s`, %s).\n\n", commit, cpu);
    OUT(&full, "| shape | set | prec | K | polar err | sigma min | sigma max | QQ^T-I (2) | dual gap | bound viol |\n");
    OUT(&full, "|---|---|---|---|---|---|---|---|---|---|\n");

    // Summary rows (K = 5) go to ns_vs_svd.md after the loop.
    static char summary[1 << 16];
    size_t slen = 0;

    for (int sh = 0; sh < NSHAPES; sh++) {
        const int m = shapes[sh].rows, n = shapes[sh].cols, k = m < n ? m : n;
        const size_t mn = (size_t)m * n;
        fprintf(stderr, "ns_report: %dx%d (%s)\n", m, n, shapes[sh].what);
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
            for (int p = 0; p < 3; p++) {
                observer o = {.ref = &ref, .G = G, .U = U, .Vt = Vt, .diag = plot && p > 0 ? diag : NULL};
                gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = set, .steps = MAX_STEPS, .bf16 = p == 2,
                                .norm_src = GM_NS_NORM_OF_X, .observe = observe, .observe_ctx = &o};
                int rc = p == 0 ? gm_ns_f64(&cfg, G, X, m, n, GM_MM_BLAS) : gm_ns_f32(&cfg, Gf, Xf, m, n, GM_MM_BLAS);
                if (rc) gm_die_last();
                for (int K = 1; K <= MAX_STEPS; K++) {
                    const gm_ortho_stats *st = &o.st[K - 1];
                    char row[512];
                    int len = snprintf(row, sizeof row, "| %dx%d | %s | %s | %d | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |\n",
                                       m, n, set->name, prec_name[p], K, st->polar_err, st->smin, st->smax, st->orth_err,
                                       st->dual_gap, st->bound_viol);
                    OUT(&full, "%s", row);
                    if (K == 5 && slen + (size_t)len < sizeof summary) memcpy(summary + slen, row, (size_t)len + 1), slen += (size_t)len;
                }
                if (o.diag) {
                    OUT(&dat, "# measured %s %s %dx%d K=%d: x_in u_i^T X v_i\n", set->name, prec_name[p], m, n, MAP_STEPS);
                    for (int i = 0; i < k; i++) OUT(&dat, "%.6e %.6e\n", s[i] / scale, diag[i]);
                    OUT(&dat, "\n\n");
                }
            }
        }

        // Timing: NS (the speedrun's quintic, 5 steps, fp32 sgemm) vs the SVD polar factor.
        gm_ortho q5 = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_find("quintic"), .steps = 5,
                       .norm_src = GM_NS_NORM_OF_X};
        double t[3][64];
        for (int w = 0; w < 3; w++)
            for (int r = -1; r < reps && r < 64; r++) {  // r = -1: warm-up, not counted
                uint64_t t0 = gm_now_ns();
                int rc = w == 0 ? gm_ns_f32(&q5, Gf, Xf, m, n, GM_MM_BLAS)
                         : w == 1 ? gm_svd_polar_f32(Gf, Xf, m, n)
                                  : gm_svd_polar_f64(G, X, m, n);
                if (rc) gm_die_last();
                if (r >= 0) t[w][r] = gm_seconds_since(t0);
            }
        for (int w = 0; w < 3; w++) {
            timing[sh][w][0] = gm_median(t[w], reps < 64 ? reps : 64);
            timing[sh][w][1] = t[w][0];  // gm_median() sorted the samples
        }
        gm_polar_ref_free(&ref);
        free(G), free(U), free(s), free(Vt), free(diag), free(X), free(Gf), free(Xf);
    }

    OUT(&md, "## Time per orthogonalization on this CPU (median of %d after one warm-up)\n\n", reps);
    OUT(&md, "1-minute load average at the start %.2f, at the end %.2f (on %ld hardware threads: above that, other "
             "work shared the CPU and the times are inflated).\n\n", load_start, gm_load_average(), sysconf(_SC_NPROCESSORS_ONLN));
    OUT(&md, "Median (min) in ms. NS: the speedrun's quintic, 5 steps, fp32 (OpenBLAS ssyrk/sgemm); SVD: "
             "LAPACKE gesdd + the U V^T product.\n\n");
    OUT(&md, "| shape | role | NS quintic 5 steps fp32 | SVD polar fp32 | SVD polar fp64 | NS / SVD (fp32, medians) |\n");
    OUT(&md, "|---|---|---|---|---|---|\n");
    for (int sh = 0; sh < NSHAPES; sh++)
        OUT(&md, "| %dx%d | %s | %.1f (%.1f) | %.1f (%.1f) | %.1f (%.1f) | %.3f |\n", shapes[sh].rows, shapes[sh].cols,
            shapes[sh].what, 1e3 * timing[sh][0][0], 1e3 * timing[sh][0][1], 1e3 * timing[sh][1][0],
            1e3 * timing[sh][1][1], 1e3 * timing[sh][2][0], 1e3 * timing[sh][2][1], timing[sh][0][0] / timing[sh][1][0]);
    OUT(&md, "\n## After 5 steps (every shape, set and precision)\n\n");
    OUT(&md, "| shape | set | prec | K | polar err | sigma min | sigma max | QQ^T-I (2) | dual gap | bound viol |\n");
    OUT(&md, "|---|---|---|---|---|---|---|---|---|---|\n");
    OUT(&md, "%s", summary);
    OUT(&md, "\nSteps 1..%d: ns_table_full.md. Scalar map after %d steps with the measured u_i^T Q v_i of the "
             "768x768 and 768x3072 inputs (fp32 and bf16): ns_map.png.\n", MAX_STEPS, MAP_STEPS);
    if (gm_atomic_commit(&md) || gm_atomic_commit(&full) || gm_atomic_commit(&dat)) gm_die_last();
    free(cpu);
    return 0;
}
