// The optimizer kernels of the CUDA backend (adam_update, momentum, orthogonalize) against the CPU
// backend, on fresh random inputs (the seed is in every failure message; GM_TEST_SEED=<n> replays
// it). Skipped where no GPU is present (GM_REQUIRE_GPU=1: failed).
//
// Bars:
// - adam_update and momentum are the CPU's statements with explicitly rounded operations: equal bit
//   for bit. With normalize_grad the gradient scale comes from an fp64 sum in another order, so it
//   may differ by an ulp: m, v and p within 4 eps32 per step, relative.
// - muon_update (record #43's decayed update) is the CPU's statements too: equal bit for bit.
// - normuon: each line's sums, its state's EMA and its scaling are the CPU's statements in the
//   CPU's order (fp64 sums, explicitly rounded fp32): the second moments are equal bit for bit; the
//   final rescale adds the lines' fp64 sums in another order, so its fp32 factor may differ by an
//   ulp and each value of V by 2 eps32 relative, so V's norm-wise relative error is at most 2 eps32.
// - Newton-Schulz in fp32: both sum their products in fp32 in different orders, so they agree as
//   the CPU's BLAS and triple-loop paths do (test_ns_naive.c): |GPU - CPU| <= 2 sqrt(n) eps32 amp,
//   amp the run's amplification of rounding errors predicted from G's singular values.
// - Newton-Schulz in bf16: the GPU rounds at the CPU emulation's points (the normalized input, and
//   A, B and X of each of the K steps), so the two may differ only where a summation order flips a
//   rounding: their relative distance is held to the bar of bf16 against fp32 itself (1 + 3K) u,
//   u = 2^-8 (test_ns_bf16.c), at the model's real shapes. Beside it, the GPU's bf16 run must
//   differ from its fp32 run (the rounding happened) and its outputs must be bf16 values.
// - SVD polar factor: LAPACK-style, Q orthonormal on its small side, ||I - Q Q^T||_1 / (k eps32) <
//   30, and Q within 30 max(m, n) eps32 kappa of the CPU's (relative, Frobenius), kappa = s_max /
//   s_min over the kept singular values: the perturbation bound of the polar factor for a
//   backward-stable SVD. A rank-r input keeps exactly r directions, as on the CPU.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/linalg.h"
#include "backend/cuda/cuda.h"
#include "base/bf16.h"
#include "base/error.h"
#include "cuda_check.h"
#include "helpers.h"
#include "optim/ns_coeffs.h"
#include "ortho_fixtures.h"

#define EPS32 1.1920928955078125e-07
#define U_BF16 (1.0 / 256)
#define LAPACK_BAR 30.0

// One Adam step's scalars at step t (1-based), as optim/adam.c computes them.
static gm_adam_args adam_args(long t, double lr, double wd, int normalize) {
    const double b1 = 0.9, b2 = 0.95;
    return (gm_adam_args){.step_size = lr / (1.0 - pow(b1, (double)t)),
                          .bc2_sqrt = sqrt(1.0 - pow(b2, (double)t)),
                          .eps = 1e-8,
                          .beta1 = b1,
                          .beta2 = b2,
                          .decay = 1.0 - lr * wd,
                          .apply_decay = wd != 0,
                          .normalize_grad = normalize};
}

