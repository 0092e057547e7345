// Optional logit softcap z = cap*tanh(l/cap), then cross-entropy, fused with its gradient: one
// pass finds the row max and log-sum-exp, a second writes dloss/dlogits; probabilities are never
// stored.
#include <math.h>

#include "backend/cpu/cpu_ops.h"

static inline double capped(double l, double cap) { return cap > 0 ? cap * tanh(l / cap) : l; }

void gm_cpu_xent_fwd_bwd(const gm_backend *be, gm_real *losses, gm_real *dlogits, const gm_real *logits,
                         const int32_t *targets, int N, int V, double cap, double dloss_scale) {
    (void)be;
#pragma omp parallel for schedule(static) if ((size_t)N * V > GM_CPU_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const gm_real *l = logits + (size_t)n * V;
        double mx = -INFINITY;
        for (int v = 0; v < V; v++) {
            double z = capped(l[v], cap);
            mx = z > mx ? z : mx;
        }
        double sum = 0;
        for (int v = 0; v < V; v++) sum += exp(capped(l[v], cap) - mx);
        double lse = mx + log(sum);
        int tgt = targets[n];
        losses[n] = (gm_real)(lse - capped(l[tgt], cap));
        if (!dlogits) continue;
        gm_real *d = dlogits + (size_t)n * V;
        for (int v = 0; v < V; v++) {
            double z = capped(l[v], cap);
            double dz = dloss_scale * (exp(z - lse) - (v == tgt));
            // dz/dl = 1 - tanh^2 = 1 - (z/cap)^2
            d[v] = (gm_real)(cap > 0 ? dz * (1.0 - (z / cap) * (z / cap)) : dz);
        }
    }
}
