// The CUDA backend's GEMM (backend/cuda/gemm.h), both implementations (cuBLAS and the reference
// kernel), against OpenBLAS's sgemm called with the same arguments on the host: every transpose
// pair, leading dimensions above the minimum, two matrices at strides, beta = 0 with C poisoned
// (never read) and beta != 0, and the three type combinations the backend uses (fp32; bf16 A, B
// with fp32 C: the matmuls; bf16 everything: Newton-Schulz). Where GM_CUDA_LIBS=ref keeps cuBLAS
// out (a runtime without it), the cuBLAS half is skipped with that reason.
//
// Bar, per element (LAPACK-style, from the arithmetic): both sides sum k products of the same
// fp32 values (bf16 inputs are exact in fp32) in some order with fp32 rounding, so each is within
// k u S of the exact value, S = |alpha| sum_p |a_ip b_pj| + |beta c_ij|, u = 2^-24, and the alpha,
// beta epilogue adds 3 u S: |gpu - blas| <= 2 (k + 3) u S. A bf16 C adds one rounding of the
// result: + 2^-8 (|blas| + 2 (k + 3) u S). A wrong transpose, stride or leading dimension errs by
// O(S), far above it.
#include <cblas.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gemm.h"
#include "base/bf16.h"
#include "cuda_check.h"

#define U32 5.9604644775390625e-08  // 2^-24
#define U_BF16 0.00390625           // 2^-8

typedef struct {
    int m, n, k;
} gemm_shape;

// Host values of an (r, c) column-major matrix with leading dimension ld, nb of them at stride s,
// stored as type t (bf16 values are rounded first, so host and device hold the same numbers).
static float *host_matrix(cc_env *e, int ld, int c, long long s, int nb, gm_gemm_type t) {
    const size_t n = (size_t)s * (nb - 1) + (size_t)ld * c;
    float *x = cc_randn(e, n, 1.0);
    if (t == GM_GEMM_BF16)
        for (size_t i = 0; i < n; i++) x[i] = gm_round_bf16(x[i]);
    return x;
}

static void *device_copy(const cc_env *e, const float *x, size_t n, gm_gemm_type t) {
    if (t == GM_GEMM_F32) return cc_to_gpu(e, x, sizeof(float) * n);
    gm_bf16 *h = malloc(sizeof *h * n);
    cr_assert(h);
    for (size_t i = 0; i < n; i++) h[i] = gm_f32_to_bf16(x[i]);
    void *d = cc_to_gpu(e, h, sizeof *h * n);
    free(h);
    return d;
}

static float *host_result(const cc_env *e, const void *d, size_t n, gm_gemm_type t) {
    float *x = malloc(sizeof(float) * n);
    cr_assert(x);
    if (t == GM_GEMM_F32) {
        e->gpu->download(e->gpu, x, d, sizeof(float) * n);
        return x;
    }
    gm_bf16 *h = malloc(sizeof *h * n);
    cr_assert(h);
    e->gpu->download(e->gpu, h, d, sizeof *h * n);
    for (size_t i = 0; i < n; i++) x[i] = gm_bf16_to_f32(h[i]);
    free(h);
    return x;
}

