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
    return gm_ns_f64(cfg, G, out, rows, cols, GM_MM_BLAS);
#else
    if (cfg->method == GM_ORTHO_SVD) return gm_svd_polar_f32(G, out, rows, cols);
    return gm_ns_f32(cfg, G, out, rows, cols, GM_MM_BLAS);
#endif
}

void gm_cpu_orthogonalize(const gm_backend *be, const gm_ortho *cfg, int count, const gm_ortho_item *items) {
    (void)be;
    gm_cpu_blas_single_thread();
    for (int i = 0; i < count; i++) {
        const gm_ortho_item *it = &items[i];
        if (orthogonalize_one(cfg, it->G, it->out, it->rows, it->cols)) {
            gm_cpu_record_error("orthogonalize %s: %s", it->name ? it->name : "(unnamed)", gm_error());
            continue;
        }
        if (it->out_scale != 1.0) {
            const gm_real s = (gm_real)it->out_scale;
            for (size_t j = 0; j < (size_t)it->rows * it->cols; j++) it->out[j] *= s;
        }
    }
}
