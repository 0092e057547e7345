// Muon's parameter update with decoupled, optionally cautious, weight decay (backend.h; record #43,
// modded-nanogpt records/track_1_short/2025-11-10_CautiousWD).
#include "backend/cpu/cpu_ops.h"

void gm_cpu_muon_update(const gm_backend *be, gm_real *p, const gm_real *u, size_t n, double lr, double wd,
                        int cautious) {
    (void)be;
    const gm_real rlr = (gm_real)lr, rwd = (gm_real)wd;
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t j = 0; j < n; j++) {
        const gm_real pj = p[j], uj = u[j];
        const gm_real d = !cautious || uj * pj >= 0 ? rwd * pj : 0;
        p[j] = pj - rlr * (uj + d);
    }
}
