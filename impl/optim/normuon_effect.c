#include "optim/normuon_effect.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "base/error.h"

int gm_normuon_effect(const gm_polar_ref *ref, const double *G, const double *const *O, int T, int by_row,
                      double beta2, gm_ortho_stats *before, gm_ortho_stats *after, double *N) {
    const int rows = ref->rows, cols = ref->cols, nlines = by_row ? rows : cols;
    const size_t n = (size_t)rows * cols;
    if (T < 1) return gm_fail("normuon effect: %d updates given, need at least 1", T);
    // The CPU backend's buffers are host memory: V (rows, cols) and the state v2 (nlines), zeroed
    // as the record's second_momentum_buffer starts.
    const gm_backend *be = gm_backend_cpu();
    gm_real *V = malloc(n * sizeof *V), *v2 = calloc((size_t)nlines, sizeof *v2);
    double *out = N ? N : malloc(n * sizeof *out);
    if (!V || !v2 || !out) {
        free(V), free(v2);
        if (out != N) free(out);
        return gm_fail("normuon effect: out of memory for a %d x %d matrix", rows, cols);
    }
    for (int t = 0; t < T; t++) {
        for (size_t i = 0; i < n; i++) V[i] = (gm_real)O[t][i];
        be->normuon(be, V, v2, rows, cols, by_row, beta2);
    }
    int rc = be->sync(be);
    if (!rc) {
        for (size_t i = 0; i < n; i++) out[i] = V[i];
        rc = gm_ortho_stats_f64(ref, G, O[T - 1], before) || gm_ortho_stats_f64(ref, G, out, after) ? -1 : 0;
    }
    free(V), free(v2);
    if (out != N) free(out);
    return rc;
}