Test(cuda_optim, adam_update_matches_cpu) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const size_t sizes[] = {1, 1000, (1u << 20) + 3};
    const int steps = 3;
    int ran = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int mode = 0; mode < 3; mode++) {  // Adam; AdamW; AdamW with normalize_grad
            const size_t n = sizes[s];
            char what[96];
            snprintf(what, sizeof what, "adam_update mode %d n=%zu", mode, n);
            if (!cc_case_fits(what, (double)n * steps)) continue;
            ran++;
            const double wd = mode ? 0.1 : 0.0;
            const int normalize = mode == 2;
            gm_real *p = cc_randn(&e, n, 1.0), *m = calloc(n, sizeof(gm_real)), *v = calloc(n, sizeof(gm_real));
            cr_assert(m && v);
            gm_real *gp = cc_to_gpu(&e, p, sizeof(gm_real) * n), *gm = cc_to_gpu(&e, m, sizeof(gm_real) * n);
            gm_real *gv = cc_to_gpu(&e, v, sizeof(gm_real) * n), *gg = e.gpu->alloc(e.gpu, sizeof(gm_real) * n);
            cr_assert(gg, "%s", gm_error());
            for (long t = 1; t <= steps; t++) {
                gm_real *g = cc_randn(&e, n, 0.01);
                const gm_adam_args a = adam_args(t, 1e-3, wd, normalize);
                const gm_adam_span whole = {0, 0, n};
                e.cpu->adam_update(e.cpu, p, g, m, v, 1, &whole, &a);
                e.gpu->upload(e.gpu, gg, g, sizeof(gm_real) * n);
                e.gpu->adam_update(e.gpu, gp, gg, gm, gv, 1, &whole, &a);
                free(g);
            }
            cr_assert_eq(e.cpu->sync(e.cpu), 0, "%s", gm_error());
            const char *names[] = {"p", "m", "v"};
            const gm_real *dev[] = {gp, gm, gv}, *ref[] = {p, m, v};
            for (int k = 0; k < 3; k++) {
                snprintf(what, sizeof what, "adam_update mode %d n=%zu: %s after %d steps", mode, n, names[k], steps);
                if (normalize)
                    cc_expect_close(&e, what, dev[k], ref[k], n, 4 * steps * EPS32);
                else
                    cc_expect_equal(&e, what, dev[k], ref[k], n);
            }
            e.gpu->free(e.gpu, gp), e.gpu->free(e.gpu, gm), e.gpu->free(e.gpu, gv), e.gpu->free(e.gpu, gg);
            free(p), free(m), free(v);
        }
    cc_expect_some_ran(ran);
}

Test(cuda_optim, momentum_bitwise_equal) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const size_t sizes[] = {1, 4097, (1u << 20) + 5};
    int ran = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int mode = 0; mode < 6; mode++) {  // {EMA, plain} x {u = buf, Nesterov, u not wanted}
            const size_t n = sizes[s];
            char what[96];
            snprintf(what, sizeof what, "momentum mode %d n=%zu", mode, n);
            if (!cc_case_fits(what, 3.0 * n)) continue;
            ran++;
            const double mu = 0.95, gmul = mode & 1 ? 1.0 : 1.0 - mu;
            const int want_u = mode < 4, nesterov = mode >= 2 && mode < 4;
            gm_real *buf = cc_randn(&e, n, 1.0), *u = malloc(sizeof(gm_real) * n);
            cr_assert(u);
            gm_real *gbuf = cc_to_gpu(&e, buf, sizeof(gm_real) * n), *gu = cc_poisoned(&e, n);
            gm_real *gg = e.gpu->alloc(e.gpu, sizeof(gm_real) * n);
            cr_assert(gg, "%s", gm_error());
            for (int step = 0; step < 3; step++) {
                gm_real *g = cc_randn(&e, n, 1.0);
                e.cpu->momentum(e.cpu, buf, want_u ? u : NULL, g, n, mu, gmul, nesterov);
                e.gpu->upload(e.gpu, gg, g, sizeof(gm_real) * n);
                e.gpu->momentum(e.gpu, gbuf, want_u ? gu : NULL, gg, n, mu, gmul, nesterov);
                free(g);
            }
            snprintf(what, sizeof what, "momentum mode %d n=%zu: buf", mode, n);
            cc_expect_equal(&e, what, gbuf, buf, n);
            if (want_u) {
                snprintf(what, sizeof what, "momentum mode %d n=%zu: u", mode, n);
                cc_expect_equal(&e, what, gu, u, n);
            }
            e.gpu->free(e.gpu, gbuf), e.gpu->free(e.gpu, gu), e.gpu->free(e.gpu, gg);
            free(buf), free(u);
        }
    cc_expect_some_ran(ran);
}

Test(cuda_optim, muon_update_bitwise_equal) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const size_t sizes[] = {1, 4097, (1u << 20) + 7};
    int ran = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int cautious = 0; cautious < 2; cautious++) {
        const size_t n = sizes[s];
        char what[64];
        snprintf(what, sizeof what, "muon_update n=%zu cautious=%d", n, cautious);
        if (!cc_case_fits(what, (double)n)) continue;
        ran++;
        gm_real *p = cc_randn(&e, n, 0.1), *u = cc_randn(&e, n, 1.0);
        // Zeros on either side: the cautious mask u * p >= 0 holds there (the record's >=, not >).
        for (size_t i = 0; i < n; i += 17) u[i] = 0;
        for (size_t i = 5; i < n; i += 19) p[i] = 0;
        gm_real *gp = cc_to_gpu(&e, p, sizeof(gm_real) * n), *gu = cc_to_gpu(&e, u, sizeof(gm_real) * n);
        e.cpu->muon_update(e.cpu, p, u, n, 0.05, 0.06, cautious);
        e.gpu->muon_update(e.gpu, gp, gu, n, 0.05, 0.06, cautious);
        cc_expect_equal(&e, what, gp, p, n);
        e.gpu->free(e.gpu, gp), e.gpu->free(e.gpu, gu);
        free(p), free(u);
    }
    cc_expect_some_ran(ran);
}

