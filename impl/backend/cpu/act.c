// MLP activations, elementwise: exact GELU x*Phi(x) (the records' nn.GELU(), erf form) and
// ReLU^2. One loop per activation: ReLU^2's is then branch-free and vectorizes (a loop that might
// call erf does not), with the same double arithmetic per element as before.
#include <math.h>

#include "backend/cpu/cpu_ops.h"

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

void gm_cpu_act_fwd(const gm_backend *be, gm_act act, gm_actval *out_act, const gm_actval *inp_act, size_t n) {
    gm_real *out = gm_as_real(out_act);
    const gm_real *inp = gm_as_real(inp_act);
    (void)be;
    if (act == GM_ACT_GELU) {
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
        for (size_t i = 0; i < n; i++) {
            const double x = inp[i];
            out[i] = (gm_real)(0.5 * x * (1.0 + erf(x * INV_SQRT2)));
        }
        return;
    }
#pragma omp parallel for simd schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const double x = inp[i];
        out[i] = (gm_real)(x > 0 ? x * x : 0.0);
    }
}

// GELU' = Phi(x) + x*phi(x); (ReLU^2)' = 2*relu(x).
void gm_cpu_act_bwd(const gm_backend *be, gm_act act, gm_actval *dinp_act, gm_grad_write dinp_write, const gm_actval *dout_act,
                    const gm_actval *inp_act, size_t n) {
    gm_real *dinp = gm_as_real(dinp_act);
    const gm_real *dout = gm_as_real(dout_act);
    const gm_real *inp = gm_as_real(inp_act);
    (void)be;
    if (act == GM_ACT_GELU) {
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
        for (size_t i = 0; i < n; i++) {
            const double x = inp[i];
            const double g = 0.5 * (1.0 + erf(x * INV_SQRT2)) + x * INV_SQRT_2PI * exp(-0.5 * x * x);
            gm_grad_put(&dinp[i], dinp_write, (gm_real)(g * dout[i]));
        }
        return;
    }
#pragma omp parallel for simd schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const double x = inp[i], g = x > 0 ? 2.0 * x : 0.0;
        gm_grad_put(&dinp[i], dinp_write, (gm_real)(g * dout[i]));
    }
}
