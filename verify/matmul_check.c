// The bf16 matmul's acceptance test; see matmul_check.h for the bound's derivation.
#include "matmul_check.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/bf16.h"

#define BF16_U 0.00390625               // 2^-8
#define TRUNCATED_ACC_U 1.1920928955078125e-07  // 2^-23: a truncating fp32 accumulator
#define FP32_U 5.9604644775390625e-08   // 2^-24

static double gamma_n(int n, double unit) { return n * unit / (1 - n * unit); }

double *mc_gemm_bound(const gm_real *prior, const gm_real *abs_sum, size_t n, int K, double operand_u) {
    double *bound = malloc(sizeof(double) * (n ? n : 1));
    cr_assert(bound);
    const double product = 2 * operand_u + operand_u * operand_u, grow = (1 + operand_u) * (1 + operand_u);
    const double acc = gamma_n(K + 1, TRUNCATED_ACC_U) + gamma_n(K + 1, FP32_U);
    // abs_sum comes from a double sum rounded once to fp32: (1 + 2^-24) covers that rounding.
    for (size_t i = 0; i < n; i++) {
        const double s = (double)abs_sum[i] * (1 + FP32_U), p = prior ? fabs((double)prior[i]) : 0;
        bound[i] = product * s + acc * (p + grow * s);
    }
    return bound;
}

typedef enum { AS_IS, ABSOLUTE, ROUNDED_BF16 } copy_kind;

// A malloc'd copy of x: its values, their magnitudes, or their bf16 roundings.
static gm_real *copy_of(const gm_real *x, size_t n, copy_kind kind) {
    gm_real *y = malloc(sizeof(gm_real) * (n ? n : 1));
    cr_assert(y);
    for (size_t i = 0; i < n; i++) y[i] = kind == ABSOLUTE ? fabsf(x[i]) : kind == ROUNDED_BF16 ? gm_round_bf16(x[i]) : x[i];
    return y;
}

// Holds the device output to both references: the fp32 CPU (bound from S with u = 2^-8) and the
// CPU on bf16 operands (bound from S of the rounded operands, u = 0); zero bounds demand equality
// (a gradient not asked for). act: dev is an activation (out, dinp), whose one store to the element
// adds the output term of matmul_check.h (cc_act_widen against these unrounded references);
// otherwise gm_real memory (dW).
static void expect_both(const cc_env *e, const char *what, const void *dev, int act, const gm_real *ref,
                        const gm_real *ref_rounded, const gm_real *prior, const gm_real *abs_sum,
                        const gm_real *abs_sum_rounded, size_t n, int K, int asked) {
    char label[200];
    double *bound = mc_gemm_bound(prior, abs_sum, n, K, BF16_U);
    double *bound_r = mc_gemm_bound(prior, abs_sum_rounded, n, K, 0);
    if (!asked) memset(bound, 0, sizeof(double) * n), memset(bound_r, 0, sizeof(double) * n);
    if (asked && act) cc_act_widen(e, bound, ref, n, 0), cc_act_widen(e, bound_r, ref_rounded, n, 0);
    cc_sync(e, what);
    gm_real *got = act ? cc_act_from_gpu(e, dev, n) : cc_from_gpu(e, dev, n);
    snprintf(label, sizeof label, "%s vs fp32 CPU", what);
    cc_check_within(e, label, got, ref, bound, n);
    snprintf(label, sizeof label, "%s vs CPU on the same bf16 operands", what);
    cc_check_within(e, label, got, ref_rounded, bound_r, n);
    free(bound), free(bound_r), free(got);
}