Test(cuda_optim, normuon_matches_cpu) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    // The model's c_fc, attention and c_proj (out, in), odd small shapes of both axes, and lines longer
    // than the kernel's 256-element segment, by row and by column (the last segment partial).
    const int dims[][2] = {{3072, 768}, {768, 768}, {768, 3072}, {37, 5},    {5, 37},
                           {33, 33},    {1, 40},    {700, 600},  {600, 700}};
    int ran = 0;
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
        const int rows = dims[d][0], cols = dims[d][1], by_row = rows > cols, lines = by_row ? rows : cols;
        const size_t n = (size_t)rows * cols;
        char what[96];
        snprintf(what, sizeof what, "normuon %dx%d", rows, cols);
        if (!cc_case_fits(what, 2.0 * n)) continue;
        ran++;
        gm_real *v2 = calloc((size_t)lines, sizeof *v2);
        cr_assert(v2);
        gm_real *gv2 = cc_to_gpu(&e, v2, sizeof(gm_real) * lines), *gV = e.gpu->alloc(e.gpu, sizeof(gm_real) * n), *V = NULL;
        cr_assert(gV, "%s", gm_error());
        for (int step = 0; step < 2; step++) {  // the second call starts from a non-zero state
            free(V);
            V = cc_randn(&e, n, 1.0 / sqrt(cols));
            e.gpu->upload(e.gpu, gV, V, sizeof(gm_real) * n);
            e.cpu->normuon(e.cpu, V, v2, rows, cols, by_row, 0.95);
            e.gpu->normuon(e.gpu, gV, gv2, rows, cols, by_row, 0.95);
        }
        snprintf(what, sizeof what, "normuon %dx%d: second moments", rows, cols);
        cc_expect_equal(&e, what, gv2, v2, (size_t)lines);
        snprintf(what, sizeof what, "normuon %dx%d: V", rows, cols);
        cc_expect_close(&e, what, gV, V, n, 2 * EPS32);
        e.gpu->free(e.gpu, gV), e.gpu->free(e.gpu, gv2);
        free(V), free(v2);
    }
    cc_expect_some_ran(ran);
}

// ---- orthogonalize ----

typedef struct {
    int rows, cols;
    double scale;
} ortho_shape;

// One orthogonalize call with `count` items G[i] (host, rows x cols) on both backends; cpu[i] and
// gpu[i] receive the outputs (malloc'd). The GPU outputs start as NaN, so an unwritten value fails.
static void run_both(cc_env *e, const gm_ortho *cfg, int count, const ortho_shape *sh, gm_real **G, gm_real **cpu,
                     gm_real **gpu) {
    gm_ortho_item *hi = calloc((size_t)count, sizeof *hi), *di = calloc((size_t)count, sizeof *di);
    gm_real **dG = calloc((size_t)count, sizeof *dG);
    cr_assert(hi && di && dG);
    for (int i = 0; i < count; i++) {
        const size_t n = (size_t)sh[i].rows * sh[i].cols;
        cpu[i] = malloc(sizeof(gm_real) * n);
        cr_assert(cpu[i]);
        dG[i] = cc_to_gpu(e, G[i], sizeof(gm_real) * n);
        hi[i] = (gm_ortho_item){"item", cpu[i], G[i], sh[i].rows, sh[i].cols, sh[i].scale};
        di[i] = (gm_ortho_item){"item", cc_poisoned(e, n), dG[i], sh[i].rows, sh[i].cols, sh[i].scale};
    }
    e->cpu->orthogonalize(e->cpu, cfg, count, hi);
    cr_assert_eq(e->cpu->sync(e->cpu), 0, "cpu orthogonalize: %s", gm_error());
    e->gpu->orthogonalize(e->gpu, cfg, count, di);
    cc_sync(e, "gpu orthogonalize");
    for (int i = 0; i < count; i++) {
        gpu[i] = cc_from_gpu(e, di[i].out, (size_t)sh[i].rows * sh[i].cols);
        e->gpu->free(e->gpu, di[i].out), e->gpu->free(e->gpu, dG[i]);
    }
    free(hi), free(di), free(dG);
}

