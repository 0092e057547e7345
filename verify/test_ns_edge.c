// Edge inputs of both orthogonalizers: zero matrix, rank-deficient, one huge singular value,
// 1 x N and N x 1, huge but finite entries, non-finite entries (refused), bad configuration.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/linalg.h"
#include "optim/ns_coeffs.h"
#include "ortho_fixtures.h"

static gm_ortho ns_cfg(const char *set, int steps, int bf16) {
    gm_ortho c = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_find(set), .steps = steps, .bf16 = bf16, .norm_src = GM_NS_NORM_OF_X};
    return c;
}

static int all_finite(const double *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

Test(ns_edge, zero_matrix_gives_zero_without_nan) {
    enum { M = 24, N = 40 };
    double G[M * N] = {0}, X[M * N];
    float Gf[M * N] = {0}, Xf[M * N];
    for (int si = 0; si < gm_ns_coeffs_count(); si++)
        for (int bf16 = 0; bf16 < 2; bf16++) {
            gm_ortho c = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_at(si), .steps = 5, .bf16 = bf16, .norm_src = GM_NS_NORM_OF_X};
            memset(Xf, 0x7f, sizeof Xf);
            cr_assert_eq(gm_ns_f32(&c, Gf, Xf, M, N, GM_MM_BLAS), 0, "%s", gm_error());
            for (int i = 0; i < M * N; i++) cr_assert_eq(Xf[i], 0.0f, "%s bf16=%d: NS(0)[%d] = %g", c.coeffs->name, bf16, i, Xf[i]);
        }
    memset(X, 0x7f, sizeof X);
    cr_assert_eq(gm_svd_polar_f64(G, X, M, N), 0, "%s", gm_error());
    for (int i = 0; i < M * N; i++) cr_assert_eq(X[i], 0.0, "svd polar(0)[%d] = %g", i, X[i]);
    gm_ortho svd = {.method = GM_ORTHO_SVD, .coeffs = NULL, .steps = 0, .bf16 = 0, .norm_src = GM_NS_NORM_OF_X};
    gm_real Gr[M * N] = {0}, Xr[M * N];
    const gm_backend *be = gm_backend_cpu();
    gm_ortho_item item = {"zero", Xr, Gr, M, N, 1.0};
    be->orthogonalize(be, &svd, 1, &item);
    cr_assert_eq(be->sync(be), 0, "%s", gm_error());
    for (int i = 0; i < M * N; i++) cr_assert_eq(Xr[i], 0, "backend orthogonalize svd(0)[%d] != 0", i);
}

// Rank r < k: the r nonzero singular values follow the scalar map, the others stay (numerically)
// zero; the SVD path gives the partial isometry U_r V_r^T (Q Q^T Q = Q, rank r).
Test(ns_edge, rank_deficient_keeps_the_null_space_empty) {
    enum { M = 40, N = 60, K = 40, R = 7 };
    double s[K] = {0}, G[M * N], X[M * N], so[K], pred[K], amp[K];
    for (int i = 0; i < R; i++) s[i] = 1.0 + i;
    th_with_spectrum(G, M, N, s, 77);
    gm_ortho c = ns_cfg("quintic", 5, 0);
    cr_assert_eq(gm_ns_f64(&c, G, X, M, N, GM_MM_BLAS), 0, "%s", gm_error());
    cr_assert(all_finite(X, M * N));
    cr_assert_eq(gm_singular_values_f64(X, M, N, so), 0, "%s", gm_error());
    th_ns_predict(c.coeffs, 5, s, K, pred, amp);
    // G's zero singular values are ~eps * ||G|| after rounding; NS multiplies them by at most
    // a^5 = 3.4445^5 ~ 490 (slope at 0): still far below 1e-9.
    double d = th_sorted_maxdiff(so, pred, K);
    cr_expect_leq(d, sqrt(60.0) * 2.2e-16 * th_max(amp, K), "rank %d: NS singular values off the prediction by %g", R, d);
    cr_expect_lt(so[R], 1e-9, "rank %d: NS output has singular value %g beyond the rank", R, so[R]);

    double Q[M * N], QQt[M * M];
    cr_assert_eq(gm_svd_polar_f64(G, Q, M, N), 0, "%s", gm_error());
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            double acc = 0;
            for (int l = 0; l < N; l++) acc += Q[i * N + l] * Q[j * N + l];
            QQt[i * M + j] = acc;
        }
    double err = 0, tr = 0;
    for (int i = 0; i < M; i++) {
        tr += QQt[i * M + i];
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int l = 0; l < M; l++) acc += QQt[i * M + l] * Q[l * N + j];
            err = fmax(err, fabs(acc - Q[i * N + j]));
        }
    }
    cr_expect_lt(err, 1e-12, "svd polar of rank %d: max |Q Q^T Q - Q| = %g", R, err);
    cr_expect(fabs(tr - R) < 1e-10, "svd polar of rank %d: trace(Q Q^T) = %.12f, want the rank", R, tr);
}