void mc_check_matmul(cc_env *e, int N, int C, int OC) {
    const size_t nx = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
    gm_real *inp = cc_randn(e, nx, 1.0), *W = cc_randn(e, nw, 1.0), *dout = cc_randn(e, no, 1.0);
    gm_real *dinp0 = cc_randn(e, nx, 1.0), *dW0 = cc_randn(e, nw, 1.0);
    // The activations first: their upload rounds them (to the element) for every reference below.
    gm_actval *ginp = cc_act_to_gpu(e, inp, nx), *gdout = cc_act_to_gpu(e, dout, no);
    gm_real *inp_r = copy_of(inp, nx, ROUNDED_BF16), *W_r = copy_of(W, nw, ROUNDED_BF16);
    gm_real *dout_r = copy_of(dout, no, ROUNDED_BF16);
    gm_real *inp_a = copy_of(inp, nx, ABSOLUTE), *W_a = copy_of(W, nw, ABSOLUTE), *dout_a = copy_of(dout, no, ABSOLUTE);
    gm_real *inp_ra = copy_of(inp_r, nx, ABSOLUTE), *W_ra = copy_of(W_r, nw, ABSOLUTE);
    gm_real *dout_ra = copy_of(dout_r, no, ABSOLUTE);
    char what[160];

    // Forward: out (N, OC) = inp (N, C) @ W^T; S = |inp| @ |W|^T.
    gm_real *out = malloc(sizeof(gm_real) * no), *out_r = malloc(sizeof(gm_real) * no);
    gm_real *s_out = malloc(sizeof(gm_real) * no), *s_out_r = malloc(sizeof(gm_real) * no);
    cr_assert(out && out_r && s_out && s_out_r);
    e->cpu->matmul_fwd(e->cpu, gm_as_act(out), gm_as_act(inp), W, N, C, OC, 1, NULL);
    gm_cpu_matmul_fwd_naive(out_r, inp_r, W_r, N, C, OC, 1, NULL);
    gm_cpu_matmul_fwd_naive(s_out, inp_a, W_a, N, C, OC, 1, NULL);
    gm_cpu_matmul_fwd_naive(s_out_r, inp_ra, W_ra, N, C, OC, 1, NULL);
    gm_real *gW = cc_to_gpu(e, W, sizeof(gm_real) * nw);
    gm_actval *gout = cc_act_poisoned(e, no);
    e->gpu->matmul_fwd(e->gpu, gout, ginp, gW, N, C, OC, 1, NULL);
    snprintf(what, sizeof what, "matmul_fwd %dx%dx%d", N, C, OC);
    expect_both(e, what, gout, 1, out, out_r, NULL, s_out, s_out_r, no, C, 1);

    // With a scale and a residual, as the output projections call it: out = s acc + res, rounded once.
    // s = 0.5 scales exactly (so does S with it); res is the prior the product adds to. out is
    // poisoned again, so an epilogue that read out instead of res fails.
    gm_real *res = cc_randn(e, no, 1.0);
    gm_actval *gres = cc_act_to_gpu(e, res, no), *gout_res = cc_act_poisoned(e, no);
    e->cpu->matmul_fwd(e->cpu, gm_as_act(out), gm_as_act(inp), W, N, C, OC, 0.5, gm_as_act(res));
    gm_cpu_matmul_fwd_naive(out_r, inp_r, W_r, N, C, OC, 0.5, res);
    for (size_t i = 0; i < no; i++) s_out[i] *= 0.5f, s_out_r[i] *= 0.5f;
    e->gpu->matmul_fwd(e->gpu, gout_res, ginp, gW, N, C, OC, 0.5, gres);
    snprintf(what, sizeof what, "matmul_fwd %dx%dx%d, 0.5 acc + res", N, C, OC);
    expect_both(e, what, gout_res, 1, out, out_r, res, s_out, s_out_r, no, C, 1);
    e->gpu->free(e->gpu, gres), e->gpu->free(e->gpu, gout_res);
    free(res);

    // Backward: dinp (N, C) += dout @ W, S = |dout| @ |W| (K = OC); dW (OC, C) += dout^T @ inp,
    // S = |dout|^T @ |inp| (K = N). Both gradients, only dinp, only dW, then only dinp set (over NaN
    // on every side: a kernel that read it would spread NaN).
    gm_real *s_di = calloc(nx ? nx : 1, sizeof(gm_real)), *s_dw = calloc(nw ? nw : 1, sizeof(gm_real));
    gm_real *s_di_r = calloc(nx ? nx : 1, sizeof(gm_real)), *s_dw_r = calloc(nw ? nw : 1, sizeof(gm_real));
    cr_assert(s_di && s_dw && s_di_r && s_dw_r);
    gm_cpu_matmul_bwd_naive(s_di, GM_GRAD_ADD, s_dw, dout_a, inp_a, W_a, N, C, OC);
    gm_cpu_matmul_bwd_naive(s_di_r, GM_GRAD_ADD, s_dw_r, dout_ra, inp_ra, W_ra, N, C, OC);
    gm_real *nan0 = malloc(sizeof(gm_real) * (nx ? nx : 1));
    cr_assert(nan0);
    for (size_t i = 0; i < nx; i++) nan0[i] = NAN;
    for (int mode = 0; mode < 4; mode++) {
        const int want_dinp = mode != 2, want_dW = mode < 2;
        const gm_grad_write w = mode == 3 ? GM_GRAD_SET : GM_GRAD_ADD;
        gm_real *di0 = w == GM_GRAD_SET ? nan0 : dinp0;
        gm_actval *gdi = cc_act_to_gpu(e, di0, nx);  // the prior rounded to the element on both sides
        gm_real *di = copy_of(di0, nx, AS_IS), *dw = copy_of(dW0, nw, AS_IS);
        gm_real *di_r = copy_of(di0, nx, AS_IS), *dw_r = copy_of(dW0, nw, AS_IS);
        e->cpu->matmul_bwd(e->cpu, gm_as_act(want_dinp ? di : NULL), w, want_dW ? dw : NULL, gm_as_act(dout), gm_as_act(inp), W, N, C, OC);
        gm_cpu_matmul_bwd_naive(want_dinp ? di_r : NULL, w, want_dW ? dw_r : NULL, dout_r, inp_r, W_r, N, C, OC);
        gm_real *gdw = cc_to_gpu(e, dW0, sizeof(gm_real) * nw);
        e->gpu->matmul_bwd(e->gpu, want_dinp ? gdi : NULL, w, want_dW ? gdw : NULL, gdout, ginp, gW, N, C, OC);
        snprintf(what, sizeof what, "matmul_bwd %dx%dx%d mode %d: dinp", N, C, OC, mode);
        expect_both(e, what, gdi, 1, di, di_r, w == GM_GRAD_SET ? NULL : dinp0, s_di, s_di_r, nx, OC, want_dinp);
        snprintf(what, sizeof what, "matmul_bwd %dx%dx%d mode %d: dW", N, C, OC, mode);
        expect_both(e, what, gdw, 0, dw, dw_r, dW0, s_dw, s_dw_r, nw, N, want_dW);
        e->gpu->free(e->gpu, gdi), e->gpu->free(e->gpu, gdw);
        free(di), free(dw), free(di_r), free(dw_r);
    }
    e->gpu->free(e->gpu, ginp), e->gpu->free(e->gpu, gW), e->gpu->free(e->gpu, gdout), e->gpu->free(e->gpu, gout);
    gm_real *host[] = {inp, W, dout, dinp0, dW0, inp_r, W_r, dout_r, inp_a, W_a, dout_a, inp_ra, W_ra, dout_ra,
                       out, out_r, s_out, s_out_r, s_di, s_dw, s_di_r, s_dw_r, nan0};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}
