// Linear layer without bias: out (N, OC) = scale inp (N, C) @ W^T (+ res) with W (OC, C), through
// BLAS, and the plain triple loop it is tested against. The residual is added to the finished
// product (s acc + res, what lincomb_fwd computed from a stored product: the same value where
// activations are gm_real), never fed to BLAS as C, whose K-blocked accumulation would add it first.
// Each OpenMP thread multiplies its own slice of rows with a single-threaded BLAS (blas.h).
#include <omp.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_ops.h"

// Rows [lo, hi) of `rows` for thread `t` of `nt`.
static void slice(int rows, int t, int nt, int *lo, int *hi) {
    size_t a, b;
    gm_cpu_slice((size_t)rows, t, nt, &a, &b);
    *lo = (int)a, *hi = (int)b;
}

static int threads_for(size_t flops) { return flops > 8 * GM_CPU_PAR_MIN ? omp_get_max_threads() : 1; }

void gm_cpu_matmul_fwd(const gm_backend *be, gm_actval *out_act, const gm_actval *inp_act, const gm_real *W, int N,
                       int C, int OC, double scale, const gm_actval *res_act) {
    gm_real *out = gm_as_real(out_act);
    const gm_real *inp = gm_as_real(inp_act);
    const gm_real *res = gm_as_real(res_act);
    const gm_real s = (gm_real)scale;
    (void)be;
    gm_cpu_blas_single_thread();
    int nt = threads_for((size_t)N * C * OC);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int lo, hi;
        slice(N, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        if (hi > lo)
            GM_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, OC, C, 1.0, inp + (size_t)lo * C, C, W, C, 0.0,
                 out + (size_t)lo * OC, OC);
        if (res || s != 1)
            for (size_t i = (size_t)lo * OC; i < (size_t)hi * OC; i++) out[i] = s * out[i] + (res ? res[i] : 0);
    }
}

void gm_cpu_matmul_bwd(const gm_backend *be, gm_actval *dinp_act, gm_grad_write dinp_write, gm_real *dW, const gm_actval *dout_act,
                       const gm_actval *inp_act, const gm_real *W, int N, int C, int OC) {
    gm_real *dinp = gm_as_real(dinp_act);
    const gm_real *dout = gm_as_real(dout_act);
    const gm_real *inp = gm_as_real(inp_act);
    (void)be;
    gm_cpu_blas_single_thread();
    int nt = threads_for((size_t)N * C * OC);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads(), lo, hi;
        // dinp (N, C) (+)= dout (N, OC) @ W (OC, C), by rows of dinp (beta 0 never reads dinp)
        slice(N, t, n, &lo, &hi);
        if (dinp && hi > lo)
            GM_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, hi - lo, C, OC, 1.0, dout + (size_t)lo * OC, OC, W, C,
                    dinp_write == GM_GRAD_ADD ? 1.0 : 0.0, dinp + (size_t)lo * C, C);
        // dW (OC, C) += dout^T (OC, N) @ inp (N, C), by rows of dW (columns of dout)
        slice(OC, t, n, &lo, &hi);
        if (dW && hi > lo)
            GM_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, hi - lo, C, N, 1.0, dout + lo, OC, inp, C, 1.0,
                 dW + (size_t)lo * C, C);
    }
}

void gm_cpu_matmul_fwd_naive(gm_real *out, const gm_real *inp, const gm_real *W, int N, int C, int OC, double scale,
                             const gm_real *res) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double acc = 0;
            for (int c = 0; c < C; c++) acc += (double)inp[(size_t)n * C + c] * W[(size_t)o * C + c];
            const size_t at = (size_t)n * OC + o;
            out[at] = (gm_real)scale * (gm_real)acc + (res ? res[at] : 0);
        }
}

void gm_cpu_matmul_bwd_naive(gm_real *dinp, gm_grad_write dinp_write, gm_real *dW, const gm_real *dout,
                             const gm_real *inp, const gm_real *W, int N, int C, int OC) {
    if (dinp)
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                double acc = 0;
                for (int o = 0; o < OC; o++) acc += (double)dout[(size_t)n * OC + o] * W[(size_t)o * C + c];
                gm_grad_put(&dinp[(size_t)n * C + c], dinp_write, (gm_real)acc);
            }
    if (dW)
        for (int o = 0; o < OC; o++)
            for (int c = 0; c < C; c++) {
                double acc = 0;
                for (int n = 0; n < N; n++) acc += (double)dout[(size_t)n * OC + o] * inp[(size_t)n * C + c];
                dW[(size_t)o * C + c] += (gm_real)acc;
            }
}
