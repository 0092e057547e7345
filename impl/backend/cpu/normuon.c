// NorMuon's per-line second-moment normalization of an orthogonalized update (backend.h; record #43,
// modded-nanogpt records/track_1_short/2025-11-10_CautiousWD). One pass per line (a row or a
// column of V (rows, cols)) does the line's sum of squares, its state's EMA, the scaling and the
// scaled line's sum of squares; the lines run in parallel, each line's sums in index order, and the
// two Frobenius norms are the lines' sums added in line order afterwards, so the result does not
// depend on the thread count. The CUDA kernel runs the same per-line statements.
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"

void gm_cpu_normuon(const gm_backend *be, gm_real *V, gm_real *v2, int rows, int cols, int by_row, double beta2) {
    (void)be;
    const int nlines = by_row ? rows : cols, len = by_row ? cols : rows;
    // stride between a line's elements and between lines
    const size_t step = by_row ? 1 : (size_t)cols, next = by_row ? (size_t)cols : 1;
    double *ss = malloc(2 * (size_t)(nlines > 0 ? nlines : 1) * sizeof *ss);  // before, after
    if (!ss) {
        gm_cpu_record_error("normuon: out of host memory for %d lines", nlines);
        return;
    }
    const gm_real w = (gm_real)(1.0 - beta2);
#pragma omp parallel for schedule(static) if ((size_t)rows * cols > GM_CPU_PAR_MIN)
    for (int l = 0; l < nlines; l++) {
        gm_real *x = V + (size_t)l * next;
        double s = 0, t = 0;
        for (int j = 0; j < len; j++) s += (double)x[j * step] * x[j * step];
        const gm_real mean = (gm_real)(s / len);
        v2[l] = v2[l] + w * (mean - v2[l]);  // torch.lerp's formula for a weight below 1/2
        const gm_real r = (gm_real)(1.0 / sqrt(fmax((double)v2[l], 1e-10)));
        for (int j = 0; j < len; j++) {
            x[j * step] *= r;
            t += (double)x[j * step] * x[j * step];
        }
        ss[l] = s, ss[nlines + l] = t;
    }
    double before = 0, after = 0;
    for (int l = 0; l < nlines; l++) before += ss[l], after += ss[nlines + l];
    const gm_real f = (gm_real)(sqrt(before) / fmax(sqrt(after), 1e-10));
    const size_t n = (size_t)rows * cols;
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) V[i] *= f;
    free(ss);
}