// G's singular values (fp64, k = min(rows, cols)) into s.
static void singular_values(const gm_real *G, int rows, int cols, double *s) {
    const size_t n = (size_t)rows * cols;
    double *G64 = malloc(sizeof(double) * n);
    cr_assert(G64);
    for (size_t i = 0; i < n; i++) G64[i] = G[i];
    cr_assert_eq(gm_singular_values_f64(G64, rows, cols, s), 0, "%s", gm_error());
    free(G64);
}

// The fp32 NS bar for one item: 2 sqrt(max(m, n)) eps32 amp * scale, as a largest |difference|.
static double ns_fp32_tol(const gm_ns_coeffs *set, int steps, const gm_real *G, int rows, int cols, double scale) {
    const int k = rows < cols ? rows : cols, mx = rows < cols ? cols : rows;
    double *s = malloc(sizeof(double) * k), *pred = malloc(sizeof(double) * k), *amp = malloc(sizeof(double) * k);
    cr_assert(s && pred && amp);
    singular_values(G, rows, cols, s);
    th_ns_predict(set, steps, s, k, pred, amp);
    const double tol = 2 * sqrt((double)mx) * EPS32 * th_max(amp, k) * scale;
    free(s), free(pred), free(amp);
    return tol;
}

// The SVD bar for one item: 30 max(m, n) eps32 kappa, relative (Frobenius); kappa over the first
// `rank` singular values (all when rank is 0).
static double svd_rel_tol(const gm_real *G, int rows, int cols, int rank) {
    const int k = rows < cols ? rows : cols, mx = rows < cols ? cols : rows;
    double *s = malloc(sizeof(double) * k);
    cr_assert(s);
    singular_values(G, rows, cols, s);
    const double kappa = s[0] / s[(rank ? rank : k) - 1];
    free(s);
    return LAPACK_BAR * mx * EPS32 * kappa;
}

// Largest |a - b| (infinite when a holds a non-finite value).
static double max_abs_diff(const gm_real *a, const gm_real *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = isfinite(a[i]) ? fmax(worst, fabs((double)a[i] - b[i])) : INFINITY;
    return worst;
}

// The multiply-adds of one orthogonalize call, for GM_GPU_TEST_MAX_WORK: per item of k = min(m, n),
// NS's three products per step (X X^T, A A, B X: about 2 k^2 max + k^3), the SVD's Jacobi sweeps
// as ten such products.
static double ortho_work(const ortho_shape *sh, int count, int steps) {
    double w = 0;
    for (int i = 0; i < count; i++) {
        const double k = sh[i].rows < sh[i].cols ? sh[i].rows : sh[i].cols, mx = (double)sh[i].rows * sh[i].cols / k;
        w += (2 * k * k * mx + k * k * k) * (steps ? steps : 10);
    }
    return w;
}

static gm_ortho ns_cfg(const gm_ns_coeffs *set, int steps, int bf16, gm_ns_norm_src src) {
    return (gm_ortho){.method = GM_ORTHO_NS, .coeffs = set, .steps = steps, .bf16 = bf16, .norm_src = src};
}

// Items of every kind of group: one matrix alone, equal shapes batched, a shape beside its
// transpose (one group: both run wide), single rows and columns; scales 1 and not 1.
static const ortho_shape mixed[] = {{17, 45, 1.0},  {45, 17, 1.6}, {31, 31, 1.0}, {17, 45, 2.0},
                                    {1, 23, 1.0},   {31, 31, 1.0}, {23, 1, 1.0},  {64, 192, 1.0},
                                    {192, 64, 1.7}, {31, 31, 0.5}, {64, 192, 1.0}};
#define NMIXED ((int)(sizeof mixed / sizeof mixed[0]))

