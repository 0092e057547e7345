// Newton-Schulz acts on singular values only: NS(G) = U p(S) V^T, p the composition of the set's
// polynomials after normalization. So the singular values of the output, its distance to the
// polar factor U V^T and ||X X^T - I||_2 are all predicted by iterating the scalar map on G's
// singular values (computed here from G's fp64 SVD). The output must match that prediction up
// to the rounding errors of the run: e * amp, where amp is the first-order sensitivity of each
// value (th_ns_predict) and e the relative error of one product in 2-norm, sqrt(n) eps for a
// length-n accumulation in precision eps (the probabilistic bound of Higham and Mary, SIAM J.
// Sci. Comput. 41, 2019, the typical rather than worst-case sqrt(n) growth).
// Gram NS (gram-ns) is the same map in exact arithmetic and is held to it the same way, with the
// sensitivity of its own iteration on the Gram matrix (th_gram_predict; a square input runs NS's
// iteration and keeps th_ns_predict's), with no restart, Dao-AILab's one restart before step 2,
// and a restart before every step.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "backend/cpu/linalg.h"
#include "optim/ns_coeffs.h"
#include "optim/ortho_stats.h"
#include "ortho_fixtures.h"

typedef struct {
    int rows, cols;
    int log_spectrum;  // 0: Gaussian entries; 1: singular values log-spaced over [1e-3, 1]
} band_case;

static void check_band(const band_case *bc, const gm_ns_coeffs *set, int steps, int fp32, gm_ortho_method method,
                       unsigned restarts) {
    const int gram = method == GM_ORTHO_GRAM_NS;
    const int m = bc->rows, n = bc->cols, k = m < n ? m : n;
    const size_t mn = (size_t)m * n;
    double *G = malloc(mn * 8), *X = malloc(mn * 8), *s = malloc(k * 8), *so = malloc(k * 8);
    double *pred = malloc(k * 8), *amp = malloc(k * 8);
    float *Gf = malloc(mn * 4), *Xf = malloc(mn * 4);
    cr_assert(G && X && s && so && pred && amp && Gf && Xf);
    if (bc->log_spectrum) {
        for (int i = 0; i < k; i++) s[i] = k > 1 ? pow(10.0, -3.0 * i / (k - 1)) : 1.0;
        th_with_spectrum(G, m, n, s, 11);
    } else {
        th_gauss_f64(G, m, n, 12 + m + n);
    }
    // The fp32 run sees G rounded to fp32; predict from exactly that matrix.
    th_to_f32(G, Gf, (int)mn);
    if (fp32) th_to_f64(Gf, G, (int)mn);
    cr_assert_eq(gm_singular_values_f64(G, m, n, s), 0, "%s", gm_error());
    if (gram && m != n)
        th_gram_predict(set, steps, restarts, s, k, pred, amp);
    else
        th_ns_predict(set, steps, s, k, pred, amp);

    gm_ortho cfg = {.method = method, .coeffs = set, .steps = steps, .bf16 = 0, .norm_src = GM_NS_NORM_OF_X,
                    .gram_restarts = restarts};
    if (fp32) {
        int rc = gram ? gm_gram_ns_f32(&cfg, Gf, Xf, m, n, GM_MM_BLAS) : gm_ns_f32(&cfg, Gf, Xf, m, n, GM_MM_BLAS);
        cr_assert_eq(rc, 0, "%s", gm_error());
        th_to_f64(Xf, X, (int)mn);
    } else {
        int rc = gram ? gm_gram_ns_f64(&cfg, G, X, m, n, GM_MM_BLAS) : gm_ns_f64(&cfg, G, X, m, n, GM_MM_BLAS);
        cr_assert_eq(rc, 0, "%s", gm_error());
    }
    cr_assert_eq(gm_singular_values_f64(X, m, n, so), 0, "%s", gm_error());
    const double eps = fp32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    const double tol = sqrt((double)(m > n ? m : n)) * eps * th_max(amp, k);
    const char *what = bc->log_spectrum ? "log-spectrum" : "gaussian";
    char p[64];
    snprintf(p, sizeof p, "%s %s restarts 0x%x", gram ? "gram-ns" : "newton-schulz", fp32 ? "fp32" : "fp64", restarts);
    double d = th_sorted_maxdiff(so, pred, k);
    cr_expect_leq(d, tol,
                  "%s %s %dx%d %s K=%d: singular values off the predicted ones by %.3g > %.3g "
                  "(measured [%.6f, %.6f], predicted [%.6f, %.6f])",
                  set->name, p, m, n, what, steps, d, tol, th_min(so, k), th_max(so, k), th_min(pred, k),
                  th_max(pred, k));

    // Polar error and ||X X^T - I||_2 from the same prediction: U (p(S) - I) V^T and max |p^2 - 1|.
    gm_polar_ref ref;
    cr_assert_eq(gm_polar_ref_init(&ref, G, m, n), 0, "%s", gm_error());
    gm_ortho_stats st;
    cr_assert_eq(gm_ortho_stats_f64(&ref, G, X, &st), 0, "%s", gm_error());
    double e2 = 0, orth = 0;
    for (int i = 0; i < k; i++) e2 += (pred[i] - 1) * (pred[i] - 1), orth = fmax(orth, fabs(pred[i] * pred[i] - 1));
    double perr = sqrt(e2 / k);
    cr_expect(fabs(st.polar_err - perr) <= tol, "%s %s %dx%d %s K=%d: polar error %.6g, predicted %.6g", set->name, p,
              m, n, what, steps, st.polar_err, perr);
    cr_expect(fabs(st.orth_err - orth) <= 3 * tol, "%s %s %dx%d %s K=%d: ||XX^T - I||_2 %.6g, predicted %.6g",
              set->name, p, m, n, what, steps, st.orth_err, orth);
    gm_polar_ref_free(&ref);
    free(G), free(X), free(s), free(so), free(pred), free(amp), free(Gf), free(Xf);
}

static const band_case cases[] = {
    {96, 96, 0}, {80, 200, 0}, {200, 80, 0}, {33, 77, 0}, {77, 33, 1}, {64, 64, 1}, {1, 50, 0}, {50, 1, 0},
};
static const int step_counts[] = {1, 5, 10};

static void check_all(int fp32, gm_ortho_method method, unsigned restarts) {
    for (int si = 0; si < gm_ns_coeffs_count(); si++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (size_t ki = 0; ki < sizeof step_counts / sizeof step_counts[0]; ki++)
                check_band(&cases[ci], gm_ns_coeffs_at(si), step_counts[ki], fp32, method, restarts);
}

Test(ns_band, fp64_singular_values_follow_the_scalar_map) { check_all(0, GM_ORTHO_NS, 0); }
Test(ns_band, fp32_singular_values_follow_the_scalar_map) { check_all(1, GM_ORTHO_NS, 0); }

static const unsigned gram_restarts[] = {0, 1u << 2, ~1u};  // never, before step 2, before every step
Test(ns_band, gram_fp64_singular_values_follow_the_scalar_map) {
    for (int r = 0; r < 3; r++) check_all(0, GM_ORTHO_GRAM_NS, gram_restarts[r]);
}
Test(ns_band, gram_fp32_singular_values_follow_the_scalar_map) {
    for (int r = 0; r < 3; r++) check_all(1, GM_ORTHO_GRAM_NS, gram_restarts[r]);
}
