// Optional logit softcap z = cap*tanh(l/cap), then cross-entropy, fused with its gradient.
// Per row: pass 1 evaluates tanh once per logit, keeps z in a per-thread scratch row and finds
// the max; pass 2 sums exp(z - max) and parks the exponentials in the output row; pass 3 turns
// them into dloss/dlogits. Probabilities are never stored beyond the row.
//
// fp32 uses the vectorizable exp/tanh of fastmath.h; fp64 keeps libm's.
// The exp/tanh loops vectorize because the build has -fno-trapping-math (Makefile: why).
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/fastmath.h"

void gm_cpu_xent_fwd_bwd(const gm_backend *be, gm_real *losses, gm_actval *dlogits_act, const gm_actval *logits_act,
                         const int32_t *targets, int N, int V, double cap, double dloss_scale) {
    gm_real *dlogits = gm_as_real(dlogits_act);
    const gm_real *logits = gm_as_real(logits_act);
    (void)be;
#pragma omp parallel if ((size_t)N * V > GM_CPU_PAR_MIN)
    {
        gm_real *zrow = malloc(sizeof(gm_real) * (size_t)V);
        gm_real *erow = dlogits ? NULL : malloc(sizeof(gm_real) * (size_t)V);
        const gm_real rcap = cap > 0 ? (gm_real)(1.0 / cap) : 0, fcap = (gm_real)cap;
        const gm_real scl = (gm_real)dloss_scale;
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++) {
            const gm_real *l = logits + (size_t)n * V;
            gm_real mx = -INFINITY;
            if (cap > 0) {
#pragma omp simd reduction(max : mx)
                for (int v = 0; v < V; v++) {
                    gm_real z = fcap * gm_ftanh(l[v] * rcap);
                    zrow[v] = z;
                    mx = z > mx ? z : mx;
                }
            } else {
#pragma omp simd reduction(max : mx)
                for (int v = 0; v < V; v++) {
                    gm_real z = l[v];
                    zrow[v] = z;
                    mx = z > mx ? z : mx;
                }
            }
            // exp row goes into the output row (safe when it aliases logits: l is read no more)
            gm_real *e = dlogits ? dlogits + (size_t)n * V : erow;
            double sum = 0;
            enum { CH = 1024 };
            for (int v0 = 0; v0 < V; v0 += CH) {
                int v1 = v0 + CH < V ? v0 + CH : V;
                gm_real s = 0;
#pragma omp simd reduction(+ : s)
                for (int v = v0; v < v1; v++) {
                    gm_real ev = gm_fexp(zrow[v] - mx);
                    e[v] = ev;
                    s += ev;
                }
                sum += s;
            }
            double lse = mx + log(sum);
            int tgt = targets[n];
            losses[n] = (gm_real)(lse - zrow[tgt]);
            if (!dlogits) continue;
            const gm_real a = (gm_real)(dloss_scale / sum);
            gm_real *d = dlogits + (size_t)n * V;
            if (cap > 0) {
#pragma omp simd
                for (int v = 0; v < V; v++) {
                    gm_real t = zrow[v] * rcap;
                    d[v] = a * d[v] * (1 - t * t);  // dz/dl = 1 - tanh^2
                }
                gm_real t = zrow[tgt] * rcap;
                d[tgt] -= scl * (1 - t * t);
            } else {
#pragma omp simd
                for (int v = 0; v < V; v++) d[v] = a * d[v];
                d[tgt] -= scl;
            }
        }
        free(zrow);
        free(erow);
    }
}