// One singular value 1e6 times the others: after normalization the rest sit near 1e-6, where
// 5 quintic steps only multiply them by ~490. Nothing overflows; the map still predicts them.
Test(ns_edge, one_huge_singular_value_follows_the_map) {
    enum { M = 30, N = 45, K = 30 };
    double s[K], G[M * N], X[M * N], so[K], pred[K], amp[K];
    for (int i = 0; i < K; i++) s[i] = i == 0 ? 1e6 : 1.0 + 0.01 * i;
    th_with_spectrum(G, M, N, s, 9);
    for (int si = 0; si < gm_ns_coeffs_count(); si++) {
        gm_ortho c = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_at(si), .steps = 5, .bf16 = 0, .norm_src = GM_NS_NORM_OF_X};
        cr_assert_eq(gm_ns_f64(&c, G, X, M, N, GM_MM_BLAS), 0, "%s", gm_error());
        cr_assert(all_finite(X, M * N), "%s: non-finite output", c.coeffs->name);
        cr_assert_eq(gm_singular_values_f64(X, M, N, so), 0, "%s", gm_error());
        th_ns_predict(c.coeffs, 5, s, K, pred, amp);
        double d = th_sorted_maxdiff(so, pred, K);
        cr_expect_leq(d, sqrt(45.0) * 2.2e-16 * th_max(amp, K), "%s: huge-singular-value input off the map by %g",
                      c.coeffs->name, d);
        cr_expect_lt(th_min(so, K), 1e-2, "%s: small singular values should stay small, got %g", c.coeffs->name,
                     th_min(so, K));
    }
}

// A single row or column has one singular value, ||G||; its polar factor is G / ||G||.
Test(ns_edge, single_row_and_column) {
    enum { L = 50 };
    double G[L], X[L], Q[L];
    th_gauss_f64(G, 1, L, 3);
    double nrm = 0;
    for (int i = 0; i < L; i++) nrm += G[i] * G[i];
    nrm = sqrt(nrm);
    for (int tall = 0; tall < 2; tall++) {
        int m = tall ? L : 1, n = tall ? 1 : L;
        cr_assert_eq(gm_svd_polar_f64(G, Q, m, n), 0, "%s", gm_error());
        for (int i = 0; i < L; i++) cr_expect(fabs(Q[i] - G[i] / nrm) < 1e-14, "%dx%d: svd polar[%d] = %g, want %g", m, n, i, Q[i], G[i] / nrm);
        for (int si = 0; si < gm_ns_coeffs_count(); si++) {
            gm_ortho c = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_at(si), .steps = 5, .bf16 = 0, .norm_src = GM_NS_NORM_OF_X};
            cr_assert_eq(gm_ns_f64(&c, G, X, m, n, GM_MM_BLAS), 0, "%s", gm_error());
            double p = gm_ns_scalar_map(c.coeffs, 5, nrm / (c.coeffs->norm_scale * nrm + c.coeffs->norm_eps));
            for (int i = 0; i < L; i++)
                cr_expect(fabs(X[i] - p * G[i] / nrm) < 1e-13, "%s %dx%d: NS[%d] = %.15g, want p(1) G/||G|| = %.15g",
                          c.coeffs->name, m, n, i, X[i], p * G[i] / nrm);
        }
    }
}