Test(cuda_optim, newton_schulz_fp32_batched_matches_cpu) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    gm_real *G[NMIXED], *cpu[NMIXED], *gpu[NMIXED];
    for (int i = 0; i < NMIXED; i++) G[i] = cc_randn(&e, (size_t)mixed[i].rows * mixed[i].cols, 1.0);
    int ran = 0;
    for (int si = 0; si < gm_ns_coeffs_count(); si++) {
        const gm_ns_coeffs *set = gm_ns_coeffs_at(si);
        const int steps = 5;
        char what[96];
        snprintf(what, sizeof what, "newton-schulz fp32 %s, %d items", set->name, NMIXED);
        if (!cc_case_fits(what, ortho_work(mixed, NMIXED, steps))) continue;
        ran++;
        gm_ortho cfg = ns_cfg(set, steps, 0, GM_NS_NORM_OF_X);
        run_both(&e, &cfg, NMIXED, mixed, G, cpu, gpu);
        for (int i = 0; i < NMIXED; i++) {
            const int r = mixed[i].rows, c = mixed[i].cols;
            const double tol = ns_fp32_tol(set, steps, G[i], r, c, mixed[i].scale);
            const double worst = max_abs_diff(gpu[i], cpu[i], (size_t)r * c);
            cr_expect_leq(
                worst, tol,
                "%s fp32 item %d (%dx%d, scale %g): |GPU - CPU| = %.3g > 2 sqrt(n) eps amp = %.3g (seed %llu)",
                set->name, i, r, c, mixed[i].scale, worst, tol, (unsigned long long)e.seed);
            free(cpu[i]), free(gpu[i]);
        }
    }
    for (int i = 0; i < NMIXED; i++) free(G[i]);
    cc_expect_some_ran(ran);
}

// bf16 NS at the shapes Muon sees (attention blocks batched as q, k, v, o; the MLP matrices both
// ways) and the small mixed set, with both normalizer sources and 1, 5 and 10 steps.
Test(cuda_optim, newton_schulz_bf16_within_1_plus_3K_u_of_cpu_emulation) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    static const ortho_shape full[] = {{768, 768, 1.0}, {768, 768, 1.0},  {768, 768, 1.0},
                                       {768, 768, 1.0}, {3072, 768, 1.0}, {768, 3072, 1.0}};
    const struct {
        const ortho_shape *sh;
        int count;
    } sets[] = {{mixed, NMIXED}, {full, (int)(sizeof full / sizeof full[0])}};
    int ran = 0;
    for (size_t w = 0; w < sizeof sets / sizeof sets[0]; w++) {
        const int count = sets[w].count;
        const ortho_shape *sh = sets[w].sh;
        gm_real **G = calloc((size_t)count, sizeof *G), **cpu = calloc((size_t)count, sizeof *cpu);
        gm_real **gpu = calloc((size_t)count, sizeof *gpu), **c32 = calloc((size_t)count, sizeof *c32);
        gm_real **g32 = calloc((size_t)count, sizeof *g32);
        cr_assert(G && cpu && gpu && c32 && g32);
        for (int i = 0; i < count; i++) G[i] = cc_randn(&e, (size_t)sh[i].rows * sh[i].cols, 0.02);
        for (int si = 0; si < gm_ns_coeffs_count(); si++)
            for (int steps = 1; steps <= 10; steps += steps == 1 ? 4 : 5) {
                if (w == 1 && steps != 5) continue;  // the full shapes: the records' 5 steps only
                const gm_ns_coeffs *set = gm_ns_coeffs_at(si);
                char what[128];
                snprintf(what, sizeof what, "newton-schulz bf16 and fp32 %s K=%d, %s shapes", set->name, steps,
                         w ? "the model's" : "mixed");
                if (!cc_case_fits(what, 2 * ortho_work(sh, count, steps))) continue;
                ran++;
                const gm_ns_norm_src src = si % 2 ? GM_NS_NORM_OF_G : GM_NS_NORM_OF_X;
                gm_ortho cfg = ns_cfg(set, steps, 1, src);
                run_both(&e, &cfg, count, sh, G, cpu, gpu);
                cfg.bf16 = 0;
                run_both(&e, &cfg, count, sh, G, c32, g32);
                const double bar = (1 + 3 * steps) * U_BF16;
                for (int i = 0; i < count; i++) {
                    const size_t n = (size_t)sh[i].rows * sh[i].cols;
                    const double d = th_rel_err(gpu[i], cpu[i], n), d32 = th_rel_err(gpu[i], g32[i], n);
                    // A single row or column fails the bar's precondition (test_ns_bf16.c: Polar
                    // Express amplifies its one value's rounding 13.7-fold per step): only its
                    // output's finiteness and bf16 values are checked below.
                    const int single = sh[i].rows == 1 || sh[i].cols == 1;
                    if (!single)
                        cr_expect_leq(
                            d, bar,
                            "%s K=%d item %d (%dx%d): bf16 GPU vs CPU emulation %.4f > (1 + 3K) u = %.4f (seed %llu)",
                            set->name, steps, i, sh[i].rows, sh[i].cols, d, bar, (unsigned long long)e.seed);
                    if (!single)
                        cr_expect_leq(d32, bar,
                                      "%s K=%d item %d: GPU bf16 vs GPU fp32 %.4f > (1 + 3K) u = %.4f (seed %llu)",
                                      set->name, steps, i, d32, bar, (unsigned long long)e.seed);
                    cr_expect_gt(d32, 0,
                                 "%s K=%d item %d (%dx%d): GPU bf16 run identical to fp32: no rounding happened",
                                 set->name, steps, i, sh[i].rows, sh[i].cols);
                    if (sh[i].scale == 1.0) {
                        size_t bad = n;
                        for (size_t j = 0; j < n && bad == n; j++)
                            if (!isfinite(gpu[i][j]) || gm_round_bf16(gpu[i][j]) != gpu[i][j]) bad = j;
                        cr_expect_eq(bad, n, "%s K=%d item %d: output %zu = %.9g is not a finite bf16 value", set->name,
                                     steps, i, bad, bad < n ? (double)gpu[i][bad] : 0.0);
                    }
                    free(cpu[i]), free(gpu[i]), free(c32[i]), free(g32[i]);
                }
            }
        for (int i = 0; i < count; i++) free(G[i]);
        free(G), free(cpu), free(gpu), free(c32), free(g32);
    }
    cc_expect_some_ran(ran);
}

