// out = ca*a*x + cb*b*y with optional learnable scalars a = *pa, b = *pb (1 when NULL) and an
// optional second term y: residual adds, the 1/sqrt(2L) branch scale, x0 lambdas, value mixing,
// U-net skip weights.
#include "backend/cpu/cpu_ops.h"

void gm_cpu_lincomb_fwd(const gm_backend *be, gm_real *out, double ca, const gm_real *pa, const gm_real *x, double cb,
                        const gm_real *pb, const gm_real *y, size_t n) {
    (void)be;
    gm_real a = (gm_real)(ca * (pa ? *pa : 1)), b = (gm_real)(cb * (pb ? *pb : 1));
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = a * x[i] + (y ? b * y[i] : 0);
}

// sum(u*v) in double, in a fixed order: per-chunk partials (chunks fixed by n, not by the thread
// count), then summed in chunk order.
static gm_real dot_fixed(const gm_real *u, const gm_real *v, size_t n) {
    enum { CHUNK = 4096 };
    size_t nchunks = (n + CHUNK - 1) / CHUNK;
    double total = 0;
    double partial[64];
    for (size_t c0 = 0; c0 < nchunks; c0 += 64) {
        size_t cn = nchunks - c0 < 64 ? nchunks - c0 : 64;
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
        for (size_t c = 0; c < cn; c++) {
            size_t lo = (c0 + c) * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
            double s = 0;
            for (size_t i = lo; i < hi; i++) s += (double)u[i] * v[i];
            partial[c] = s;
        }
        for (size_t c = 0; c < cn; c++) total += partial[c];
    }
    return (gm_real)total;
}

void gm_cpu_lincomb_bwd(const gm_backend *be, gm_real *dx, gm_grad_write dx_write, gm_real *dy, gm_grad_write dy_write,
                        gm_real *dpa, gm_real *dpb, const gm_real *dout, double ca, const gm_real *pa, const gm_real *x, double cb, const gm_real *pb, const gm_real *y,
                        size_t n) {
    (void)be;
    gm_real a = (gm_real)(ca * (pa ? *pa : 1)), b = (gm_real)(cb * (pb ? *pb : 1));
    if (dpa) *dpa += (gm_real)ca * dot_fixed(dout, x, n);
    if (dpb && y) *dpb += (gm_real)cb * dot_fixed(dout, y, n);
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const gm_real g = dout[i];  // read before dx is written: dx may be dout
        if (dx) gm_grad_put(&dx[i], dx_write, a * g);
        if (dy && y) gm_grad_put(&dy[i], dy_write, b * g);
    }
}