// Entries near fp32's largest value: the norm is taken in double, so nothing overflows and the
// result is that of the unscaled matrix (NS is scale-invariant up to the tiny eps).
Test(ns_edge, huge_finite_entries_do_not_overflow) {
    enum { M = 20, N = 30 };
    float G[M * N], Gbig[M * N], X[M * N], Xbig[M * N];
    th_gauss_f32(G, M, N, 8);
    for (int i = 0; i < M * N; i++) Gbig[i] = G[i] * 0x1p100f;  // up to ~5e30: squares overflow fp32
    gm_ortho c = ns_cfg("quintic", 5, 0);
    cr_assert_eq(gm_ns_f32(&c, G, X, M, N, GM_MM_BLAS), 0, "%s", gm_error());
    cr_assert_eq(gm_ns_f32(&c, Gbig, Xbig, M, N, GM_MM_BLAS), 0, "%s", gm_error());
    for (int i = 0; i < M * N; i++)
        cr_expect(fabsf(X[i] - Xbig[i]) <= 1e-5f, "NS(2^100 G)[%d] = %g, NS(G)[%d] = %g", i, Xbig[i], i, X[i]);
}

// Non-finite input is refused with one message naming the fault and its position; out untouched.
Test(ns_edge, non_finite_input_is_refused) {
    enum { M = 6, N = 9 };
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++)
        for (int method = 0; method < 2; method++) {
            float G[M * N], X[M * N];
            th_gauss_f32(G, M, N, 1);
            G[4 * N + 7] = bad[b];
            for (int i = 0; i < M * N; i++) X[i] = 123.0f;
            gm_ortho c = ns_cfg("quintic", 5, 1);
            int rc = method ? gm_svd_polar_f32(G, X, M, N) : gm_ns_f32(&c, G, X, M, N, GM_MM_BLAS);
            cr_expect_eq(rc, -1, "%s accepted %g", method ? "svd" : "ns", bad[b]);
            cr_expect(strstr(gm_error(), "non-finite") && strstr(gm_error(), "(4, 7)"), "message: %s", gm_error());
            for (int i = 0; i < M * N; i++) cr_assert_eq(X[i], 123.0f, "output written despite the refusal");
        }
    double Gd[4] = {1, 2, NAN, 4}, Xd[4];
    gm_ortho c = ns_cfg("cubic", 3, 0);
    cr_expect_eq(gm_ns_f64(&c, Gd, Xd, 2, 2, GM_MM_BLAS), -1);
    cr_expect(strstr(gm_error(), "newton-schulz: input (2 x 2) has a non-finite entry"), "message: %s", gm_error());
}

Test(ns_edge, bad_configuration_is_refused) {
    float G[4] = {1, 2, 3, 4}, X[4];
    gm_ortho c = ns_cfg("quintic", 0, 0);
    cr_expect_eq(gm_ns_f32(&c, G, X, 2, 2, GM_MM_BLAS), -1);
    cr_expect(strstr(gm_error(), "steps must be >= 1"), "message: %s", gm_error());
    c = ns_cfg("quintic", 5, 0);
    cr_expect_eq(gm_ns_f32(&c, G, X, 0, 2, GM_MM_BLAS), -1);
    cr_expect(strstr(gm_error(), "bad shape 0 x 2"), "message: %s", gm_error());
    cr_expect_null(gm_ns_coeffs_find("septic"));
    cr_expect(strstr(gm_error(), "unknown coefficient set 'septic'"), "message: %s", gm_error());
    c.coeffs = NULL;
    cr_expect_eq(gm_ns_f32(&c, G, X, 2, 2, GM_MM_BLAS), -1);
    cr_expect(strstr(gm_error(), "no coefficient set"), "message: %s", gm_error());
}
