#include "optim/ortho_stats.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "backend/cpu/linalg.h"

int gm_polar_ref_init(gm_polar_ref *ref, const double *G, int rows, int cols) {
    memset(ref, 0, sizeof *ref);
    ref->rows = rows, ref->cols = cols, ref->k = rows < cols ? rows : cols;
    ref->P = malloc((size_t)rows * cols * sizeof(double));
    ref->s = malloc((size_t)ref->k * sizeof(double));
    if (!ref->P || !ref->s) {
        gm_polar_ref_free(ref);
        return gm_fail("polar reference: out of memory for a %d x %d matrix", rows, cols);
    }
    if (gm_svd_polar_f64(G, ref->P, rows, cols) || gm_singular_values_f64(G, rows, cols, ref->s)) {
        gm_polar_ref_free(ref);
        return -1;
    }
    for (int i = 0; i < ref->k; i++) ref->nuclear += ref->s[i];
    return 0;
}

void gm_polar_ref_free(gm_polar_ref *ref) {
    free(ref->P), free(ref->s);
    ref->P = ref->s = NULL;
}

// Smallest and largest Euclidean norm of Q's rows (by_row) or columns.
static void line_norm_range(const double *Q, int rows, int cols, int by_row, double *lo, double *hi) {
    const int nlines = by_row ? rows : cols, len = by_row ? cols : rows;
    const size_t step = by_row ? 1 : (size_t)cols, next = by_row ? (size_t)cols : 1;
    *lo = INFINITY, *hi = 0;
    for (int l = 0; l < nlines; l++) {
        double s = 0;
        for (int j = 0; j < len; j++) s += Q[l * next + j * step] * Q[l * next + j * step];
        *lo = fmin(*lo, sqrt(s)), *hi = fmax(*hi, sqrt(s));
    }
}

int gm_ortho_stats_f64(const gm_polar_ref *ref, const double *G, const double *Q, gm_ortho_stats *st) {
    const int rows = ref->rows, cols = ref->cols, k = ref->k;
    const size_t n = (size_t)rows * cols;
    double diff2 = 0, p2 = 0, inner = 0, q2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = Q[i] - ref->P[i];
        diff2 += d * d, p2 += ref->P[i] * ref->P[i], inner += G[i] * Q[i], q2 += Q[i] * Q[i];
    }
    line_norm_range(Q, rows, cols, 1, &st->row_min, &st->row_max);
    line_norm_range(Q, rows, cols, 0, &st->col_min, &st->col_max);
    st->fro = sqrt(q2);
    // Gram on the small side: Q Q^T (rows, rows) when wide, Q^T Q (cols, cols) when tall.
    double *W = malloc((size_t)k * k * sizeof(double)), *lam = malloc((size_t)k * sizeof(double));
    if (!W || !lam) {
        free(W), free(lam);
        return gm_fail("ortho stats: out of memory for a %d x %d matrix", rows, cols);
    }
    if (rows <= cols)
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, k, cols, 1.0, Q, cols, 0.0, W, k);
    else
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, k, rows, 1.0, Q, cols, 0.0, W, k);
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', k, W, k, lam);
    free(W);
    if (info) {
        free(lam);
        return gm_fail("ortho stats: dsyevd failed (info %d) on a %d x %d Gram matrix", (int)info, k, k);
    }
    // lam ascending; clamp the tiny negative eigenvalues rounding can give a singular Q.
    double smin = sqrt(fmax(lam[0], 0)), smax = sqrt(fmax(lam[k - 1], 0)), orth = 0;
    for (int i = 0; i < k; i++) orth = fmax(orth, fabs(lam[i] - 1));
    free(lam);
    st->polar_err = sqrt(diff2) / sqrt(p2 > 0 ? p2 : 1);
    st->smin = smin, st->smax = smax, st->orth_err = orth;
    st->dual_gap = ref->nuclear > 0 ? (ref->nuclear - inner) / ref->nuclear : 0;
    st->bound_viol = fmax(smax - 1, 0);
    return 0;
}
