// QK-norm then rotary, fused in the interface (backend.h): on the CPU, the reference, it is the
// composition of the CPU's own rmsnorm and rotary kernels, so the fused GPU kernel is held to
// exactly what the separate kernels compute and the reference cannot drift from them.
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"

// out = rmsnorm(inp), then rotated in place (rotary reads both halves of a pair before writing).
void gm_cpu_qknorm_rotary_fwd(const gm_backend *be, gm_actval *out, gm_real *rstd, const gm_actval *inp,
                              const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, double eps) {
    gm_cpu_rmsnorm_fwd(be, out, rstd, inp, B * T * NH, HD, eps);
    gm_cpu_rotary_fwd(be, out, out, cos_t, sin_t, B, T, NH, HD);
}

// d(normed) = rotary_bwd(dout), then dinp from it. Set: the rotation goes into dinp itself, which
// rmsnorm_bwd then overwrites row by row (it reads a row's dy before writing it). Added into: dinp
// holds a prior, so the rotation goes to a buffer of its own.
void gm_cpu_qknorm_rotary_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                              const gm_actval *inp, const gm_real *rstd, const gm_real *cos_t, const gm_real *sin_t,
                              int B, int T, int NH, int HD) {
    const size_t n = (size_t)B * T * NH * HD;
    gm_actval *dnormed = dinp_write == GM_GRAD_SET ? dinp : gm_as_act((gm_real *)malloc(sizeof(gm_real) * (n ? n : 1)));
    if (!dnormed) return gm_cpu_record_error("qknorm_rotary_bwd: out of host memory for %zu values", n);
    gm_cpu_rotary_bwd(be, dnormed, GM_GRAD_SET, dout, cos_t, sin_t, B, T, NH, HD);
    gm_cpu_rmsnorm_bwd(be, dinp, dinp_write, dnormed, inp, rstd, B * T * NH, HD);
    if (dnormed != dinp) free(dnormed);
}
