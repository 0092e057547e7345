// NorMuon's effect on an orthogonalized update, the figures of bench/ns_report's NorMuon section
// (optim/normuon_effect.h over the CPU backend's `normuon` kernel), held to what the rule implies:
// - the rescale keeps the Frobenius norm: ||N||_F = ||O||_F up to rounding;
// - after one step from the zero state v2 = (1 - beta2) mean(line^2), so every line along NorMuon's
//   axis leaves with the same norm (so does a repeated update: v2 = (1 - beta2^T) mean), while a
//   sequence of different updates leaves them unequal (the state carries the past);
// - a square polar factor (every row and column of norm 1) stays orthogonal; a rectangular one
//   (unequal norms along NorMuon's axis) leaves orthogonality by far more than rounding.
// Each check has its negative control beside it (the same figure on O itself, or on an input where
// the property must not hold).
//
// Tolerances, u = GM_REAL_EPS / 2 the unit roundoff of the kernel's precision, n the entries and
// len the length of a line; the kernel sums squares in double (relative error <= len 2^-53):
// - line norms: r_l = rsqrt(fl(w fl(mean_l))) is off by <= u/2 + u/2 + u (two roundings under the
//   root, one of the reciprocal); each entry of x r_l and of f (x r_l) is rounded once more (u each),
//   so a line's norm is off by <= 4u + len 2^-53 and two lines differ by twice that;
// - Frobenius: f = fl(||O|| / ||x r||) is off by u (+ n 2^-53 from the two sums), its product with
//   each entry by u: ||N||_F / ||O||_F - 1 <= 2u + 2 n 2^-53;
// - orthogonality of NorMuon(P) for a square polar factor P: every entry carries a relative error
//   of at most e = 7u (the cast to gm_real, r_l, the product, f, the product, and the double sums),
//   so N = s (P + P o D) with |D| <= e, ||P o D||_2 <= e ||P||_F = e sqrt(k), and
//   ||N^T N - I||_2 <= 2 (e + e sqrt(k)) + O(e^2) (s itself is 1 to within e: ||N||_F = ||P||_F).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/linalg.h"
#include "base/error.h"
#include "base/real.h"
#include "optim/muon.h"
#include "optim/normuon_effect.h"
#include "optim/ns_coeffs.h"
#include "optim/ortho_stats.h"
#include "ortho_fixtures.h"

#define BETA2 0.95  // record #43's
static const double u = GM_REAL_EPS / 2, u53 = 0x1p-53;

typedef struct {
    int rows, cols;
} shape;
static const shape shapes[] = {{96, 32}, {32, 96}, {48, 48}};  // tall (per row), wide and square (per column)

// Largest over smallest line norm along NorMuon's axis (by_row: rows) and along the other.
static double along(const gm_ortho_stats *st, int by_row) {
    return by_row ? st->row_max / st->row_min : st->col_max / st->col_min;
}

// O = Polar Express, 5 steps, bf16 emulated (record #43's orthogonalizer), of G (rows, cols).
static void polar_express(const double *G, double *O, int rows, int cols) {
    const size_t n = (size_t)rows * cols;
    float *Gf = malloc(n * 4), *Xf = malloc(n * 4);
    cr_assert(Gf && Xf);
    th_to_f32(G, Gf, (int)n);
    const gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_find("polar-express"), .steps = 5, .bf16 = 1,
                          .norm_src = GM_NS_NORM_OF_X};
    cr_assert_eq(gm_ns_f32(&cfg, Gf, Xf, rows, cols, GM_MM_BLAS), 0, "%s", gm_error());
    th_to_f64(Xf, O, (int)n);
    free(Gf), free(Xf);
}

Test(normuon_effect, keeps_the_norm_and_equalises_the_lines_after_one_step) {
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const int m = shapes[c].rows, n = shapes[c].cols, by_row = gm_muon_normuon_by_row(m, n);
        const int len = by_row ? n : m;
        const size_t mn = (size_t)m * n;
        double *G = malloc(mn * 8), *O = malloc(mn * 8);
        cr_assert(G && O);
        th_gauss_f64(G, m, n, 31 + c);
        polar_express(G, O, m, n);
        gm_polar_ref ref;
        cr_assert_eq(gm_polar_ref_init(&ref, G, m, n), 0, "%s", gm_error());
        gm_ortho_stats st_o, st_n;
        const double *seq[1] = {O};
        cr_assert_eq(gm_normuon_effect(&ref, G, seq, 1, by_row, BETA2, &st_o, &st_n, NULL), 0, "%s", gm_error());

        const double tol_f = 2 * u + 2 * (double)mn * u53, tol_l = 2 * (4 * u + len * u53);
        const double dfro = fabs(st_n.fro / st_o.fro - 1), dline = along(&st_n, by_row) - 1;
        cr_log_info("normuon_effect %dx%d (%s): | ||N||_F/||O||_F - 1 | = %.2e (tol %.2e); line norm max/min - 1 = "
                    "%.2e (tol %.2e), O's %.3f; sigma max/min %.3f -> %.3f",
                    m, n, by_row ? "rows" : "columns", dfro, tol_f, dline, tol_l, along(&st_o, by_row) - 1,
                    st_o.smax / st_o.smin, st_n.smax / st_n.smin);
        cr_expect_leq(dfro, tol_f, "%dx%d: NorMuon changed ||.||_F by %.3e (relative), above %.3e", m, n, dfro, tol_f);
        cr_expect_leq(dline, tol_l, "%dx%d: line norms after one step differ by %.3e (relative), above %.3e", m, n,
                      dline, tol_l);
        // Negative control: Polar Express's own lines are not equal, by far more than tol_l.
        cr_expect_gt(along(&st_o, by_row) - 1, 1e3 * tol_l, "%dx%d: O's line norms are already equal", m, n);
        gm_polar_ref_free(&ref);
        free(G), free(O);
    }
}

