// The CUDA backend's GEMM (backend/cuda/gemm.h), both implementations (cuBLAS and the reference
// kernel), against OpenBLAS's sgemm called with the same arguments on the host: every transpose
// pair, beta = 0 with C poisoned (never read), beta = 1 (accumulating, as into the parameter
// gradients) and beta = 0.75, the three type combinations the backend uses (fp32; bf16 A, B with
// fp32 C: dW; bf16 everything: the matmuls' activations and Newton-Schulz). Each case is one
// matrix (cuBLAS: the cuBLASLt path; its beta loop calls one shape again, so the cached plan is
// reused with new pointers) or two at strides (cublasGemmStridedBatchedEx), with leading
// dimensions above the minimum or tight (the model's), and pointers at an allocation's start
// (256-byte aligned) or one element past it (4 or 2 bytes: a plan for that alignment). Where
// GM_CUDA_LIBS=ref keeps cuBLAS out (a runtime without it), the cuBLAS half is skipped with that
// reason.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gemm.h"
#include "base/bf16.h"
#include "cuda_check.h"

#define U32 5.9604644775390625e-08  // 2^-24
#define U_BF16 0.00390625           // 2^-8
#define MAX_SHOWN 3                 // elements over their bound named one by one, per GEMM

typedef struct {
    int m, n, k;
    int nb;   // matrices: 1 (cuBLAS: cuBLASLt) or 2 at strides (the batched call)
    int pad;  // leading dimensions (and strides) above the minimum (1) or tight (0)
    int off;  // elements every matrix starts past its allocation's start
} gemm_case;

// n host values, stored as type t (bf16 values are rounded first, so host and device hold the
// same numbers).
static float *host_values(cc_env *e, size_t n, gm_gemm_type t) {
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

// Element i of device memory d stored as t.
static void *device_at(void *d, gm_gemm_type t, size_t i) {
    return (char *)d + i * (t == GM_GEMM_BF16 ? sizeof(gm_bf16) : sizeof(float));
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

// One case: every transpose pair, beta = 0 (C poisoned), 1 and 0.75; returns the worst
// |gpu - blas| / bound seen.
static double run_case(cc_env *e, gm_cuda_libs impl, gemm_case cs, gm_gemm_type ab, gm_gemm_type ct) {
    static const float betas[] = {0.0f, 1.0f, 0.75f};
    const int m = cs.m, n = cs.n, k = cs.k, nb = cs.nb, pad = cs.pad;
    const size_t off = (size_t)cs.off;
    double worst = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t bi = 0; bi < sizeof betas / sizeof betas[0]; bi++) {
                const float alpha = 1.5f, beta = betas[bi];
                // Stored shapes (column-major): A is (m, k) or, transposed, (k, m); lda its rows
                // (+ 3 when padded).
                const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                const int lda = ar + 3 * pad, ldb = br + 2 * pad, ldc = m + pad;
                const long long sa = (long long)lda * ac + 5 * pad, sb = (long long)ldb * bc + 7 * pad;
                const long long sc = (long long)ldc * n + 4 * pad;
                // Host arrays hold the `off` leading elements too; matrix b starts at off + b s.
                const size_t nA = off + (size_t)sa * (nb - 1) + (size_t)lda * ac;
                const size_t nB = off + (size_t)sb * (nb - 1) + (size_t)ldb * bc;
                const size_t nC = off + (size_t)sc * (nb - 1) + (size_t)ldc * n;
                float *A = host_values(e, nA, ab), *B = host_values(e, nB, ab), *C = host_values(e, nC, ct);
                float *want = malloc(sizeof(float) * nC);
                cr_assert(want);
                memcpy(want, C, sizeof(float) * nC);
                if (beta == 0.0f) {  // beta = 0 must not read C: poison the device copy
                    for (size_t i = 0; i < nC; i++) C[i] = NAN;
                }
                void *dA = device_copy(e, A, nA, ab), *dB = device_copy(e, B, nB, ab), *dC = device_copy(e, C, nC, ct);
                gm_cuda_gemm_with(impl, e->gpu, ta, tb, m, n, k, alpha, ab, device_at(dA, ab, off), lda, sa,
                                  device_at(dB, ab, off), ldb, sb, beta, ct, device_at(dC, ct, off), ldc, sc, nb);
                cc_sync(e, "gemm");
                float *got = host_result(e, dC, nC, ct);
                long over = 0;  // elements over their bound: the first MAX_SHOWN named, then the count
                for (int b = 0; b < nb; b++) {
                    const float *Ab = A + off + (size_t)b * sa, *Bb = B + off + (size_t)b * sb;
                    float *Wb = want + off + (size_t)b * sc;
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
                            const size_t at = off + (size_t)b * sc + (size_t)j * ldc + i;
                            const double c0 = beta != 0.0f ? C[at] : 0.0;
                            S = fabs((double)alpha) * S + fabs((double)beta * c0);
                            double bd = 2.0 * (k + 3) * U32 * S;
                            if (ct == GM_GEMM_BF16) bd += U_BF16 * (fabs((double)want[at]) + bd);
                            const double d = fabs((double)got[at] - (double)want[at]);
                            const double r = bd > 0 ? d / bd : (d > 0 ? INFINITY : 0);
                            const int ok = isfinite(got[at]) && r <= 1.0;
                            over += !ok;
                            cr_expect(ok || over > MAX_SHOWN,
                                      "%s gemm %dx%dx%d nb %d pad %d off %d ta %d tb %d beta %g ab %d ct %d, "
                                      "matrix %d, C(%d, %d): gpu %.9g, OpenBLAS %.9g, |diff| %.3g > bound %.3g "
                                      "(seed %llu)",
                                      impl == GM_CUDA_LIBS_REF ? "reference" : "cuBLAS", m, n, k, nb, pad, cs.off, ta,
                                      tb, (double)beta, (int)ab, (int)ct, b, i, j, (double)got[at], (double)want[at],
                                      d, bd, (unsigned long long)e->seed);
                            if (r > worst) worst = r;
                        }
                }
                cr_expect(over <= MAX_SHOWN,
                          "%s gemm %dx%dx%d nb %d pad %d off %d ta %d tb %d beta %g ab %d ct %d: %ld of %d x %d x %d "
                          "elements over their bounds (the first %d named above)",
                          impl == GM_CUDA_LIBS_REF ? "reference" : "cuBLAS", m, n, k, nb, pad, cs.off, ta, tb,
                          (double)beta, (int)ab, (int)ct, over, m, n, nb, MAX_SHOWN);
                e->gpu->free(e->gpu, dA), e->gpu->free(e->gpu, dB), e->gpu->free(e->gpu, dC);
                free(A), free(B), free(C), free(want), free(got);
            }
    return worst;
}

