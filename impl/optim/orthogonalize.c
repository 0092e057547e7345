#include "optim/orthogonalize.h"

#include <math.h>
#include <stddef.h>

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

int gm_orthogonalize(const gm_ortho *cfg, const gm_real *G, gm_real *out, int rows, int cols) {
#ifdef GM_FP64
    if (cfg->method == GM_ORTHO_SVD) return gm_svd_polar_f64(G, out, rows, cols);
    return gm_ns_f64(cfg, G, out, rows, cols, GM_MM_BLAS);
#else
    if (cfg->method == GM_ORTHO_SVD) return gm_svd_polar_f32(G, out, rows, cols);
    return gm_ns_f32(cfg, G, out, rows, cols, GM_MM_BLAS);
#endif
}