Test(normuon_effect, state_carries_over_steps) {
    const int m = 96, n = 32, by_row = gm_muon_normuon_by_row(m, n), T = 5;
    const size_t mn = (size_t)m * n;
    double *G[5], *O[5];
    for (int t = 0; t < T; t++) {
        cr_assert((G[t] = malloc(mn * 8)) && (O[t] = malloc(mn * 8)));
        th_gauss_f64(G[t], m, n, 40 + (uint64_t)t);
        polar_express(G[t], O[t], m, n);
    }
    gm_polar_ref ref;
    cr_assert_eq(gm_polar_ref_init(&ref, G[T - 1], m, n), 0, "%s", gm_error());
    // The same update T times: v2 = (1 - beta2^T) mean, proportional to the one-step state.
    const double *same[5] = {O[T - 1], O[T - 1], O[T - 1], O[T - 1], O[T - 1]};
    gm_ortho_stats st_o, st_same, st_seq;
    cr_assert_eq(gm_normuon_effect(&ref, G[T - 1], same, T, by_row, BETA2, &st_o, &st_same, NULL), 0, "%s", gm_error());
    cr_assert_eq(gm_normuon_effect(&ref, G[T - 1], (const double *const *)O, T, by_row, BETA2, &st_o, &st_seq, NULL), 0,
                 "%s", gm_error());
    // T lerps add T roundings of the state (u each, halved under the root) to r_l's error.
    const double tol_l = 2 * (4 * u + T * u / 2 + n * u53), tol_f = 2 * u + 2 * (double)mn * u53;
    cr_log_info("normuon_effect repeated update: line norm max/min - 1 = %.2e (tol %.2e); sequence: %.3f (O: %.3f)",
                along(&st_same, by_row) - 1, tol_l, along(&st_seq, by_row) - 1, along(&st_o, by_row) - 1);
    cr_expect_leq(along(&st_same, by_row) - 1, tol_l, "a repeated update's lines differ by %.3e, above %.3e",
                  along(&st_same, by_row) - 1, tol_l);
    cr_expect_leq(fabs(st_seq.fro / st_o.fro - 1), tol_f, "the sequence's last update changed ||.||_F");
    // Negative control: after different updates the state is not this update's, so its lines differ.
    cr_expect_gt(along(&st_seq, by_row) - 1, 1e3 * tol_l, "after a sequence the lines are equal: no state carried?");
    gm_polar_ref_free(&ref);
    for (int t = 0; t < T; t++) free(G[t]), free(O[t]);
}

Test(normuon_effect, polar_factor_leaves_orthogonality_unless_its_lines_are_equal) {
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const int m = shapes[c].rows, n = shapes[c].cols, k = m < n ? m : n, by_row = gm_muon_normuon_by_row(m, n);
        const size_t mn = (size_t)m * n;
        double *G = malloc(mn * 8);
        cr_assert(G);
        th_gauss_f64(G, m, n, 50 + c);
        gm_polar_ref ref;
        cr_assert_eq(gm_polar_ref_init(&ref, G, m, n), 0, "%s", gm_error());
        gm_ortho_stats st_o, st_n;
        const double *seq[1] = {ref.P};  // the exact polar factor U V^T (fp64 SVD)
        cr_assert_eq(gm_normuon_effect(&ref, G, seq, 1, by_row, BETA2, &st_o, &st_n, NULL), 0, "%s", gm_error());
        const double e = 7 * u, tol_o = 2 * (e + e * sqrt((double)k));
        cr_log_info("normuon_effect polar factor %dx%d: ||QQ^T - I||_2 %.2e -> %.2e (rounding bound %.2e); sigma max/min "
                    "%.6f -> %.4f; line norm max/min along the axis before %.4f",
                    m, n, st_o.orth_err, st_n.orth_err, tol_o, st_o.smax / st_o.smin, st_n.smax / st_n.smin,
                    along(&st_o, by_row));
        cr_expect_leq(st_o.orth_err, tol_o, "%dx%d: the SVD's polar factor is not orthogonal", m, n);
        if (m == n)  // every line of norm 1: NorMuon scales them all alike and changes nothing but rounding
            cr_expect_leq(st_n.orth_err, tol_o, "square %dx%d: NorMuon(U V^T) is %.3e from orthogonal, above %.3e", m, n,
                          st_n.orth_err, tol_o);
        else  // unequal lines along the axis: a non-uniform line scaling, far from orthogonal
            cr_expect_gt(st_n.orth_err, 1e3 * tol_o, "%dx%d: NorMuon(U V^T) is orthogonal to %.3e: no line scaling?", m,
                         n, st_n.orth_err);
        gm_polar_ref_free(&ref);
        free(G);
    }
}