// ||I - Q Q^T||_1 / (k eps32) for wide Q (k, n), or ||I - Q^T Q||_1 / (k eps32) for tall Q (n, k).
static double orth_ratio(const gm_real *Q, int rows, int cols) {
    const int k = rows < cols ? rows : cols, n = rows < cols ? cols : rows, wide = rows <= cols;
    double worst = 0;
    for (int j = 0; j < k; j++) {
        double col = 0;
        for (int i = 0; i < k; i++) {
            double g = 0;
            for (int l = 0; l < n; l++)
                g += wide ? (double)Q[(size_t)i * n + l] * Q[(size_t)j * n + l]
                          : (double)Q[(size_t)l * k + i] * Q[(size_t)l * k + j];
            col += fabs((i == j) - g);
        }
        worst = fmax(worst, col);
    }
    return worst / (k * EPS32);
}

// A Gaussian (rows, cols) matrix that the rank rule keeps whole: s_min > 2 max(m, n) eps32 s_0.
// A square Gaussian n x n has s_min near x / sqrt(n) with P(x < t) ~ t, so at 768 x 768 about one
// draw in eight falls under the rule's tolerance; its polar factor then drops a direction (the
// partial isometry that svd_polar_rank_deficient checks) and ||I - Q Q^T|| ~ 1 is no rounding error.
// Such a draw is replaced, and the log says so.
static gm_real *full_rank_randn(cc_env *e, int rows, int cols) {
    const int k = rows < cols ? rows : cols, mx = rows < cols ? cols : rows;
    double *s = malloc(sizeof(double) * k);
    cr_assert(s);
    for (int draw = 1;; draw++) {
        gm_real *G = cc_randn(e, (size_t)rows * cols, 1.0);
        singular_values(G, rows, cols, s);
        const double tol = mx * EPS32 * s[0];
        if (s[k - 1] > 2 * tol) {
            free(s);
            return G;
        }
        cr_log_info("svd %dx%d: draw %d has s_min %.3g <= 2 x the rank tolerance %.3g; drawn again", rows, cols,
                    draw, s[k - 1], tol);
        cr_assert_lt(draw, 16, "svd %dx%d: 16 draws near rank-deficient (seed %llu)", rows, cols,
                     (unsigned long long)e->seed);
        free(G);
    }
}

