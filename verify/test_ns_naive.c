// The BLAS path (syrk/gemm) of Newton-Schulz against the plain triple-loop reference, on odd,
// wide, tall and degenerate shapes, in fp64 and fp32. Both accumulate in the working precision
// in different orders, so they agree to rounding: sqrt(n) eps times the run's amplification
// (bounded here, as in test_ns_band, by th_ns_predict's amp of G's singular values). The same for
// Gram NS (its symmetric products and Gram matrix in loops too), with th_gram_predict's amp.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "backend/cpu/linalg.h"
#include "optim/ns_coeffs.h"
#include "ortho_fixtures.h"

static void compare(const gm_ns_coeffs *set, int m, int n, int fp32, gm_ortho_method method) {
    const int gram = method == GM_ORTHO_GRAM_NS;
    const unsigned restarts = 1u << 2;
    const int k = m < n ? m : n, steps = 5;
    const size_t mn = (size_t)m * n;
    double *G = malloc(mn * 8), *Xb = malloc(mn * 8), *Xn = malloc(mn * 8);
    double *s = malloc(k * 8), *pred = malloc(k * 8), *amp = malloc(k * 8);
    float *Gf = malloc(mn * 4), *Xf = malloc(mn * 4);
    cr_assert(G && Xb && Xn && s && pred && amp && Gf && Xf);
    th_gauss_f32(Gf, m, n, 5 + m * n);
    th_to_f64(Gf, G, (int)mn);
    gm_ortho cfg = {.method = method, .coeffs = set, .steps = steps, .bf16 = 0, .norm_src = GM_NS_NORM_OF_X,
                    .gram_restarts = restarts};
    for (int naive = 0; naive < 2; naive++) {
        double *X = naive ? Xn : Xb;
        gm_mm_impl mm = naive ? GM_MM_NAIVE : GM_MM_BLAS;
        if (fp32) {
            cr_assert_eq(gram ? gm_gram_ns_f32(&cfg, Gf, Xf, m, n, mm) : gm_ns_f32(&cfg, Gf, Xf, m, n, mm), 0, "%s",
                         gm_error());
            th_to_f64(Xf, X, (int)mn);
        } else {
            cr_assert_eq(gram ? gm_gram_ns_f64(&cfg, G, X, m, n, mm) : gm_ns_f64(&cfg, G, X, m, n, mm), 0, "%s",
                         gm_error());
        }
    }
    cr_assert_eq(gm_singular_values_f64(G, m, n, s), 0, "%s", gm_error());
    if (gram && m != n)
        th_gram_predict(set, steps, restarts, s, k, pred, amp);
    else
        th_ns_predict(set, steps, s, k, pred, amp);
    const double eps = fp32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    // Each run is within sqrt(n) eps amp of the exact output in 2-norm; entries are bounded by it.
    const double tol = 2 * sqrt((double)(m > n ? m : n)) * eps * th_max(amp, k);
    double worst = 0;
    for (size_t i = 0; i < mn; i++) worst = fmax(worst, fabs(Xb[i] - Xn[i]));
    cr_expect_leq(worst, tol, "%s %s %s %dx%d: BLAS vs naive differ by %.3g > %.3g", gram ? "gram-ns" : "newton-schulz",
                  set->name, fp32 ? "fp32" : "fp64", m, n, worst, tol);
    free(G), free(Xb), free(Xn), free(s), free(pred), free(amp), free(Gf), free(Xf);
}

// 70 x 150: more than one 64-row block of the symmetric products.
static const int shapes[][2] = {{31, 31}, {17, 45}, {45, 17}, {1, 23}, {23, 1}, {2, 3}, {70, 150}, {150, 70}};

Test(ns_naive, blas_path_matches_the_triple_loop_reference) {
    for (int si = 0; si < gm_ns_coeffs_count(); si++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int fp32 = 0; fp32 < 2; fp32++)
                compare(gm_ns_coeffs_at(si), shapes[i][0], shapes[i][1], fp32, GM_ORTHO_NS);
}

Test(ns_naive, gram_blas_path_matches_the_triple_loop_reference) {
    for (int si = 0; si < gm_ns_coeffs_count(); si++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int fp32 = 0; fp32 < 2; fp32++)
                compare(gm_ns_coeffs_at(si), shapes[i][0], shapes[i][1], fp32, GM_ORTHO_GRAM_NS);
}
