// out = ca*a*x + cb*b*y with optional learnable scalars a = *pa, b = *pb (1 when NULL) and an
// optional second term y: residual adds, the 1/sqrt(2L) branch scale, x0 lambdas, value mixing,
// U-net skip weights. x and dx may be a view (backend.h): element i at gm_lincomb_x_at(i, ...).
#include "backend/cpu/cpu_ops.h"

void gm_cpu_lincomb_fwd(const gm_backend *be, gm_actval *out_act, double ca, const gm_real *pa, const gm_actval *x_act, double cb,
                        const gm_real *pb, const gm_actval *y_act, size_t n, int x_cols, int x_ld) {
    gm_real *out = gm_as_real(out_act);
    const gm_real *x = gm_as_real(x_act);
    const gm_real *y = gm_as_real(y_act);
    (void)be;
    gm_real a = (gm_real)(ca * (pa ? *pa : 1)), b = (gm_real)(cb * (pb ? *pb : 1));
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = a * x[gm_lincomb_x_at(i, x_cols, x_ld)] + (y ? b * y[i] : 0);
}

// One pass over chunks of 4096 elements (fixed by n, not by the thread count): each chunk writes
// its dx, dy and its fp64 sums of dout*x and dout*y in index order; the chunks' sums are then added
// in chunk order, so *dpa and *dpb are deterministic. Every element of dout is read before dx's
// element is written (dx may be dout), and dx's write comes before dy's (dx and dy may be one buffer).
void gm_cpu_lincomb_bwd(const gm_backend *be, gm_actval *dx_act, gm_grad_write dx_write, gm_actval *dy_act, gm_grad_write dy_write,
                        gm_real *dpa, gm_real *dpb, const gm_actval *dout_act, double ca, const gm_real *pa,
                        const gm_actval *x_act, double cb, const gm_real *pb, const gm_actval *y_act, size_t n,
                        int x_cols, int x_ld) {
    gm_real *dx = gm_as_real(dx_act);
    gm_real *dy = gm_as_real(dy_act);
    const gm_real *dout = gm_as_real(dout_act);
    const gm_real *x = gm_as_real(x_act);
    const gm_real *y = gm_as_real(y_act);
    (void)be;
    enum { CHUNK = 4096, BATCH = 64 };
    gm_real a = (gm_real)(ca * (pa ? *pa : 1)), b = (gm_real)(cb * (pb ? *pb : 1));
    if (!y) dy = NULL, dpb = NULL;  // no second term: nothing to write or sum for it
    const size_t nchunks = (n + CHUNK - 1) / CHUNK;
    double total_a = 0, total_b = 0;
    double part_a[BATCH], part_b[BATCH];
    for (size_t c0 = 0; c0 < nchunks; c0 += BATCH) {
        size_t cn = nchunks - c0 < BATCH ? nchunks - c0 : BATCH;
#pragma omp parallel for schedule(static) if (n > GM_CPU_PAR_MIN)
        for (size_t c = 0; c < cn; c++) {
            size_t lo = (c0 + c) * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
            double sa = 0, sb = 0;
            for (size_t i = lo; i < hi; i++) {
                const gm_real g = dout[i];
                const size_t xi = gm_lincomb_x_at(i, x_cols, x_ld);
                if (dpa) sa += (double)g * x[xi];
                if (dpb) sb += (double)g * y[i];
                if (dx) gm_grad_put(&dx[xi], dx_write, a * g);
                if (dy) gm_grad_put(&dy[i], dy_write, b * g);
            }
            part_a[c] = sa, part_b[c] = sb;
        }
        for (size_t c = 0; c < cn; c++) total_a += part_a[c], total_b += part_b[c];
    }
    if (dpa) *dpa += (gm_real)ca * (gm_real)total_a;
    if (dpb) *dpb += (gm_real)cb * (gm_real)total_b;
}
