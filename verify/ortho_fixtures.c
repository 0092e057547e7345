#include "ortho_fixtures.h"

#include <cblas.h>
#include <criterion/criterion.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "backend/cpu/linalg.h"
#include "optim/ns_coeffs.h"

void th_gauss_f64(double *G, int rows, int cols, uint64_t seed) {
    for (size_t i = 0; i < (size_t)rows * cols; i++) G[i] = gm_rng_normal(seed, 0, i);
}

void th_gauss_f32(float *G, int rows, int cols, uint64_t seed) {
    for (size_t i = 0; i < (size_t)rows * cols; i++) G[i] = gm_rng_normal(seed, 0, i);
}

void th_to_f32(const double *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = (float)x[i];
}

void th_to_f64(const float *x, double *y, int n) {
    for (int i = 0; i < n; i++) y[i] = x[i];
}

// Q (n, k), orthonormal columns: the Q factor of a Gaussian (n, k) matrix.
static void random_orthonormal(double *Q, int n, int k, uint64_t seed) {
    double *tau = malloc((size_t)k * sizeof(double));
    if (!tau) abort();
    th_gauss_f64(Q, n, k, seed);
    if (LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, n, k, Q, k, tau) || LAPACKE_dorgqr(LAPACK_ROW_MAJOR, n, k, k, Q, k, tau))
        abort();
    free(tau);
}

void th_with_spectrum(double *G, int rows, int cols, const double *s, uint64_t seed) {
    int k = rows < cols ? rows : cols;
    double *U = malloc((size_t)rows * k * sizeof(double)), *V = malloc((size_t)cols * k * sizeof(double));
    if (!U || !V) abort();
    random_orthonormal(U, rows, k, seed * 2 + 1);
    random_orthonormal(V, cols, k, seed * 2 + 2);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < k; j++) U[(size_t)i * k + j] *= s[j];
    // G (rows, cols) = (U diag(s)) (rows, k) * V^T (k, cols)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, k, 1.0, U, k, V, k, 0.0, G, cols);
    free(U), free(V);
}

static double poly(const double *t, double x) { return x * (t[0] + x * x * (t[1] + x * x * t[2])); }
static double dpoly(const double *t, double x) { return t[0] + x * x * (3 * t[1] + x * x * 5 * t[2]); }
static double poly_abs(const double *t, double x) {
    return x * (fabs(t[0]) + x * x * (fabs(t[1]) + x * x * fabs(t[2])));
}

void th_ns_predict(const gm_ns_coeffs *set, int steps, const double *s, int k, double *pred, double *amp) {
    double ss = 0;
    for (int i = 0; i < k; i++) ss += s[i] * s[i];
    const double denom = set->norm_scale * sqrt(ss) + set->norm_eps;
    double *x = malloc((size_t)k * sizeof(double));
    if (!x) abort();
    for (int i = 0; i < k; i++) x[i] = s[i] / denom;
    // Error injected by the roundings before step 0: the normalized input, size ||X_0||_2.
    double xnorm = 0;
    for (int i = 0; i < k; i++) xnorm = fmax(xnorm, fabs(x[i]));
    for (int i = 0; i < k; i++) amp[i] = xnorm;
    for (int step = 0; step < steps; step++) {
        const double *t = gm_ns_triple(set, step);
        // A = X X^T and B = c A A + b A err by about ||X||^2 and (|b| + |c| ||X||^2) ||X||^2; times
        // X they move the new X by ptilde(||X||) - |a| ||X||, and rounding the new X adds ||p(X)||,
        // which ptilde also bounds: 2 ptilde in all, rounded up to 3 ptilde for the three roundings.
        double inject = 3 * poly_abs(t, xnorm), next = 0;
        for (int i = 0; i < k; i++) {
            amp[i] = amp[i] * fabs(dpoly(t, x[i])) + inject;
            x[i] = poly(t, x[i]);
            next = fmax(next, fabs(x[i]));
        }
        xnorm = next;
    }
    for (int i = 0; i < k; i++) pred[i] = fabs(x[i]);
    free(x);
}

// One singular value's path through Gram NS (gram_newton_schulz.inc) as scalars: x the base
// iterate's value, lam = x^2 R's eigenvalue, P Q's, z Z's. Every produced quantity is a "site":
// with tr->o1 set, the run records per site the largest |operand 1|, |operand 2| and |result|
// over the values it is run on; with tr->target = s it adds tr->delta to site s's result.
#define GRAM_MAX_SITES 512
typedef struct {
    int n, target;
    double delta;
    double *o1, *o2, *r;  // (GRAM_MAX_SITES) or NULL
} gram_trace;

static double gram_site(gram_trace *tr, double v, double op1, double op2) {
    const int s = tr->n++;
    if (s >= GRAM_MAX_SITES) abort();
    if (tr->o1) tr->o1[s] = fmax(tr->o1[s], fabs(op1)), tr->o2[s] = fmax(tr->o2[s], fabs(op2)), tr->r[s] = fmax(tr->r[s], fabs(v));
    return s == tr->target ? v + tr->delta : v;
}