Test(cuda_optim, svd_polar_matches_cpu_lapack_style) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    static const ortho_shape all[] = {{96, 96, 1.0}, {64, 150, 1.0}, {150, 64, 2.0},  {37, 91, 1.0},   {91, 37, 1.0},
                                      {1, 40, 1.0},  {40, 1, 1.0},   {768, 768, 1.0}, {768, 3072, 1.0}};
    enum { NALL = sizeof all / sizeof all[0] };
    ortho_shape sh[NALL];
    int count = 0;
    for (int i = 0; i < NALL; i++) {
        char what[64];
        snprintf(what, sizeof what, "svd %dx%d", all[i].rows, all[i].cols);
        if (cc_case_fits(what, ortho_work(&all[i], 1, 0))) sh[count++] = all[i];
    }
    cc_expect_some_ran(count);
    gm_real *G[NALL], *cpu[NALL], *gpu[NALL];
    for (int i = 0; i < count; i++) G[i] = full_rank_randn(&e, sh[i].rows, sh[i].cols);
    gm_ortho cfg = {.method = GM_ORTHO_SVD};
    run_both(&e, &cfg, count, sh, G, cpu, gpu);
    for (int i = 0; i < count; i++) {
        const int r = sh[i].rows, c = sh[i].cols;
        const double bar = svd_rel_tol(G[i], r, c, 0), d = th_rel_err(gpu[i], cpu[i], (size_t)r * c);
        cr_expect_leq(d, bar, "svd %dx%d: GPU vs CPU polar factor %.3g > 30 max(m,n) eps kappa = %.3g (seed %llu)", r,
                      c, d, bar, (unsigned long long)e.seed);
        if (sh[i].scale == 1.0) {
            const double ratio = orth_ratio(gpu[i], r, c);
            cr_expect_lt(ratio, LAPACK_BAR, "svd %dx%d: GPU polar factor ||I - Q Q^T||_1 / (k eps) = %.2f (seed %llu)",
                         r, c, ratio, (unsigned long long)e.seed);
        }
        free(G[i]), free(cpu[i]), free(gpu[i]);
    }
}

// Rank r < k: exactly r directions are kept (the CPU's rank rule), Q = U_r V_r^T as on the CPU.
Test(cuda_optim, svd_polar_rank_deficient) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    enum { M = 40, N = 60, K = 40, R = 7 };
    double s[K] = {0}, G64[M * N];
    for (int i = 0; i < R; i++) s[i] = 1.0 + i;
    th_with_spectrum(G64, M, N, s, e.seed);
    gm_real *G = malloc(sizeof(gm_real) * M * N), *cpu, *gpu;
    cr_assert(G);
    for (int i = 0; i < M * N; i++) G[i] = (gm_real)G64[i];
    const ortho_shape sh = {M, N, 1.0};
    gm_ortho cfg = {.method = GM_ORTHO_SVD};
    run_both(&e, &cfg, 1, &sh, &G, &cpu, &gpu);
    // kappa over the R kept values; trace(Q Q^T) = ||Q||_F^2 moves by at most 2 R times the
    // relative error (a kept noise direction would add 1).
    const double bar = svd_rel_tol(G, M, N, R);
    double tr = 0;
    for (int i = 0; i < M * N; i++) tr += (double)gpu[i] * gpu[i];
    cr_expect(fabs(tr - R) <= 2 * R * bar, "svd rank %d: trace(Q Q^T) = %.6f, want the rank (bar %.3g, seed %llu)", R,
              tr, 2 * R * bar, (unsigned long long)e.seed);
    const double d = th_rel_err(gpu, cpu, (size_t)M * N);
    cr_expect_leq(d, bar, "svd rank %d: GPU vs CPU polar factor %.3g > %.3g (seed %llu)", R, d, bar,
                  (unsigned long long)e.seed);
    free(G), free(cpu), free(gpu);
}

