// Linear layer without bias: out (N, OC) = inp (N, C) @ W^T with W (OC, C), through BLAS, and the
// plain triple loop it is tested against.
#include <cblas.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_ops.h"

#ifdef GM_FP64
#define GEMM cblas_dgemm
#else
#define GEMM cblas_sgemm
#endif

void gm_cpu_matmul_fwd(const gm_backend *be, gm_real *out, const gm_real *inp, const gm_real *W, int N, int C,
                       int OC) {
    (void)be;
    GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0, inp, C, W, C, 0.0, out, OC);
}

void gm_cpu_matmul_bwd(const gm_backend *be, gm_real *dinp, gm_real *dW, const gm_real *dout, const gm_real *inp,
                       const gm_real *W, int N, int C, int OC) {
    (void)be;
    // dinp (N, C) += dout (N, OC) @ W (OC, C)
    if (dinp) GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0, dout, OC, W, C, 1.0, dinp, C);
    // dW (OC, C) += dout^T (OC, N) @ inp (N, C)
    if (dW) GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0, dout, OC, inp, C, 1.0, dW, C);
}

void gm_cpu_matmul_fwd_naive(gm_real *out, const gm_real *inp, const gm_real *W, int N, int C, int OC) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double acc = 0;
            for (int c = 0; c < C; c++) acc += (double)inp[(size_t)n * C + c] * W[(size_t)o * C + c];
            out[(size_t)n * OC + o] = (gm_real)acc;
        }
}

void gm_cpu_matmul_bwd_naive(gm_real *dinp, gm_real *dW, const gm_real *dout, const gm_real *inp, const gm_real *W,
                             int N, int C, int OC) {
    if (dinp)
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                double acc = 0;
                for (int o = 0; o < OC; o++) acc += (double)dout[(size_t)n * OC + o] * W[(size_t)o * C + c];
                dinp[(size_t)n * C + c] += (gm_real)acc;
            }
    if (dW)
        for (int o = 0; o < OC; o++)
            for (int c = 0; c < C; c++) {
                double acc = 0;
                for (int n = 0; n < N; n++) acc += (double)dout[(size_t)n * OC + o] * inp[(size_t)n * C + c];
                dW[(size_t)o * C + c] += (gm_real)acc;
            }
}
