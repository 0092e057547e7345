// Rotary position embedding, half-split layout, on (B, T, NH, HD) with tables (T, HD/2).
// The backward is the rotation by -theta.
#include "backend/cpu/cpu_ops.h"

// sign = +1: forward rotation; -1: its transpose (the backward); out written as `write` says. Token
// strides: ld_out, ld_in elements (NH HD for a tensor of its own).
static void rotate(gm_real *out, size_t ld_out, const gm_real *inp, size_t ld_in, const gm_real *cos_t,
                   const gm_real *sin_t, int B, int T, int NH, int HD, int sign, gm_grad_write write) {
    int h2 = HD / 2;
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * T * NH * HD > GM_CPU_PAR_MIN)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const size_t token = (size_t)b * T + t;
                const gm_real *x = inp + token * ld_in + (size_t)h * HD;
                gm_real *y = out + token * ld_out + (size_t)h * HD;
                for (int i = 0; i < h2; i++) {
                    gm_real c = cos_t[(size_t)t * h2 + i], s = sign * sin_t[(size_t)t * h2 + i];
                    gm_real x1 = x[i], x2 = x[i + h2];
                    gm_real y1 = x1 * c + x2 * s, y2 = -x1 * s + x2 * c;
                    gm_grad_put(&y[i], write, y1);
                    gm_grad_put(&y[i + h2], write, y2);
                }
            }
}

void gm_cpu_rotary_fwd(const gm_backend *be, gm_actval *out_act, const gm_actval *inp_act, const gm_real *cos_t,
                       const gm_real *sin_t, int B, int T, int NH, int HD, int ld) {
    gm_real *out = gm_as_real(out_act);
    const gm_real *inp = gm_as_real(inp_act);
    (void)be;
    rotate(out, (size_t)NH * HD, inp, (size_t)ld, cos_t, sin_t, B, T, NH, HD, 1, GM_GRAD_SET);
}

void gm_cpu_rotary_bwd(const gm_backend *be, gm_actval *dinp_act, gm_grad_write dinp_write, const gm_actval *dout_act,
                       const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, int ld) {
    gm_real *dinp = gm_as_real(dinp_act);
    const gm_real *dout = gm_as_real(dout_act);
    (void)be;
    rotate(dinp, (size_t)ld, dout, (size_t)NH * HD, cos_t, sin_t, B, T, NH, HD, -1, dinp_write);
}
