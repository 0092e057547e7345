// QK-norm then rotary, fused in the interface (backend.h): on the CPU, the reference, it is the
// composition of the CPU's own rmsnorm and rotary kernels, so the fused GPU kernel is held to
// exactly what the separate kernels compute and the reference cannot drift from them. A strided
// view (ld > NH HD, a third of a fused projection's rows) is gathered into, or scattered from, a
// tensor of its own around them: exact copies, so the values are those of the contiguous case.
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"

// rows of C values from src (row stride ld_src) to dst (row stride ld_dst).
static void copy_rows(gm_real *dst, size_t ld_dst, const gm_real *src, size_t ld_src, size_t rows, size_t C) {
    for (size_t r = 0; r < rows; r++) memcpy(dst + r * ld_dst, src + r * ld_src, sizeof(gm_real) * C);
}

// out = rmsnorm(inp), then rotated in place (rotary reads both halves of a pair before writing).
void gm_cpu_qknorm_rotary_fwd(const gm_backend *be, gm_actval *out, gm_real *rstd, const gm_actval *inp,
                              const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, int ld,
                              double eps) {
    const size_t C = (size_t)NH * HD, tokens = (size_t)B * T;
    if ((size_t)ld != C) {  // the view gathered into out, then normed in place (rmsnorm reads a row first)
        copy_rows(gm_as_real(out), C, gm_as_real(inp), (size_t)ld, tokens, C);
        inp = out;
    }
    gm_cpu_rmsnorm_fwd(be, out, rstd, inp, B * T * NH, HD, eps);
    gm_cpu_rotary_fwd(be, out, out, cos_t, sin_t, B, T, NH, HD, NH * HD);
}

// d(normed) = rotary_bwd(dout), then dinp from it. Set: the rotation goes into dinp itself, which
// rmsnorm_bwd then overwrites row by row (it reads a row's dy before writing it). Added into, or a
// strided view: the rotation goes to a buffer of its own (and a strided inp is gathered beside it;
// the result is put into the view as dinp_write says).
void gm_cpu_qknorm_rotary_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                              const gm_actval *inp, const gm_real *rstd, const gm_real *cos_t, const gm_real *sin_t,
                              int B, int T, int NH, int HD, int ld) {
    const size_t C = (size_t)NH * HD, tokens = (size_t)B * T, n = tokens * C;
    const int strided = (size_t)ld != C;
    if (dinp_write == GM_GRAD_SET && !strided) {
        gm_cpu_rotary_bwd(be, dinp, GM_GRAD_SET, dout, cos_t, sin_t, B, T, NH, HD, NH * HD);
        gm_cpu_rmsnorm_bwd(be, dinp, GM_GRAD_SET, dinp, inp, rstd, B * T * NH, HD);
        return;
    }
    gm_real *buf = malloc(sizeof(gm_real) * (n ? 2 * n : 1));
    if (!buf) return gm_cpu_record_error("qknorm_rotary_bwd: out of host memory for %zu values", 2 * n);
    gm_real *dnormed = buf, *x = buf + n;
    if (strided) copy_rows(x, C, gm_as_real(inp), (size_t)ld, tokens, C);
    gm_cpu_rotary_bwd(be, gm_as_act(dnormed), GM_GRAD_SET, dout, cos_t, sin_t, B, T, NH, HD, NH * HD);
    if (!strided) {
        gm_cpu_rmsnorm_bwd(be, dinp, dinp_write, gm_as_act(dnormed), inp, rstd, B * T * NH, HD);
    } else {  // the gradient in place of dnormed (rmsnorm_bwd reads a row first), then put into the view
        gm_cpu_rmsnorm_bwd(be, gm_as_act(dnormed), GM_GRAD_SET, gm_as_act(dnormed), gm_as_act(x), rstd, B * T * NH, HD);
        gm_real *d = gm_as_real(dinp);
        for (size_t r = 0; r < tokens; r++)
            for (size_t i = 0; i < C; i++) gm_grad_put(&d[r * (size_t)ld + i], dinp_write, dnormed[r * C + i]);
    }
    free(buf);
}