static double gram_scalar(const gm_ns_coeffs *set, int steps, unsigned restarts, double x, gram_trace *tr) {
    tr->n = 0;
    double xb = gram_site(tr, x, 0, 0);  // the rounded input
    double lam = gram_site(tr, xb * xb, xb, xb), P = 1;
    int fresh = 1;
    for (int k = 0; k < steps; k++) {
        const double *t = gm_ns_triple(set, k);
        if (k > 0 && (restarts >> k & 1u)) {
            xb = gram_site(tr, P * xb, P, xb);
            lam = gram_site(tr, xb * xb, xb, xb);
            fresh = 1;
        }
        const double z = gram_site(tr, t[1] * lam + t[2] * lam * lam, lam, t[2] * lam), f = t[0] + z;
        P = fresh ? gram_site(tr, f, 0, 0) : gram_site(tr, P * f, P, z);
        fresh = 0;
        if (k + 1 < steps && !(restarts >> (k + 1) & 1u)) {
            const double rz = gram_site(tr, lam * f, lam, z);
            lam = gram_site(tr, f * rz, z, rz);
        }
    }
    return gram_site(tr, P * xb, P, xb);
}

void th_gram_predict(const gm_ns_coeffs *set, int steps, unsigned restarts, const double *s, int k, double *pred,
                     double *amp) {
    double ss = 0;
    for (int i = 0; i < k; i++) ss += s[i] * s[i];
    const double denom = set->norm_scale * sqrt(ss) + set->norm_eps;
    double o1[GRAM_MAX_SITES] = {0}, o2[GRAM_MAX_SITES] = {0}, r[GRAM_MAX_SITES] = {0};
    gram_trace rec = {.target = -1, .o1 = o1, .o2 = o2, .r = r};
    for (int i = 0; i < k; i++) pred[i] = fabs(gram_scalar(set, steps, restarts, s[i] / denom, &rec));
    const int sites = rec.n;
    for (int i = 0; i < k; i++) {
        amp[i] = 0;
        for (int st = 0; st < sites; st++) {
            // d out / d (site's result) by central differences: the path is a polynomial in it.
            const double h = 1e-6 * fmax(r[st], 1e-30);
            gram_trace up = {.target = st, .delta = h}, down = {.target = st, .delta = -h};
            const double d = (gram_scalar(set, steps, restarts, s[i] / denom, &up) -
                              gram_scalar(set, steps, restarts, s[i] / denom, &down)) / (2 * h);
            amp[i] += fabs(d) * (o1[st] * o2[st] + r[st]);  // the product's error, then its rounding
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double th_sorted_maxdiff(const double *a, const double *b, int k) {
    double *sa = malloc((size_t)k * sizeof(double)), *sb = malloc((size_t)k * sizeof(double));
    if (!sa || !sb) abort();
    memcpy(sa, a, (size_t)k * sizeof(double)), memcpy(sb, b, (size_t)k * sizeof(double));
    qsort(sa, (size_t)k, sizeof(double), cmp_double), qsort(sb, (size_t)k, sizeof(double), cmp_double);
    double d = 0;
    for (int i = 0; i < k; i++) d = fmax(d, fabs(sa[i] - sb[i]));
    free(sa), free(sb);
    return d;
}

double th_max(const double *x, int k) {
    double m = x[0];
    for (int i = 1; i < k; i++) m = fmax(m, x[i]);
    return m;
}

double th_min(const double *x, int k) {
    double m = x[0];
    for (int i = 1; i < k; i++) m = fmin(m, x[i]);
    return m;
}

void th_check_quintic_band_f32(const float *G, int m, int n, const char *label) {
    const int k = m < n ? m : n, steps = 5;
    const size_t mn = (size_t)m * n;
    const gm_ns_coeffs *set = gm_ns_coeffs_find("quintic");
    float *X = malloc(mn * 4);
    double *Gd = malloc(mn * 8), *s = malloc(k * 8), *so = malloc(k * 8), *pred = malloc(k * 8), *amp = malloc(k * 8);
    cr_assert(X && Gd && s && so && pred && amp);
    gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = set, .steps = steps, .norm_src = GM_NS_NORM_OF_X};
    cr_assert_eq(gm_ns_f32(&cfg, G, X, m, n, GM_MM_BLAS), 0, "%s: %s", label, gm_error());
    th_to_f64(G, Gd, (int)mn);
    cr_assert_eq(gm_singular_values_f64(Gd, m, n, s), 0, "%s: %s", label, gm_error());
    th_ns_predict(set, steps, s, k, pred, amp);
    th_to_f64(X, Gd, (int)mn);
    cr_assert_eq(gm_singular_values_f64(Gd, m, n, so), 0, "%s: %s", label, gm_error());
    double d = th_sorted_maxdiff(so, pred, k);
    double tol = sqrt((double)(m > n ? m : n)) * 1.1920928955078125e-07 * th_max(amp, k);
    cr_expect_leq(d, tol, "%s: quintic fp32 singular values [%.5f, %.5f] off the predicted [%.5f, %.5f] by %.3g > %.3g",
                  label, th_min(so, k), th_max(so, k), th_min(pred, k), th_max(pred, k), d, tol);
    free(X), free(Gd), free(s), free(so), free(pred), free(amp);
}