// One case: every transpose pair, beta = 0 (C poisoned) and beta = 0.75; returns the worst
// |gpu - blas| / bound seen.
static double run_case(cc_env *e, gm_cuda_libs impl, gemm_shape sh, gm_gemm_type ab, gm_gemm_type ct) {
    const int m = sh.m, n = sh.n, k = sh.k, nb = 2;
    double worst = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int bi = 0; bi < 2; bi++) {
                const float alpha = 1.5f, beta = bi ? 0.75f : 0.0f;
                // Stored shapes (column-major): A is (m, k) or, transposed, (k, m); lda its rows + 3.
                const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                const int lda = ar + 3, ldb = br + 2, ldc = m + 1;
                const long long sa = (long long)lda * ac + 5, sb = (long long)ldb * bc + 7, sc = (long long)ldc * n + 4;
                float *A = host_matrix(e, lda, ac, sa, nb, ab), *B = host_matrix(e, ldb, bc, sb, nb, ab);
                float *C = host_matrix(e, ldc, n, sc, nb, ct);
                const size_t nA = (size_t)sa * (nb - 1) + (size_t)lda * ac;
                const size_t nB = (size_t)sb * (nb - 1) + (size_t)ldb * bc;
                const size_t nC = (size_t)sc * (nb - 1) + (size_t)ldc * n;
                float *want = malloc(sizeof(float) * nC);
                cr_assert(want);
                memcpy(want, C, sizeof(float) * nC);
                if (!bi) {  // beta = 0 must not read C: poison the device copy
                    for (size_t i = 0; i < nC; i++) C[i] = NAN;
                }
                void *dA = device_copy(e, A, nA, ab), *dB = device_copy(e, B, nB, ab), *dC = device_copy(e, C, nC, ct);
                gm_cuda_gemm_with(impl, e->gpu, ta, tb, m, n, k, alpha, ab, dA, lda, sa, dB, ldb, sb, beta, ct, dC, ldc,
                                  sc, nb);
                cc_sync(e, "gemm");
                float *got = host_result(e, dC, nC, ct);
                for (int b = 0; b < nb; b++) {
                    const float *Ab = A + (size_t)b * sa, *Bb = B + (size_t)b * sb;
                    float *Wb = want + (size_t)b * sc;
                    cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                                alpha, Ab, lda, Bb, ldb, beta, Wb, ldc);
                    for (int j = 0; j < n; j++)
                        for (int i = 0; i < m; i++) {
                            double S = 0;
                            for (int p = 0; p < k; p++) {
                                const double a = ta ? Ab[(size_t)i * lda + p] : Ab[(size_t)p * lda + i];
                                const double bb = tb ? Bb[(size_t)p * ldb + j] : Bb[(size_t)j * ldb + p];
                                S += fabs(a * bb);
                            }
                            const size_t at = (size_t)b * sc + (size_t)j * ldc + i;
                            const double c0 = bi ? C[at] : 0.0;
                            S = fabs((double)alpha) * S + fabs((double)beta * c0);
                            double bd = 2.0 * (k + 3) * U32 * S;
                            if (ct == GM_GEMM_BF16) bd += U_BF16 * (fabs((double)Wb[(size_t)j * ldc + i]) + bd);
                            const double d = fabs((double)got[at] - (double)want[at]);
                            const double r = bd > 0 ? d / bd : (d > 0 ? INFINITY : 0);
                            cr_expect(isfinite(got[at]) && r <= 1.0,
                                      "%s gemm %dx%dx%d ta %d tb %d beta %g ab %d ct %d, matrix %d, C(%d, %d): "
                                      "gpu %.9g, OpenBLAS %.9g, |diff| %.3g > bound %.3g (seed %llu)",
                                      impl == GM_CUDA_LIBS_REF ? "reference" : "cuBLAS", m, n, k, ta, tb, (double)beta,
                                      (int)ab, (int)ct, b, i, j, (double)got[at], (double)want[at], d, bd,
                                      (unsigned long long)e->seed);
                            if (r > worst) worst = r;
                        }
                }
                e->gpu->free(e->gpu, dA), e->gpu->free(e->gpu, dB), e->gpu->free(e->gpu, dC);
                free(A), free(B), free(C), free(want), free(got);
            }
    return worst;
}

static void run_all(gm_cuda_libs impl) {
    cc_env e = cc_begin();
    // Not multiples of any tile or warp; degenerate sides; k = 1.
    static const gemm_shape shapes[] = {{37, 29, 53}, {64, 33, 96}, {1, 40, 7}, {33, 1, 65}, {17, 19, 1}};
    static const gm_gemm_type types[][2] = {{GM_GEMM_F32, GM_GEMM_F32}, {GM_GEMM_BF16, GM_GEMM_F32},
                                            {GM_GEMM_BF16, GM_GEMM_BF16}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            const double worst = run_case(&e, impl, shapes[s], types[t][0], types[t][1]);
            cr_log_info("%s %dx%dx%d types %d/%d: worst |gpu - OpenBLAS| / bound = %.3g",
                        impl == GM_CUDA_LIBS_REF ? "reference" : "cuBLAS", shapes[s].m, shapes[s].n, shapes[s].k,
                        (int)types[t][0], (int)types[t][1], worst);
        }
}

Test(cuda_gemm, reference_matches_openblas) {
    CC_REQUIRE_GPU();
    run_all(GM_CUDA_LIBS_REF);
}

Test(cuda_gemm, cublas_matches_openblas) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    if (gm_cuda_libs_of(e.gpu) == GM_CUDA_LIBS_REF)
        cr_skip_test("GPU test skipped: GM_CUDA_LIBS=ref (no cuBLAS in this run; the reference is tested alone)");
    run_all(GM_CUDA_LIBS_VENDOR);
}
