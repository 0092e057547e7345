// Muon's momentum buffer update and the update it hands to the orthogonalizer (backend.h).
#include "backend/cpu/cpu_ops.h"

void gm_cpu_momentum(const gm_backend *be, gm_real *buf, gm_real *u, const gm_real *g, size_t n, double mu,
                     double gmul, int nesterov) {
    (void)be;
    const gm_real rmu = (gm_real)mu, rg = (gm_real)gmul;
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t j = 0; j < n; j++) {
        buf[j] = rmu * buf[j] + rg * g[j];
        if (u) u[j] = nesterov ? rg * g[j] + rmu * buf[j] : buf[j];
    }
}