// A non-finite input fails the call at the next sync, naming the item; the other items are still
// computed; the error is reported once, and the backend keeps working.
Test(cuda_optim, non_finite_item_is_reported_by_name) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const int r = 33, c = 50;
    const size_t n = (size_t)r * c;
    for (int svd = 0; svd < 2; svd++) {
        gm_real *G[3], *ref[3];
        gm_ortho_item items[3];
        const char *names[3] = {"blocks.0.attn.q", "blocks.1.mlp.fc", "blocks.2.attn.o"};
        gm_ortho cfg =
            svd ? (gm_ortho){.method = GM_ORTHO_SVD} : ns_cfg(gm_ns_coeffs_find("quintic"), 5, 0, GM_NS_NORM_OF_X);
        for (int i = 0; i < 3; i++) {
            G[i] = cc_randn(&e, n, 1.0);
            ref[i] = malloc(sizeof(gm_real) * n);
            cr_assert(ref[i]);
            gm_ortho_item hi = {names[i], ref[i], G[i], r, c, 1.0};
            if (i != 1) {
                e.cpu->orthogonalize(e.cpu, &cfg, 1, &hi);
                cr_assert_eq(e.cpu->sync(e.cpu), 0, "%s", gm_error());
            }
            if (i == 1) G[i][n / 2] = (gm_real)(svd ? INFINITY : NAN);
            items[i] =
                (gm_ortho_item){names[i], cc_poisoned(&e, n), cc_to_gpu(&e, G[i], sizeof(gm_real) * n), r, c, 1.0};
        }
        e.gpu->orthogonalize(e.gpu, &cfg, 3, items);
        cr_expect_eq(gm_cuda_sync(e.gpu), -1, "%s: a non-finite input passed", svd ? "svd" : "ns");
        cr_expect(strstr(gm_error(), names[1]) && strstr(gm_error(), "non-finite"), "message: %s", gm_error());
        cr_expect_eq(gm_cuda_sync(e.gpu), 0, "the error is reported once: %s", gm_error());
        for (int i = 0; i < 3; i += 2) {
            gm_real *h = cc_from_gpu(&e, items[i].out, n);
            if (svd) {
                const double d = th_rel_err(h, ref[i], n), bar = svd_rel_tol(G[i], r, c, 0);
                cr_expect_leq(d, bar, "svd item %d beside a non-finite one: %.3g > %.3g (seed %llu)", i, d, bar,
                              (unsigned long long)e.seed);
            } else {
                const double d = max_abs_diff(h, ref[i], n), tol = ns_fp32_tol(cfg.coeffs, 5, G[i], r, c, 1.0);
                cr_expect_leq(d, tol, "ns item %d beside a non-finite one: %.3g > %.3g (seed %llu)", i, d, tol,
                              (unsigned long long)e.seed);
            }
            free(h);
        }
        for (int i = 0; i < 3; i++) {
            e.gpu->free(e.gpu, items[i].out), e.gpu->free(e.gpu, (void *)items[i].G);
            free(G[i]), free(ref[i]);
        }
    }
}

// orthogonalize (both methods, bf16 NS) and a normalized Adam step give the same bits twice.
Test(cuda_optim, repeat_bitwise) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    gm_real *G[NMIXED], *first[NMIXED], *again[NMIXED], *cpu[NMIXED];
    for (int i = 0; i < NMIXED; i++) G[i] = cc_randn(&e, (size_t)mixed[i].rows * mixed[i].cols, 1.0);
    for (int svd = 0; svd < 2; svd++) {
        gm_ortho cfg =
            svd ? (gm_ortho){.method = GM_ORTHO_SVD} : ns_cfg(gm_ns_coeffs_find("quintic"), 5, 1, GM_NS_NORM_OF_X);
        run_both(&e, &cfg, NMIXED, mixed, G, cpu, first);
        for (int i = 0; i < NMIXED; i++) free(cpu[i]);
        run_both(&e, &cfg, NMIXED, mixed, G, cpu, again);
        for (int i = 0; i < NMIXED; i++) {
            cr_expect(memcmp(first[i], again[i], sizeof(gm_real) * mixed[i].rows * mixed[i].cols) == 0,
                      "%s item %d differs between two runs (seed %llu)", svd ? "svd" : "ns bf16", i,
                      (unsigned long long)e.seed);
            free(cpu[i]), free(first[i]), free(again[i]);
        }
    }
    for (int i = 0; i < NMIXED; i++) free(G[i]);

    const size_t n = cc_capped("normalized adam", (size_t)3 << 20, 1);
    gm_real *g = cc_randn(&e, n, 1.0), *p0 = cc_randn(&e, n, 1.0), *res[2];
    gm_real *gg = cc_to_gpu(&e, g, sizeof(gm_real) * n);
    const gm_adam_args a = adam_args(1, 1e-3, 0.1, 1);
    const gm_adam_span whole = {0, 0, n};
    for (int run = 0; run < 2; run++) {
        gm_real *gp = cc_to_gpu(&e, p0, sizeof(gm_real) * n), *gm = e.gpu->alloc(e.gpu, sizeof(gm_real) * n);
        gm_real *gv = e.gpu->alloc(e.gpu, sizeof(gm_real) * n);
        cr_assert(gm && gv, "%s", gm_error());
        e.gpu->adam_update(e.gpu, gp, gg, gm, gv, 1, &whole, &a);
        res[run] = cc_from_gpu(&e, gp, n);
        e.gpu->free(e.gpu, gp), e.gpu->free(e.gpu, gm), e.gpu->free(e.gpu, gv);
    }
    cr_expect(memcmp(res[0], res[1], sizeof(gm_real) * n) == 0, "normalized adam differs between runs (seed %llu)",
              (unsigned long long)e.seed);
    e.gpu->free(e.gpu, gg);
    free(g), free(p0), free(res[0]), free(res[1]);
}
