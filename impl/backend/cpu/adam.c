// Adam/AdamW over one tensor (the formula in optim/adam.h), in gm_real as the reference computes
// in the parameter dtype. The gradient norm of normalize_grad is summed in fp64 in index order.
#include <math.h>

#include "backend/cpu/cpu_ops.h"

void gm_cpu_adam_update(const gm_backend *be, gm_real *p, const gm_real *g, gm_real *m, gm_real *v, size_t n,
                        const gm_adam_args *a) {
    (void)be;
    const gm_real step_size = (gm_real)a->step_size, bc2_sqrt = (gm_real)a->bc2_sqrt, eps = (gm_real)a->eps;
    const gm_real decay = (gm_real)a->decay, rb1 = (gm_real)a->beta1, rb2 = (gm_real)a->beta2;
    const gm_real one_b1 = (gm_real)(1.0 - a->beta1), one_b2 = (gm_real)(1.0 - a->beta2);
    gm_real gscale = 1;
    if (a->normalize_grad) {
        double ss = 0;
        for (size_t j = 0; j < n; j++) ss += (double)g[j] * g[j];
        gscale = (gm_real)(1.0 / (sqrt(ss) + 1e-6));
    }
    const int apply_decay = a->apply_decay;
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t j = 0; j < n; j++) {
        gm_real gj = g[j] * gscale;
        if (apply_decay) p[j] *= decay;
        m[j] = rb1 * m[j] + one_b1 * gj;
        v[j] = rb2 * v[j] + one_b2 * gj * gj;
        p[j] -= step_size * m[j] / (gm_sqrt(v[j]) / bc2_sqrt + eps);
    }
}