static void run_all(gm_cuda_libs impl) {
    cc_env e = cc_begin();
    // Not multiples of any tile or warp; degenerate sides; k = 1; each one matrix and two. Then
    // multiples of 16 with tight leading dimensions (the tensor-core kernels the model's shapes
    // get), at an allocation's start and one element past it, and an odd shape tight and past it.
    static const gemm_case cases[] = {
        {37, 29, 53, 1, 1, 0}, {37, 29, 53, 2, 1, 0},  {64, 33, 96, 1, 1, 0},  {64, 33, 96, 2, 1, 0},
        {1, 40, 7, 1, 1, 0},   {1, 40, 7, 2, 1, 0},    {33, 1, 65, 1, 1, 0},   {33, 1, 65, 2, 1, 0},
        {17, 19, 1, 1, 1, 0},  {17, 19, 1, 2, 1, 0},   {128, 80, 192, 1, 0, 0}, {128, 80, 192, 1, 0, 1},
        {37, 29, 53, 1, 0, 1}};
    static const gm_gemm_type types[][2] = {{GM_GEMM_F32, GM_GEMM_F32}, {GM_GEMM_BF16, GM_GEMM_F32},
                                            {GM_GEMM_BF16, GM_GEMM_BF16}};
    const char *name = impl == GM_CUDA_LIBS_REF ? "reference" : "cuBLAS";
    int ran = 0;
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
        const gemm_case cs = cases[s];
        char what[96];
        snprintf(what, sizeof what, "%s gemm %dx%dx%d nb %d", name, cs.m, cs.n, cs.k, cs.nb);
        if (!cc_case_fits(what, (double)cs.m * cs.n * cs.k * cs.nb)) continue;
        ran = 1;
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            const double worst = run_case(&e, impl, cs, types[t][0], types[t][1]);
            cr_log_info("%s %dx%dx%d nb %d pad %d off %d types %d/%d: worst |gpu - OpenBLAS| / bound = %.3g", name,
                        cs.m, cs.n, cs.k, cs.nb, cs.pad, cs.off, (int)types[t][0], (int)types[t][1], worst);
        }
    }
    cc_expect_some_ran(ran);
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
