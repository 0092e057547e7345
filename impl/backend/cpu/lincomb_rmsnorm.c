// A residual add or mix then RMSNorm, fused in the interface (backend.h): on the CPU, the
// reference, it is the composition of the CPU's own lincomb and rmsnorm kernels, so the fused GPU
// kernel is held to exactly what the separate kernels compute.
#include "backend/cpu/cpu_ops.h"

void gm_cpu_lincomb_rmsnorm_fwd(const gm_backend *be, gm_actval *sum, gm_actval *out, gm_real *rstd, double ca,
                                const gm_real *pa, const gm_actval *x, double cb, const gm_real *pb, const gm_actval *y,
                                int N, int C, double eps) {
    gm_cpu_lincomb_fwd(be, sum, ca, pa, x, cb, pb, y, (size_t)N * C, C, C);
    gm_cpu_rmsnorm_fwd(be, out, rstd, sum, N, C, eps);
}
