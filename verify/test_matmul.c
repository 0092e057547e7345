// The BLAS matmul against the naive triple loop, forward and backward (which must add into its
// outputs), on odd shapes.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "base/rng.h"
#include "helpers.h"

static void randn(gm_real *x, size_t n, uint64_t stream) {
    for (size_t i = 0; i < n; i++) x[i] = gm_rng_normal(42, stream, i);
}

Test(matmul, blas_matches_naive_forward_and_backward) {
    const int shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {64, 33, 97}, {129, 64, 200}};
    const gm_backend *be = gm_backend_cpu();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        gm_real *inp = malloc(sizeof(gm_real) * N * C), *W = malloc(sizeof(gm_real) * OC * C);
        gm_real *o1 = malloc(sizeof(gm_real) * N * OC), *o2 = malloc(sizeof(gm_real) * N * OC);
        gm_real *dout = malloc(sizeof(gm_real) * N * OC);
        gm_real *di1 = malloc(sizeof(gm_real) * N * C), *di2 = malloc(sizeof(gm_real) * N * C);
        gm_real *dw1 = malloc(sizeof(gm_real) * OC * C), *dw2 = malloc(sizeof(gm_real) * OC * C);
        randn(inp, (size_t)N * C, 1), randn(W, (size_t)OC * C, 2), randn(dout, (size_t)N * OC, 3);
        randn(di1, (size_t)N * C, 4), randn(di2, (size_t)N * C, 4);  // same prior content: both must add
        randn(dw1, (size_t)OC * C, 5), randn(dw2, (size_t)OC * C, 5);
        be->matmul_fwd(be, gm_as_act(o1), gm_as_act(inp), W, N, C, OC, 1, NULL);
        gm_cpu_matmul_fwd_naive(o2, inp, W, N, C, OC, 1, NULL);
        be->matmul_bwd(be, gm_as_act(di1), GM_GRAD_ADD, dw1, gm_as_act(dout), gm_as_act(inp), W, N, C, OC);
        gm_cpu_matmul_bwd_naive(di2, GM_GRAD_ADD, dw2, dout, inp, W, N, C, OC);
        double tol = GM_REAL_EPS * 64;
        cr_expect(th_rel_err(o1, o2, (size_t)N * OC) < tol, "fwd %dx%dx%d", N, C, OC);
        // With a scale and a residual: exactly s times the product just computed, plus res, per element
        // (the product is the same BLAS call; the epilogue is one multiply and one add).
        gm_real *res = malloc(sizeof(gm_real) * N * OC), *o3 = malloc(sizeof(gm_real) * N * OC);
        randn(res, (size_t)N * OC, 6);
        be->matmul_fwd(be, gm_as_act(o3), gm_as_act(inp), W, N, C, OC, 0.75, gm_as_act(res));
        for (size_t i = 0; i < (size_t)N * OC; i++)
            cr_assert_eq(o3[i], (gm_real)0.75 * o1[i] + res[i], "fwd + res %dx%dx%d at %zu", N, C, OC, i);
        gm_cpu_matmul_fwd_naive(o2, inp, W, N, C, OC, 0.75, res);
        cr_expect(th_rel_err(o3, o2, (size_t)N * OC) < tol, "fwd + res %dx%dx%d vs naive", N, C, OC);
        free(res), free(o3);
        cr_expect(th_rel_err(di1, di2, (size_t)N * C) < tol, "dinp %dx%dx%d", N, C, OC);
        cr_expect(th_rel_err(dw1, dw2, (size_t)OC * C) < tol, "dW %dx%dx%d", N, C, OC);
        free(inp), free(W), free(o1), free(o2), free(dout), free(di1), free(di2), free(dw1), free(dw2);
    }
}
