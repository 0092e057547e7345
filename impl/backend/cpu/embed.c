// Embedding gather and its deterministic scatter-add backward.
#include "backend/cpu/cpu_ops.h"

// out (N, C) = table (V, C) rows ids (N).
void gm_cpu_embed_fwd(const gm_backend *be, gm_actval *out_act, const int32_t *ids, const gm_real *table, int N, int C) {
    gm_real *out = gm_as_real(out_act);
    (void)be;
#pragma omp parallel for schedule(static) if ((size_t)N * C > GM_CPU_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const gm_real *row = table + (size_t)ids[n] * C;
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = row[c];
    }
}

// dtable (V, C) += dout (N, C) scattered by ids. Threads own disjoint column ranges and walk the
// tokens in order, so a row hit by many tokens sums them in the same order on every run.
void gm_cpu_embed_bwd(const gm_backend *be, gm_real *dtable, const int32_t *ids, const gm_actval *dout_act, int N, int V,
                      int C) {
    const gm_real *dout = gm_as_real(dout_act);
    (void)be;
    (void)V;
#pragma omp parallel for schedule(static) if ((size_t)N * C > GM_CPU_PAR_MIN)
    for (int c = 0; c < C; c++)
        for (int n = 0; n < N; n++) dtable[(size_t)ids[n] * C + c] += dout[(size_t)n * C + c];
}
