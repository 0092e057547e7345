// The CPU `orthogonalize` kernel: each item through the SVD or Newton-Schulz of gm_real's
// precision, scaled; a failure (non-finite input) is recorded for the backend's sync, naming the
// item.
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/linalg.h"
#include "base/error.h"

int gm_ortho_check_input(const char *who, const void *G, int is_f64, int rows, int cols) {
    if (rows < 1 || cols < 1) return gm_fail("%s: bad shape %d x %d", who, rows, cols);
    for (size_t i = 0; i < (size_t)rows * cols; i++) {
        double v = is_f64 ? ((const double *)G)[i] : (double)((const float *)G)[i];
        if (!isfinite(v))
            return gm_fail("%s: input (%d x %d) has a non-finite entry %g at (%zu, %zu); refusing to orthogonalize",
                           who, rows, cols, v, i / (size_t)cols, i % (size_t)cols);
    }
    return 0;
}

static int orthogonalize_one(const gm_ortho *cfg, const gm_real *G, gm_real *out, int rows, int cols) {
#ifdef GM_FP64
    if (cfg->method == GM_ORTHO_SVD) return gm_svd_polar_f64(G, out, rows, cols);
    if (cfg->method == GM_ORTHO_GRAM_NS) return gm_gram_ns_f64(cfg, G, out, rows, cols, GM_MM_BLAS);
    return gm_ns_f64(cfg, G, out, rows, cols, GM_MM_BLAS);
#else
    if (cfg->method == GM_ORTHO_SVD) return gm_svd_polar_f32(G, out, rows, cols);
    if (cfg->method == GM_ORTHO_GRAM_NS) return gm_gram_ns_f32(cfg, G, out, rows, cols, GM_MM_BLAS);
    return gm_ns_f32(cfg, G, out, rows, cols, GM_MM_BLAS);
#endif
}

// NS's flops are proportional to min(rows, cols)^2 max(rows, cols).
static double cost_of(const gm_ortho_item *it) {
    const double m = it->rows < it->cols ? it->rows : it->cols;
    return m * it->rows * it->cols;
}

// The thread policy: the items run in parallel over the OpenMP threads, each item on one thread
// with single-threaded BLAS, so an item's result does not depend on the thread count or on which
// thread computes it (its arithmetic is the same calls in the same order). The harness's observe
// callback is not made for concurrent use: with it, items run one after another.
void gm_cpu_orthogonalize(const gm_backend *be, const gm_ortho *cfg, int count, const gm_ortho_item *items) {
    (void)be;
    gm_cpu_blas_single_thread();
    int *order = malloc((size_t)(count > 0 ? count : 1) * sizeof *order);
    if (!order) {
        gm_cpu_record_error("orthogonalize: out of memory for %d items", count);
        return;
    }
    // Largest first (a stable insertion sort: a step has tens of items), so that with dynamic
    // scheduling the threads finish at nearly the same time.
    for (int i = 0; i < count; i++) {
        int j = i;
        for (; j > 0 && cost_of(&items[order[j - 1]]) < cost_of(&items[i]); j--) order[j] = order[j - 1];
        order[j] = i;
    }
#pragma omp parallel for schedule(dynamic, 1) if (count > 1 && !cfg->observe)
    for (int t = 0; t < count; t++) {
        const gm_ortho_item *it = &items[order[t]];
        if (orthogonalize_one(cfg, it->G, it->out, it->rows, it->cols)) {
            gm_cpu_record_error("orthogonalize %s: %s", it->name ? it->name : "(unnamed)", gm_error());
            continue;
        }
        if (it->out_scale != 1.0) {
            const gm_real s = (gm_real)it->out_scale;
            for (size_t j = 0; j < (size_t)it->rows * it->cols; j++) it->out[j] *= s;
        }
    }
    free(order);
}
