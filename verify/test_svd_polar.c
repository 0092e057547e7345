// The SVD reference path, checked LAPACK-style (residuals scaled by size and the precision's eps,
// bar 30, as LAPACK's xGESDD tests do): U and V orthonormal, A = U S V^T reconstructed, and the
// polar factor Q = U V^T orthonormal on its small side; in fp64 and in fp32.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "backend/cpu/linalg.h"
#include "optim/ns_coeffs.h"
#include "ortho_fixtures.h"

#define LAPACK_BAR 30.0

// ||I - M^T M||_1 / (k eps) for M (n, k) (trans = 0) or ||I - M M^T||_1 / (k eps) for M (k, n).
static double orth_ratio(const double *M, int n, int k, int rows_are_vectors, double eps) {
    double worst = 0;
    for (int j = 0; j < k; j++) {
        double col = 0;  // 1-norm: largest column sum of |I - Gram|
        for (int i = 0; i < k; i++) {
            double g = 0;
            for (int l = 0; l < n; l++)
                g += rows_are_vectors ? M[(size_t)i * n + l] * M[(size_t)j * n + l]
                                      : M[(size_t)l * k + i] * M[(size_t)l * k + j];
            col += fabs((i == j) - g);
        }
        worst = fmax(worst, col);
    }
    return worst / (k * eps);
}

static double norm1(const double *A, int m, int n) {
    double worst = 0;
    for (int j = 0; j < n; j++) {
        double col = 0;
        for (int i = 0; i < m; i++) col += fabs(A[(size_t)i * n + j]);
        worst = fmax(worst, col);
    }
    return worst;
}

// Run the fp64 or fp32 SVD of one Gaussian matrix and check the three LAPACK-style ratios.
static void check_shape(int m, int n, int fp32) {
    const int k = m < n ? m : n;
    const double eps = fp32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    const size_t mn = (size_t)m * n;
    double *A = malloc(mn * 8), *U = malloc((size_t)m * k * 8), *s = malloc((size_t)k * 8);
    double *Vt = malloc((size_t)k * n * 8), *Q = malloc(mn * 8);
    float *Af = malloc(mn * 4), *Uf = malloc((size_t)m * k * 4), *sf = malloc((size_t)k * 4);
    float *Vtf = malloc((size_t)k * n * 4), *Qf = malloc(mn * 4);
    cr_assert(A && U && s && Vt && Q && Af && Uf && sf && Vtf && Qf);
    th_gauss_f32(Af, m, n, 100 + m * 7 + n);
    th_to_f64(Af, A, (int)mn);
    if (fp32) {
        cr_assert_eq(gm_svd_f32(Af, m, n, Uf, sf, Vtf), 0, "%s", gm_error());
        cr_assert_eq(gm_svd_polar_f32(Af, Qf, m, n), 0, "%s", gm_error());
        th_to_f64(Uf, U, m * k), th_to_f64(sf, s, k), th_to_f64(Vtf, Vt, k * n), th_to_f64(Qf, Q, (int)mn);
    } else {
        cr_assert_eq(gm_svd_f64(A, m, n, U, s, Vt), 0, "%s", gm_error());
        cr_assert_eq(gm_svd_polar_f64(A, Q, m, n), 0, "%s", gm_error());
    }
    const char *p = fp32 ? "fp32" : "fp64";
    double ru = orth_ratio(U, m, k, 0, eps), rv = orth_ratio(Vt, n, k, 1, eps);
    cr_expect_lt(ru, LAPACK_BAR, "%s %dx%d: ||I - U^T U||_1 / (k eps) = %.2f", p, m, n, ru);
    cr_expect_lt(rv, LAPACK_BAR, "%s %dx%d: ||I - V^T V||_1 / (k eps) = %.2f", p, m, n, rv);
    // ||A - U S V^T||_1 / (||A||_1 max(m, n) eps), the product formed in fp64.
    double *R = malloc(mn * 8);
    cr_assert(R);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int l = 0; l < k; l++) acc += U[(size_t)i * k + l] * s[l] * Vt[(size_t)l * n + j];
            R[(size_t)i * n + j] = A[(size_t)i * n + j] - acc;
        }
    double rr = norm1(R, m, n) / (norm1(A, m, n) * (m > n ? m : n) * eps);
    cr_expect_lt(rr, LAPACK_BAR, "%s %dx%d: ||A - U S V^T||_1 / (||A||_1 max(m,n) eps) = %.2f", p, m, n, rr);
    for (int i = 1; i < k; i++) cr_expect_geq(s[i - 1], s[i], "%s %dx%d: singular values not descending", p, m, n);
    // Q (m, n): orthonormal rows when wide, orthonormal columns when tall.
    double rq = m <= n ? orth_ratio(Q, n, k, 1, eps) : orth_ratio(Q, m, k, 0, eps);
    cr_expect_lt(rq, LAPACK_BAR, "%s %dx%d: polar factor ||I - Q^T Q||_1 / (k eps) = %.2f", p, m, n, rq);
    free(A), free(U), free(s), free(Vt), free(Q), free(Af), free(Uf), free(sf), free(Vtf), free(Qf), free(R);
}

static const int shapes[][2] = {{96, 96}, {64, 150}, {150, 64}, {37, 91}, {91, 37}, {1, 40}, {40, 1}, {128, 128}};

Test(svd_polar, fp64_lapack_ratios_below_30) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_shape(shapes[i][0], shapes[i][1], 0);
}

Test(svd_polar, fp32_lapack_ratios_below_30) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_shape(shapes[i][0], shapes[i][1], 1);
}

// The polar factor is the orthogonal matrix nearest to G, and <G, Q> = ||G||_* (the nuclear norm):
// a property of U V^T that does not go through the SVD's own output.
Test(svd_polar, polar_factor_attains_the_nuclear_norm) {
    const int m = 50, n = 70, k = 50;
    double *G = malloc((size_t)m * n * 8), *Q = malloc((size_t)m * n * 8), s[50];
    cr_assert(G && Q);
    for (int i = 0; i < k; i++) s[i] = 1.0 + i;  // known singular values: ||G||_* = 1275
    th_with_spectrum(G, m, n, s, 5);
    cr_assert_eq(gm_svd_polar_f64(G, Q, m, n), 0, "%s", gm_error());
    double inner = 0;
    for (int i = 0; i < m * n; i++) inner += G[i] * Q[i];
    cr_expect(fabs(inner - 1275.0) < 1e-9 * 1275.0, "<G, Q> = %.15g, want ||G||_* = 1275", inner);
    free(G), free(Q);
}
