// RMSNorm without a learnable weight, over rows of length C (the residual stream, or one head of
// q/k for QK-norm): out = x / sqrt(mean(x^2) + eps).
#include <math.h>

#include "backend/cpu/cpu_ops.h"

void gm_cpu_rmsnorm_fwd(const gm_backend *be, gm_actval *out_act, gm_real *rstd, const gm_actval *inp_act, int N, int C,
                        double eps) {
    gm_real *out = gm_as_real(out_act);
    const gm_real *inp = gm_as_real(inp_act);
    (void)be;
#pragma omp parallel for schedule(static) if ((size_t)N * C > GM_CPU_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const gm_real *x = inp + (size_t)n * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
        gm_real r = (gm_real)(1.0 / sqrt(ss / C + eps));
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = x[c] * r;
        rstd[n] = r;
    }
}

// With y = x*r, r = (mean(x^2)+eps)^(-1/2): dx = r*dy - x * r^3 * mean(dy*x).
void gm_cpu_rmsnorm_bwd(const gm_backend *be, gm_actval *dinp_act, gm_grad_write dinp_write, const gm_actval *dout_act,
                        const gm_actval *inp_act, const gm_real *rstd, int N, int C) {
    gm_real *dinp = gm_as_real(dinp_act);
    const gm_real *dout = gm_as_real(dout_act);
    const gm_real *inp = gm_as_real(inp_act);
    (void)be;
#pragma omp parallel for schedule(static) if ((size_t)N * C > GM_CPU_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const gm_real *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        double dot = 0;
        for (int c = 0; c < C; c++) dot += (double)dy[c] * x[c];
        double r = rstd[n], k = r * r * r * dot / C;
        for (int c = 0; c < C; c++) gm_grad_put(&dinp[(size_t)n * C + c], dinp_write, (gm_real)(r * dy[c] - k * x[c]));
    }
}
