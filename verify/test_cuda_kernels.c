// Every CUDA kernel except attention (test_cuda_attention.c) against the CPU reference backend,
// on fresh random inputs (the seed is in every failure message; GM_TEST_SEED=<n> replays it),
// odd shapes, forward outputs poisoned with NaN, backward gradients holding random prior values
// (the kernels must add into them). Skipped where no GPU is present.
//
// Activations (cuda_check.h): inputs go up through cc_act_to_gpu before the CPU reference runs, so
// both sides compute from the same values; an activation output is then held to its fp32 bar
// widened by one rounding to the element (cc_act_tol; the same bar where the element is fp32), a
// bitwise one to the CPU's result rounded to the element. gm_real outputs (rstd, losses, dtable,
// dpa, dpb) keep their fp32 bars: they are computed from identical inputs and never rounded.
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "base/error.h"
#include "cuda_check.h"
#include "matmul_check.h"

static gm_real *dup(const gm_real *x, size_t n) {
    gm_real *y = malloc(sizeof(gm_real) * (n ? n : 1));
    cr_assert(y);
    memcpy(y, x, sizeof(gm_real) * n);
    return y;
}

Test(cuda_backend, memory_ops) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const gm_backend *g = e.gpu;
    const size_t n = 100003;
    gm_real *zero = calloc(n, sizeof(gm_real)), *x = cc_randn(&e, n, 1.0);
    gm_real *d = g->alloc(g, sizeof(gm_real) * n);
    cr_assert(d, "%s", gm_error());
    cc_expect_equal(&e, "alloc is zeroed", d, zero, n);
    g->upload(g, d, x, sizeof(gm_real) * n);
    cc_expect_equal(&e, "upload/download round trip", d, x, n);
    gm_real *d2 = cc_poisoned(&e, n);
    g->copy(g, d2, d, sizeof(gm_real) * n);
    cc_expect_equal(&e, "copy", d2, x, n);
    // Overlapping copy, memmove semantics: shift right by 7, then left by 3.
    gm_real *want = dup(x, n);
    memmove(want + 7, want, sizeof(gm_real) * (n - 7));
    g->copy(g, d + 7, d, sizeof(gm_real) * (n - 7));
    cc_expect_equal(&e, "overlapping copy (right)", d, want, n);
    memmove(want, want + 3, sizeof(gm_real) * (n - 3));
    g->copy(g, d, d + 3, sizeof(gm_real) * (n - 3));
    cc_expect_equal(&e, "overlapping copy (left)", d, want, n);
    g->fill(g, d, 2.5f, n - 1);
    for (size_t i = 0; i + 1 < n; i++) want[i] = 2.5f;
    cc_expect_equal(&e, "fill", d, want, n);
    // +0 goes to the driver's memset, -0 to the kernel: each leaves its own bits, and only its range
    // (from an element past a 16-byte boundary, to one before the end).
    g->fill(g, d + 1, 0.0f, n - 3);
    for (size_t i = 1; i + 2 < n; i++) want[i] = 0.0f;
    cc_expect_equal(&e, "fill +0", d, want, n);
    g->fill(g, d + 2, -0.0f, n - 5);
    for (size_t i = 2; i + 3 < n; i++) want[i] = -0.0f;
    cc_expect_equal(&e, "fill -0", d, want, n);
    g->free(g, d), g->free(g, d2);
    cc_sync(&e, "free");
    free(zero), free(x), free(want);
}

// A wrong shape is reported by gm_cuda_sync, not ignored; once: the next sync succeeds, and the
// backend keeps working.
Test(cuda_backend, bad_shape_is_reported_once) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    gm_actval *buf = cc_act_poisoned(&e, 130);
    gm_real *lse = cc_poisoned(&e, 4);
    gm_attn_mask m = {NULL, 128, 0};
    e.gpu->attn_fwd(e.gpu, buf, lse, buf, buf, buf, 1, 1, 1, 130, 1.0, m);
    cr_expect_eq(gm_cuda_sync(e.gpu), -1);
    cr_expect(strstr(gm_error(), "head_dim") != NULL, "message: %s", gm_error());
    cr_expect_eq(gm_cuda_sync(e.gpu), 0, "the error was reported twice: %s", gm_error());
    gm_real want[4] = {1.5f, 1.5f, 1.5f, 1.5f};
    e.gpu->fill(e.gpu, lse, 1.5f, 4);
    cc_expect_equal(&e, "fill after a reported error", lse, want, 4);
    e.gpu->free(e.gpu, buf), e.gpu->free(e.gpu, lse);
}

// A device fault (a kernel writing to an address that is not device memory) is reported by the
// next sync and by every later one: the CUDA context is unusable after it. Its own suite, so the
// compute-sanitizer runs (which would flag this fault) can leave it out.
Test(cuda_fault, device_fault_stays) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    e.gpu->fill(e.gpu, (gm_real *)(uintptr_t)0x100, 1.0f, 1000);
    cr_expect_eq(gm_cuda_sync(e.gpu), -1, "a write to address 0x100 passed");
    cr_expect(strstr(gm_error(), "faulted") != NULL, "message: %s", gm_error());
    cr_expect_eq(gm_cuda_sync(e.gpu), -1, "the fault was forgotten");
}

Test(cuda_kernels, embedding_bitwise_equal) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    // {N, V, C, hot}: hot > 0 draws half of the ids from the first `hot` rows (long runs).
    const int cases[][4] = {{1, 1, 1, 0}, {37, 5, 7, 0}, {1000, 50, 768, 3}, {4099, 50304, 64, 2}, {513, 1, 33, 0}};
    int ran = 0;
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
        int N = cases[s][0], V = cases[s][1], C = cases[s][2], hot = cases[s][3];
        char what[128];
        snprintf(what, sizeof what, "embedding N=%d V=%d C=%d", N, V, C);
        if (!cc_case_fits(what, (double)(N + V) * C)) continue;
        ran++;
        int32_t *ids = cc_randint(&e, (size_t)N, V), *pick = cc_randint(&e, (size_t)N, 2);
        if (hot)
            for (int i = 0; i < N; i++)
                if (pick[i]) ids[i] %= hot;
        gm_real *table = cc_randn(&e, (size_t)V * C, 1.0), *dout = cc_randn(&e, (size_t)N * C, 1.0);
        gm_real *dtable = cc_randn(&e, (size_t)V * C, 1.0), *out = malloc(sizeof(gm_real) * N * C);
        gm_real *dtable_cpu = dup(dtable, (size_t)V * C);
        gm_actval *gdout = cc_act_to_gpu(&e, dout, (size_t)N * C), *gout = cc_act_poisoned(&e, (size_t)N * C);
        e.cpu->embed_fwd(e.cpu, gm_as_act(out), ids, table, N, C);
        e.cpu->embed_bwd(e.cpu, dtable_cpu, ids, gm_as_act(dout), N, V, C);

        int32_t *gids = cc_to_gpu(&e, ids, sizeof(int32_t) * N);
        gm_real *gtable = cc_to_gpu(&e, table, sizeof(gm_real) * V * C);
        gm_real *gdtable = cc_to_gpu(&e, dtable, sizeof(gm_real) * V * C);
        e.gpu->embed_fwd(e.gpu, gout, gids, gtable, N, C);
        e.gpu->embed_bwd(e.gpu, gdtable, gids, gdout, N, V, C);
        // A row of the fp32 table, stored once to the element.
        snprintf(what, sizeof what, "embed_fwd N=%d V=%d C=%d", N, V, C);
        cc_act_expect_equal(&e, what, gout, out, (size_t)N * C);
        // Tokens in position order per row, from the prior value: the CPU's order exactly.
        snprintf(what, sizeof what, "embed_bwd N=%d V=%d C=%d", N, V, C);
        cc_expect_equal(&e, what, gdtable, dtable_cpu, (size_t)V * C);
        e.gpu->free(e.gpu, gids), e.gpu->free(e.gpu, gtable), e.gpu->free(e.gpu, gout);
        e.gpu->free(e.gpu, gdout), e.gpu->free(e.gpu, gdtable);
        free(ids), free(pick), free(table), free(dout), free(dtable), free(out), free(dtable_cpu);
    }
    cc_expect_some_ran(ran);
}

// Forward and backward (into random prior gradients) against the fp32 CPU and the CPU on the
// same bf16 operands, element-wise at the bounds of matmul_check.h.
Test(cuda_kernels, matmul_bf16_fwd_bwd) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const int shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {64, 33, 97}, {129, 64, 200}, {300, 768, 1000}};
    int ran = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        char what[64];
        snprintf(what, sizeof what, "matmul %dx%dx%d", N, C, OC);
        if (!cc_case_fits(what, (double)N * C * OC)) continue;
        ran++;
        mc_check_matmul(&e, N, C, OC);
    }
    cc_expect_some_ran(ran);
}

Test(cuda_kernels, rmsnorm_fwd_bwd) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const int shapes[][2] = {{1, 1}, {5, 7}, {33, 64}, {100, 768}, {7, 1000}, {3, 4097}};
    int ran = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)N * C;
        char what[96];
        snprintf(what, sizeof what, "rmsnorm N=%d C=%d", N, C);
        if (!cc_case_fits(what, (double)n)) continue;
        ran++;
        const double eps = 1e-6;
        gm_real *x = cc_randn(&e, n, 3.0), *dy = cc_randn(&e, n, 1.0), *dx0 = cc_randn(&e, n, 1.0);
        gm_actval *gx = cc_act_to_gpu(&e, x, n), *gdy = cc_act_to_gpu(&e, dy, n), *gdx = cc_act_to_gpu(&e, dx0, n);
        gm_actval *gout = cc_act_poisoned(&e, n);
        gm_real *grstd = cc_poisoned(&e, (size_t)N);
        gm_real *out = malloc(sizeof(gm_real) * n), *rstd = malloc(sizeof(gm_real) * N), *dx = dup(dx0, n);
        e.cpu->rmsnorm_fwd(e.cpu, gm_as_act(out), rstd, gm_as_act(x), N, C, eps);
        e.cpu->rmsnorm_bwd(e.cpu, gm_as_act(dx), GM_GRAD_ADD, gm_as_act(dy), gm_as_act(x), rstd, N, C);
        e.gpu->rmsnorm_fwd(e.gpu, gout, grstd, gx, N, C, eps);
        e.gpu->rmsnorm_bwd(e.gpu, gdx, GM_GRAD_ADD, gdy, gx, grstd, N, C);
        // out and dx (added into the same prior on both sides) round once to the element; rstd is fp32.
        const double tol = cc_act_tol(&e, CC_TOL_FP32);
        snprintf(what, sizeof what, "rmsnorm_fwd out N=%d C=%d", N, C);
        cc_act_expect_close(&e, what, gout, out, n, tol);
        snprintf(what, sizeof what, "rmsnorm_fwd rstd N=%d C=%d", N, C);
        cc_expect_close(&e, what, grstd, rstd, (size_t)N, CC_TOL_FP32);
        snprintf(what, sizeof what, "rmsnorm_bwd N=%d C=%d", N, C);
        cc_act_expect_close(&e, what, gdx, dx, n, tol);
        // In place (out aliasing inp), as a caller may do.
        e.gpu->rmsnorm_fwd(e.gpu, gx, grstd, gx, N, C, eps);
        snprintf(what, sizeof what, "rmsnorm_fwd in place N=%d C=%d", N, C);
        cc_act_expect_close(&e, what, gx, out, n, tol);
        e.gpu->free(e.gpu, gx), e.gpu->free(e.gpu, gdy), e.gpu->free(e.gpu, gdx);
        e.gpu->free(e.gpu, gout), e.gpu->free(e.gpu, grstd);
        free(x), free(dy), free(dx0), free(out), free(rstd), free(dx);
    }
    cc_expect_some_ran(ran);
}

// A residual mix (learnable coefficients read from device memory) or add, then RMSNorm, fused,
// against the CPU's lincomb then rmsnorm. With an element of unit u the contract (the composition
// of lincomb_fwd and rmsnorm_fwd) normalizes the STORED sum s' = s (1 + d_i), |d_i| <= u: its mean
// square moves by a factor in [(1 - u)^2, (1 + u)^2] (eps only shrinks that), so rstd by one in
// [1 / (1 + u), 1 / (1 - u)]: relative u / (1 - u); out_i = fl(s'_i rstd') then moves from the
// fp32 s_i rstd by at most (1 + u)^2 / (1 - u) - 1 relative (the sum's rounding, rstd's, the
// store's). A kernel that normalizes the fp32 sum instead stays inside both. sum rounds once: u.
Test(cuda_kernels, lincomb_rmsnorm_fwd) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const int shapes[][2] = {{1, 1}, {5, 7}, {33, 64}, {100, 768}, {3, 4097}};
    int ran = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int learnable = 0; learnable < 2; learnable++) {
            int N = shapes[s][0], C = shapes[s][1];
            size_t n = (size_t)N * C;
            char what[96];
            snprintf(what, sizeof what, "lincomb_rmsnorm N=%d C=%d%s", N, C, learnable ? " learnable" : "");
            if (!cc_case_fits(what, (double)n)) continue;
            ran++;
            gm_real *x = cc_randn(&e, n, 3.0), *y = cc_randn(&e, n, 1.0), coef[2] = {0.8125f, -1.3f};
            gm_actval *gx = cc_act_to_gpu(&e, x, n), *gy = cc_act_to_gpu(&e, y, n);
            gm_real *sum = malloc(sizeof(gm_real) * n), *out = malloc(sizeof(gm_real) * n);
            gm_real *rstd = malloc(sizeof(gm_real) * N);
            const gm_real *pa = learnable ? &coef[0] : NULL, *pb = learnable ? &coef[1] : NULL;
            e.cpu->lincomb_fwd(e.cpu, gm_as_act(sum), 0.75, pa, gm_as_act(x), -1.25, pb, gm_as_act(y), n, 1, 1);
            e.cpu->rmsnorm_fwd(e.cpu, gm_as_act(out), rstd, gm_as_act(sum), N, C, 1e-6);
            gm_real *gcoef = cc_to_gpu(&e, coef, sizeof coef), *grstd = cc_poisoned(&e, (size_t)N);
            gm_actval *gsum = cc_act_poisoned(&e, n), *gout = cc_act_poisoned(&e, n);
            e.gpu->lincomb_rmsnorm_fwd(e.gpu, gsum, gout, grstd, 0.75, learnable ? gcoef : NULL, gx, -1.25,
                                       learnable ? gcoef + 1 : NULL, gy, N, C, 1e-6);
            const double u = cc_act_unit(&e);
            cc_act_expect_close(&e, what, gsum, sum, n, cc_act_tol(&e, CC_TOL_FP32));
            cc_act_expect_close(&e, what, gout, out, n, cc_tol_plus(CC_TOL_FP32, (1 + u) * (1 + u) / (1 - u) - 1));
            cc_expect_close(&e, what, grstd, rstd, (size_t)N, cc_tol_plus(CC_TOL_FP32, u / (1 - u)));
            void *dev[] = {gx, gy, gcoef, gsum, gout, grstd};
            for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++) e.gpu->free(e.gpu, dev[k]);
            free(x), free(y), free(sum), free(out), free(rstd);
        }
    cc_expect_some_ran(ran);
}

// (B, T, NH, HD) of the rotary tests: a single pair, small heads, the model's 64 and 128, an odd count.
static const int rotary_shapes[][4] = {{1, 1, 1, 2}, {2, 5, 3, 8}, {2, 17, 4, 64}, {1, 9, 2, 128}, {3, 33, 1, 6}};

// Rotary tables (T, h2) at random frequencies (malloc'd).
static void rotary_tables(cc_env *e, int T, int h2, gm_real **cos_t, gm_real **sin_t) {
    const size_t nt = (size_t)T * h2;
    gm_real *freq = cc_randn(e, (size_t)h2, 1.0);
    *cos_t = malloc(sizeof(gm_real) * nt), *sin_t = malloc(sizeof(gm_real) * nt);
    cr_assert(*cos_t && *sin_t);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h2; i++)
            (*cos_t)[(size_t)t * h2 + i] = cosf(t * freq[i]), (*sin_t)[(size_t)t * h2 + i] = sinf(t * freq[i]);
    free(freq);
}

// A head tensor's view in a fused projection: (tokens, 2C) rows, the tensor in the second half (k's
// place, token stride 2C), the first half other values. x and the gradient's prior d0 go up that way;
// view_end checks the gradient's view against ref and that the other half is as it went up.
typedef struct {
    gm_actval *gx, *gd, *gx_view, *gd_view;
    gm_real *d_wide;  // d0's rows as uploaded (rounded to the element)
    size_t tokens, C;
} view_case;

static gm_real *widened(const gm_real *x, const gm_real *other, size_t tokens, size_t C) {
    gm_real *w = malloc(sizeof(gm_real) * 2 * tokens * C);
    cr_assert(w);
    for (size_t r = 0; r < tokens; r++)
        memcpy(w + r * 2 * C, other + r * C, sizeof(gm_real) * C), memcpy(w + r * 2 * C + C, x + r * C, sizeof(gm_real) * C);
    return w;
}

static view_case view_begin(cc_env *e, const gm_real *x, const gm_real *d0, size_t tokens, size_t C) {
    view_case v = {.tokens = tokens, .C = C};
    gm_real *other = cc_randn(e, tokens * C, 1.0), *x_wide = widened(x, other, tokens, C);
    v.d_wide = widened(d0, other, tokens, C);
    v.gx = cc_act_to_gpu(e, x_wide, 2 * tokens * C), v.gd = cc_act_to_gpu(e, v.d_wide, 2 * tokens * C);
    v.gx_view = gm_act_at(e->gpu, v.gx, C), v.gd_view = gm_act_at(e->gpu, v.gd, C);
    free(other), free(x_wide);
    return v;
}

static void view_end(cc_env *e, view_case *v, const char *what, const gm_real *ref, double tol) {
    for (size_t r = 0; r < v->tokens; r++) memcpy(v->d_wide + r * 2 * v->C + v->C, ref + r * v->C, sizeof(gm_real) * v->C);
    cc_act_expect_close(e, what, v->gd, v->d_wide, 2 * v->tokens * v->C, tol);
    e->gpu->free(e->gpu, v->gx), e->gpu->free(e->gpu, v->gd);
    free(v->d_wide);
}

Test(cuda_kernels, rotary_fwd_bwd) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    int ran = 0;
    for (size_t s = 0; s < sizeof rotary_shapes / sizeof rotary_shapes[0]; s++) {
        const int *sh = rotary_shapes[s], B = sh[0], T = sh[1], NH = sh[2], HD = sh[3], h2 = HD / 2;
        size_t n = (size_t)B * T * NH * HD, nt = (size_t)T * h2;
        char what[96];
        snprintf(what, sizeof what, "rotary %dx%dx%dx%d", B, T, NH, HD);
        if (!cc_case_fits(what, (double)n)) continue;
        ran++;
        gm_real *cos_t, *sin_t;
        rotary_tables(&e, T, h2, &cos_t, &sin_t);
        gm_real *x = cc_randn(&e, n, 1.0), *dy = cc_randn(&e, n, 1.0), *dx0 = cc_randn(&e, n, 1.0);
        gm_actval *gx = cc_act_to_gpu(&e, x, n), *gdy = cc_act_to_gpu(&e, dy, n), *gdx = cc_act_to_gpu(&e, dx0, n);
        gm_actval *gout = cc_act_poisoned(&e, n);
        gm_real *out = malloc(sizeof(gm_real) * n), *dx = dup(dx0, n);
        e.cpu->rotary_fwd(e.cpu, gm_as_act(out), gm_as_act(x), cos_t, sin_t, B, T, NH, HD, NH * HD);
        e.cpu->rotary_bwd(e.cpu, gm_as_act(dx), GM_GRAD_ADD, gm_as_act(dy), cos_t, sin_t, B, T, NH, HD, NH * HD);
        gm_real *gc = cc_to_gpu(&e, cos_t, sizeof(gm_real) * nt), *gs = cc_to_gpu(&e, sin_t, sizeof(gm_real) * nt);
        e.gpu->rotary_fwd(e.gpu, gout, gx, gc, gs, B, T, NH, HD, NH * HD);
        e.gpu->rotary_bwd(e.gpu, gdx, GM_GRAD_ADD, gdy, gc, gs, B, T, NH, HD, NH * HD);
        // out and dx (into the same prior on both sides) round once to the element.
        const double tol = cc_act_tol(&e, CC_TOL_FP32);
        snprintf(what, sizeof what, "rotary_fwd %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gout, out, n, tol);
        snprintf(what, sizeof what, "rotary_bwd %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gdx, dx, n, tol);
        // From and into the view of a fused projection: k's half of (B T, 2C) rows, token stride 2C,
        // q's half holding values that must stay.
        view_case vc = view_begin(&e, x, dx0, B * T, NH * HD);
        e.gpu->rotary_fwd(e.gpu, gout, vc.gx_view, gc, gs, B, T, NH, HD, 2 * NH * HD);
        snprintf(what, sizeof what, "rotary_fwd from a view %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gout, out, n, tol);
        e.gpu->rotary_bwd(e.gpu, vc.gd_view, GM_GRAD_ADD, gdy, gc, gs, B, T, NH, HD, 2 * NH * HD);
        snprintf(what, sizeof what, "rotary_bwd into a view %dx%dx%dx%d", B, T, NH, HD);
        view_end(&e, &vc, what, dx, tol);
        e.gpu->rotary_fwd(e.gpu, gx, gx, gc, gs, B, T, NH, HD, NH * HD);  // in place
        snprintf(what, sizeof what, "rotary_fwd in place %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gx, out, n, tol);
        e.gpu->free(e.gpu, gc), e.gpu->free(e.gpu, gs), e.gpu->free(e.gpu, gx), e.gpu->free(e.gpu, gdy);
        e.gpu->free(e.gpu, gdx), e.gpu->free(e.gpu, gout);
        free(cos_t), free(sin_t), free(x), free(dy), free(dx0), free(out), free(dx);
    }
    cc_expect_some_ran(ran);
}

// QK-norm then rotary fused, against the CPU's composition of rmsnorm and rotary: forward, and the
// backward set over NaN and added into a prior. The normed tensor (and in the backward rotary_bwd's
// result) is never stored (backend.h), so out and dinp round once, at their store: cc_act_tol;
// rstd is fp32. The backward reads the CPU's rstd on both sides.
Test(cuda_kernels, qknorm_rotary_fwd_bwd) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    int ran = 0;
    for (size_t s = 0; s < sizeof rotary_shapes / sizeof rotary_shapes[0]; s++) {
        const int *sh = rotary_shapes[s], B = sh[0], T = sh[1], NH = sh[2], HD = sh[3], h2 = HD / 2;
        size_t n = (size_t)B * T * NH * HD, nt = (size_t)T * h2, rows = (size_t)B * T * NH;
        char what[96];
        snprintf(what, sizeof what, "qknorm_rotary %dx%dx%dx%d", B, T, NH, HD);
        if (!cc_case_fits(what, (double)n)) continue;
        ran++;
        gm_real *cos_t, *sin_t;
        rotary_tables(&e, T, h2, &cos_t, &sin_t);
        gm_real *x = cc_randn(&e, n, 1.0), *dy = cc_randn(&e, n, 1.0), *dx0 = cc_randn(&e, n, 1.0);
        gm_actval *gx = cc_act_to_gpu(&e, x, n), *gdy = cc_act_to_gpu(&e, dy, n), *gadd = cc_act_to_gpu(&e, dx0, n);
        gm_actval *gout = cc_act_poisoned(&e, n), *gset = cc_act_poisoned(&e, n);
        gm_real *out = malloc(sizeof(gm_real) * n), *rstd = malloc(sizeof(gm_real) * rows);
        gm_real *dx_set = malloc(sizeof(gm_real) * n), *dx_add = dup(dx0, n);
        e.cpu->rmsnorm_fwd(e.cpu, gm_as_act(out), rstd, gm_as_act(x), (int)rows, HD, 1e-6);
        e.cpu->rotary_fwd(e.cpu, gm_as_act(out), gm_as_act(out), cos_t, sin_t, B, T, NH, HD, NH * HD);
        gm_real *dn = malloc(sizeof(gm_real) * n);
        e.cpu->rotary_bwd(e.cpu, gm_as_act(dn), GM_GRAD_SET, gm_as_act(dy), cos_t, sin_t, B, T, NH, HD, NH * HD);
        e.cpu->rmsnorm_bwd(e.cpu, gm_as_act(dx_set), GM_GRAD_SET, gm_as_act(dn), gm_as_act(x), rstd, (int)rows, HD);
        e.cpu->rmsnorm_bwd(e.cpu, gm_as_act(dx_add), GM_GRAD_ADD, gm_as_act(dn), gm_as_act(x), rstd, (int)rows, HD);
        gm_real *gc = cc_to_gpu(&e, cos_t, sizeof(gm_real) * nt), *gs = cc_to_gpu(&e, sin_t, sizeof(gm_real) * nt);
        gm_real *grstd = cc_to_gpu(&e, rstd, sizeof(gm_real) * rows), *grs = cc_poisoned(&e, rows);
        e.gpu->qknorm_rotary_fwd(e.gpu, gout, grs, gx, gc, gs, B, T, NH, HD, NH * HD, 1e-6);
        e.gpu->qknorm_rotary_bwd(e.gpu, gset, GM_GRAD_SET, gdy, gx, grstd, gc, gs, B, T, NH, HD, NH * HD);
        e.gpu->qknorm_rotary_bwd(e.gpu, gadd, GM_GRAD_ADD, gdy, gx, grstd, gc, gs, B, T, NH, HD, NH * HD);
        const double tol = cc_act_tol(&e, CC_TOL_FP32);
        snprintf(what, sizeof what, "qknorm_rotary_fwd %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gout, out, n, tol);
        snprintf(what, sizeof what, "qknorm_rotary_fwd rstd %dx%dx%dx%d", B, T, NH, HD);
        cc_expect_close(&e, what, grs, rstd, rows, CC_TOL_FP32);
        snprintf(what, sizeof what, "qknorm_rotary_bwd set %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gset, dx_set, n, tol);
        snprintf(what, sizeof what, "qknorm_rotary_bwd add %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gadd, dx_add, n, tol);
        // From and into the view of a fused projection (as in rotary_fwd_bwd): the forward from it,
        // the backward added into it (its input the view too).
        view_case vc = view_begin(&e, x, dx0, B * T, NH * HD);
        e.gpu->qknorm_rotary_fwd(e.gpu, gout, grs, vc.gx_view, gc, gs, B, T, NH, HD, 2 * NH * HD, 1e-6);
        snprintf(what, sizeof what, "qknorm_rotary_fwd from a view %dx%dx%dx%d", B, T, NH, HD);
        cc_act_expect_close(&e, what, gout, out, n, tol);
        e.gpu->qknorm_rotary_bwd(e.gpu, vc.gd_view, GM_GRAD_ADD, gdy, vc.gx_view, grstd, gc, gs, B, T, NH, HD,
                                 2 * NH * HD);
        snprintf(what, sizeof what, "qknorm_rotary_bwd added into a view %dx%dx%dx%d", B, T, NH, HD);
        view_end(&e, &vc, what, dx_add, tol);
        void *dev[] = {gc, gs, gx, gdy, grstd, gout, grs, gset, gadd};
        for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++) e.gpu->free(e.gpu, dev[k]);
        gm_real *host[] = {cos_t, sin_t, x, dy, dx0, out, rstd, dx_set, dx_add, dn};
        for (size_t k = 0; k < sizeof host / sizeof host[0]; k++) free(host[k]);
    }
    cc_expect_some_ran(ran);
}

Test(cuda_kernels, activations_fwd_bwd) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const size_t sizes[] = {1, 1000, (1u << 20) + 3};
    int ran = 0;
    for (int a = 0; a < 2; a++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            gm_act act = a ? GM_ACT_RELU2 : GM_ACT_GELU;
            size_t n = sizes[s];
            char what[96];
            snprintf(what, sizeof what, "act %s n=%zu", a ? "relu2" : "gelu", n);
            if (!cc_case_fits(what, (double)n)) continue;
            ran++;
            gm_real *x = cc_randn(&e, n, 3.0), *dy = cc_randn(&e, n, 1.0), *dx0 = cc_randn(&e, n, 1.0);
            for (size_t i = 0; i < n; i += 17) x[i] = 0;  // the kink of ReLU^2
            gm_actval *gx = cc_act_to_gpu(&e, x, n), *gdy = cc_act_to_gpu(&e, dy, n), *gdx = cc_act_to_gpu(&e, dx0, n);
            gm_actval *gout = cc_act_poisoned(&e, n);
            gm_real *out = malloc(sizeof(gm_real) * n), *dx = dup(dx0, n);
            e.cpu->act_fwd(e.cpu, act, gm_as_act(out), gm_as_act(x), n);
            e.cpu->act_bwd(e.cpu, act, gm_as_act(dx), GM_GRAD_ADD, gm_as_act(dy), gm_as_act(x), n);
            e.gpu->act_fwd(e.gpu, act, gout, gx, n);
            e.gpu->act_bwd(e.gpu, act, gdx, GM_GRAD_ADD, gdy, gx, n);
            // out and dx (into the same prior on both sides) round once to the element.
            snprintf(what, sizeof what, "act_fwd %s n=%zu", a ? "relu2" : "gelu", n);
            cc_act_expect_close(&e, what, gout, out, n, cc_act_tol(&e, CC_TOL_FP32));
            snprintf(what, sizeof what, "act_bwd %s n=%zu", a ? "relu2" : "gelu", n);
            cc_act_expect_close(&e, what, gdx, dx, n, cc_act_tol(&e, CC_TOL_FP32));
            e.gpu->free(e.gpu, gx), e.gpu->free(e.gpu, gdy), e.gpu->free(e.gpu, gdx), e.gpu->free(e.gpu, gout);
            free(x), free(dy), free(dx0), free(out), free(dx);
        }
    cc_expect_some_ran(ran);
}

// Every combination of learnable a, learnable b and a present y; plus the aliasing a residual
// stream uses (out = x in place; dx = dout). out, dx and dy round once to the element at their
// store (cc_act_tol), dy == dx too: the one buffer gets dx's put then dy's composed before one
// store (backend.h's order). dpa and dpb are fp32 sums of identical inputs.
Test(cuda_kernels, lincomb_fwd_bwd) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    // n % 4 != 0: the scalar path; n % 4 == 0 (device allocations are 16-byte aligned): the 128-bit
    // one, with a last chunk of one group of 4 (3*4096 + 4) and whole chunks (2^20).
    const size_t sizes[] = {1, 4097, 3 * 4096 + 4, (1u << 20) + 17, 1u << 20};
    const double tol = cc_act_tol(&e, CC_TOL_FP32);
    int ran = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int combo = 0; combo < 8; combo++) {
            int has_pa = combo & 1, has_pb = combo & 2, has_y = combo & 4;
            size_t n = sizes[s];
            char what[128];
            snprintf(what, sizeof what, "lincomb n=%zu pa=%d pb=%d y=%d", n, !!has_pa, !!has_pb, !!has_y);
            if (!cc_case_fits(what, (double)n)) continue;
            ran++;
            const double ca = 0.7, cb = -1.3;
            gm_real *x = cc_randn(&e, n, 1.0), *y = cc_randn(&e, n, 1.0), *dout = cc_randn(&e, n, 1.0);
            gm_real *dx0 = cc_randn(&e, n, 1.0), *dy0 = cc_randn(&e, n, 1.0), *sc = cc_randn(&e, 4, 1.0);
            gm_actval *gx = cc_act_to_gpu(&e, x, n), *gy = cc_act_to_gpu(&e, y, n), *gdout = cc_act_to_gpu(&e, dout, n);
            gm_actval *gdx = cc_act_to_gpu(&e, dx0, n), *gdy = cc_act_to_gpu(&e, dy0, n), *gout = cc_act_poisoned(&e, n);
            // sc: a, b, prior dpa, prior dpb
            gm_real *out = malloc(sizeof(gm_real) * n), *dx = dup(dx0, n), *dy = dup(dy0, n), *dsc = dup(sc, 4);
            const gm_real *pa = has_pa ? &sc[0] : NULL, *pb = has_pb ? &sc[1] : NULL, *yy = has_y ? y : NULL;
            e.cpu->lincomb_fwd(e.cpu, gm_as_act(out), ca, pa, gm_as_act(x), cb, pb, gm_as_act(yy), n, 1, 1);
            e.cpu->lincomb_bwd(e.cpu, gm_as_act(dx), GM_GRAD_ADD, gm_as_act(has_y ? dy : NULL), GM_GRAD_ADD,
                               has_pa ? &dsc[2] : NULL, has_pb ? &dsc[3] : NULL, gm_as_act(dout), ca, pa, gm_as_act(x),
                               cb, pb, gm_as_act(yy), n, 1, 1);

            gm_real *gsc = cc_to_gpu(&e, sc, sizeof(gm_real) * 4);
            const gm_real *gpa = has_pa ? &gsc[0] : NULL, *gpb = has_pb ? &gsc[1] : NULL;
            const gm_actval *gyy = has_y ? gy : NULL;
            e.gpu->lincomb_fwd(e.gpu, gout, ca, gpa, gx, cb, gpb, gyy, n, 1, 1);
            e.gpu->lincomb_bwd(e.gpu, gdx, GM_GRAD_ADD, has_y ? gdy : NULL, GM_GRAD_ADD, has_pa ? &gsc[2] : NULL,
                               has_pb ? &gsc[3] : NULL, gdout, ca, gpa, gx, cb, gpb, gyy, n, 1, 1);
            snprintf(what, sizeof what, "lincomb_fwd n=%zu pa=%d pb=%d y=%d", n, !!has_pa, !!has_pb, !!has_y);
            cc_act_expect_close(&e, what, gout, out, n, tol);
            snprintf(what, sizeof what, "lincomb_bwd dx n=%zu pa=%d pb=%d y=%d", n, !!has_pa, !!has_pb, !!has_y);
            cc_act_expect_close(&e, what, gdx, dx, n, tol);
            snprintf(what, sizeof what, "lincomb_bwd dy n=%zu pa=%d pb=%d y=%d", n, !!has_pa, !!has_pb, !!has_y);
            cc_act_expect_close(&e, what, gdy, dy, n, tol);
            snprintf(what, sizeof what, "lincomb_bwd dpa, dpb n=%zu pa=%d pb=%d y=%d", n, !!has_pa, !!has_pb, !!has_y);
            cc_expect_close(&e, what, gsc + 2, dsc + 2, 2, CC_TOL_FP32);
            // Everything the contract lets alias at once, with the scalar gradients on: dx is dout, and dy
            // is dx (dx's write first, then dy's), under both write modes of dx. The scalars are fixed
            // (a = 2.1 or 0.7, b = 1.3 or -1.3): |a + b| and |1 + a + b| stay >= 0.4, so no cancellation
            // magnifies the rounding where the GPU fuses a multiply-add and the CPU does not.
            for (int w = 0; w < 2; w++) {
                const gm_grad_write dxw = w ? GM_GRAD_ADD : GM_GRAD_SET;
                gm_real *buf = dup(dout, n), *bsc = dup(sc, 4);
                bsc[0] = 3, bsc[1] = -1;
                gm_actval *gbuf = cc_act_to_gpu(&e, buf, n);
                gm_real *gbsc = cc_to_gpu(&e, bsc, sizeof(gm_real) * 4);
                e.cpu->lincomb_bwd(e.cpu, gm_as_act(buf), dxw, gm_as_act(has_y ? buf : NULL), GM_GRAD_ADD,
                                   has_pa ? &bsc[2] : NULL, has_pb ? &bsc[3] : NULL, gm_as_act(buf), ca,
                                   has_pa ? &bsc[0] : NULL, gm_as_act(x), cb, has_pb ? &bsc[1] : NULL, gm_as_act(yy), n,
                                   1, 1);
                e.gpu->lincomb_bwd(e.gpu, gbuf, dxw, has_y ? gbuf : NULL, GM_GRAD_ADD, has_pa ? &gbsc[2] : NULL,
                                   has_pb ? &gbsc[3] : NULL, gbuf, ca, has_pa ? &gbsc[0] : NULL, gx, cb,
                                   has_pb ? &gbsc[1] : NULL, gyy, n, 1, 1);
                snprintf(what, sizeof what, "lincomb_bwd dx = dy = dout, dx %s, n=%zu pa=%d pb=%d y=%d",
                         w ? "add" : "set", n, !!has_pa, !!has_pb, !!has_y);
                cc_act_expect_close(&e, what, gbuf, buf, n, tol);
                cc_expect_close(&e, what, gbsc + 2, bsc + 2, 2, CC_TOL_FP32);
                e.gpu->free(e.gpu, gbuf), e.gpu->free(e.gpu, gbsc);
                free(buf), free(bsc);
            }
            // Aliasing: out = x (in place), then dx = dout (the same buffer).
            e.gpu->lincomb_fwd(e.gpu, gx, ca, gpa, gx, cb, gpb, gyy, n, 1, 1);
            snprintf(what, sizeof what, "lincomb_fwd in place n=%zu", n);
            cc_act_expect_close(&e, what, gx, out, n, tol);
            gm_real *alias = dup(dout, n);
            e.cpu->lincomb_bwd(e.cpu, gm_as_act(alias), GM_GRAD_ADD, NULL, GM_GRAD_ADD, NULL, NULL, gm_as_act(alias), ca,
                               pa, gm_as_act(x), cb, pb, gm_as_act(yy), n, 1, 1);
            e.gpu->lincomb_bwd(e.gpu, gdout, GM_GRAD_ADD, NULL, GM_GRAD_ADD, NULL, NULL, gdout, ca, gpa, gx, cb, gpb, gyy,
                               n, 1, 1);
            snprintf(what, sizeof what, "lincomb_bwd dx aliasing dout n=%zu", n);
            cc_act_expect_close(&e, what, gdout, alias, n, tol);
            e.gpu->free(e.gpu, gx), e.gpu->free(e.gpu, gy), e.gpu->free(e.gpu, gdout), e.gpu->free(e.gpu, gdx);
            e.gpu->free(e.gpu, gdy), e.gpu->free(e.gpu, gsc), e.gpu->free(e.gpu, gout);
            free(x), free(y), free(dout), free(dx0), free(dy0), free(sc), free(out), free(dx), free(dy), free(dsc);
            free(alias);
        }
    cc_expect_some_ran(ran);
}

// The value mix on v as a view: v at column 2C of (N, 3C) rows (x_cols C, x_ld 3C), as the fused
// q/k/v projection holds it, against the CPU on v of its own: out = a v + b ve; the backward sets dv
// in the view (the other columns, there before, must stay) and adds dve and the scalars' gradients.
// C = 768 and 24 take the 16-byte path (rows whole groups), 12 the scalar one.
Test(cuda_kernels, lincomb_on_a_view) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const int shapes[][2] = {{5, 12}, {37, 24}, {4099, 768}};
    int ran = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int N = shapes[s][0], C = shapes[s][1], W3 = 3 * C;
        const size_t n = (size_t)N * C, nw = (size_t)N * W3;
        char what[128];
        snprintf(what, sizeof what, "lincomb view N=%d C=%d", N, C);
        if (!cc_case_fits(what, (double)nw)) continue;
        ran++;
        gm_real *wide = cc_randn(&e, nw, 1.0), *ve = cc_randn(&e, n, 1.0), *dout = cc_randn(&e, n, 1.0);
        gm_real *dwide = cc_randn(&e, nw, 1.0), *dve = cc_randn(&e, n, 1.0), sc[4] = {0.75f, -0.5f, 0.25f, 2};
        gm_actval *gwide = cc_act_to_gpu(&e, wide, nw), *gve = cc_act_to_gpu(&e, ve, n), *gdout = cc_act_to_gpu(&e, dout, n);
        gm_actval *gdwide = cc_act_to_gpu(&e, dwide, nw), *gdve = cc_act_to_gpu(&e, dve, n), *gout = cc_act_poisoned(&e, n);
        gm_real *gsc = cc_to_gpu(&e, sc, sizeof sc);
        gm_real *v = malloc(sizeof(gm_real) * n), *dv = malloc(sizeof(gm_real) * n), *out = malloc(sizeof(gm_real) * n);
        cr_assert(v && dv && out);
        for (int r = 0; r < N; r++) memcpy(v + (size_t)r * C, wide + (size_t)r * W3 + 2 * C, sizeof(gm_real) * C);
        e.cpu->lincomb_fwd(e.cpu, gm_as_act(out), 1, sc, gm_as_act(v), 1, sc + 1, gm_as_act(ve), n, C, C);
        e.cpu->lincomb_bwd(e.cpu, gm_as_act(dv), GM_GRAD_SET, gm_as_act(dve), GM_GRAD_ADD, sc + 2, sc + 3, gm_as_act(dout),
                           1, sc, gm_as_act(v), 1, sc + 1, gm_as_act(ve), n, C, C);
        const gm_actval *gv = gm_act_at(e.gpu, gwide, (size_t)2 * C);
        e.gpu->lincomb_fwd(e.gpu, gout, 1, gsc, gv, 1, gsc + 1, gve, n, C, W3);
        e.gpu->lincomb_bwd(e.gpu, gm_act_at(e.gpu, gdwide, (size_t)2 * C), GM_GRAD_SET, gdve, GM_GRAD_ADD, gsc + 2, gsc + 3,
                           gdout, 1, gsc, gv, 1, gsc + 1, gve, n, C, W3);
        for (int r = 0; r < N; r++) memcpy(dwide + (size_t)r * W3 + 2 * C, dv + (size_t)r * C, sizeof(gm_real) * C);
        const double tol = cc_act_tol(&e, CC_TOL_FP32);
        snprintf(what, sizeof what, "lincomb_fwd from a view N=%d C=%d", N, C);
        cc_act_expect_close(&e, what, gout, out, n, tol);
        snprintf(what, sizeof what, "lincomb_bwd into a view N=%d C=%d (and the columns around it)", N, C);
        cc_act_expect_close(&e, what, gdwide, dwide, nw, tol);
        snprintf(what, sizeof what, "lincomb_bwd dve N=%d C=%d", N, C);
        cc_act_expect_close(&e, what, gdve, dve, n, tol);
        snprintf(what, sizeof what, "lincomb_bwd dpa, dpb N=%d C=%d", N, C);
        cc_expect_close(&e, what, gsc + 2, sc + 2, 2, CC_TOL_FP32);
        void *dev[] = {gwide, gve, gdout, gdwide, gdve, gout, gsc};
        for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++) e.gpu->free(e.gpu, dev[k]);
        gm_real *host[] = {wide, ve, dout, dwide, dve, v, dv, out};
        for (size_t k = 0; k < sizeof host / sizeof host[0]; k++) free(host[k]);
    }
    cc_expect_some_ran(ran);
}

// Softcap + cross-entropy: losses only, losses with a separate dlogits, and dlogits over logits.
// The kernel's paths: float4 (V % 4 == 0) or scalar, z kept in shared memory or (V = 60000 and
// 60001: 240 KB, above the 227 KiB a block may have) in the dlogits row. The fp32 bar holds with
// room: cuda/xent.cu's head comment derives the kernel's rounding against the CPU's. Both sides
// read the same (element-rounded) logits; dlogits round once at their store (cc_act_tol), the
// losses are fp32.
Test(cuda_kernels, softcap_xent) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const struct {
        int N, V;
        double cap;
    } cases[] = {{1, 1, 0},      {3, 7, 0},     {5, 7, 15},   {64, 1000, 0},  {64, 1000, 15},
                 {4, 50304, 15}, {2, 50304, 0}, {3, 513, 30}, {2, 60000, 15}, {2, 60001, 0}};
    int ran = 0;
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
        int N = cases[s].N, V = cases[s].V;
        double cap = cases[s].cap, scale = 1.0 / N;
        size_t nl = (size_t)N * V;
        char what[128];
        snprintf(what, sizeof what, "xent N=%d V=%d cap=%g", N, V, cap);
        if (!cc_case_fits(what, (double)nl)) continue;
        ran++;
        gm_real *logits = cc_randn(&e, nl, 4.0), *losses = malloc(sizeof(gm_real) * N);
        gm_real *dl = malloc(sizeof(gm_real) * nl);
        gm_actval *glog = cc_act_to_gpu(&e, logits, nl), *gdl = cc_act_poisoned(&e, nl);
        int32_t *tg = cc_randint(&e, (size_t)N, V);
        e.cpu->xent_fwd_bwd(e.cpu, losses, gm_as_act(dl), gm_as_act(logits), tg, N, V, cap, scale);
        int32_t *gtg = cc_to_gpu(&e, tg, sizeof(int32_t) * N);
        gm_real *gloss = cc_poisoned(&e, (size_t)N);
        const double tol = cc_act_tol(&e, CC_TOL_FP32);
        e.gpu->xent_fwd_bwd(e.gpu, gloss, NULL, glog, gtg, N, V, cap, scale);
        snprintf(what, sizeof what, "xent losses only N=%d V=%d cap=%g", N, V, cap);
        cc_expect_close(&e, what, gloss, losses, (size_t)N, CC_TOL_FP32);
        e.gpu->fill(e.gpu, gloss, (gm_real)NAN, (size_t)N);
        e.gpu->xent_fwd_bwd(e.gpu, gloss, gdl, glog, gtg, N, V, cap, scale);
        snprintf(what, sizeof what, "xent losses N=%d V=%d cap=%g", N, V, cap);
        cc_expect_close(&e, what, gloss, losses, (size_t)N, CC_TOL_FP32);
        snprintf(what, sizeof what, "xent dlogits N=%d V=%d cap=%g", N, V, cap);
        cc_act_expect_close(&e, what, gdl, dl, nl, tol);
        e.gpu->fill(e.gpu, gloss, (gm_real)NAN, (size_t)N);
        e.gpu->xent_fwd_bwd(e.gpu, gloss, glog, glog, gtg, N, V, cap, scale);  // dlogits over logits
        snprintf(what, sizeof what, "xent in place: losses N=%d V=%d cap=%g", N, V, cap);
        cc_expect_close(&e, what, gloss, losses, (size_t)N, CC_TOL_FP32);
        snprintf(what, sizeof what, "xent in place: dlogits N=%d V=%d cap=%g", N, V, cap);
        cc_act_expect_close(&e, what, glog, dl, nl, tol);
        e.gpu->free(e.gpu, glog), e.gpu->free(e.gpu, gtg), e.gpu->free(e.gpu, gloss), e.gpu->free(e.gpu, gdl);
        free(logits), free(losses), free(dl), free(tg);
    }
    cc_expect_some_ran(ran);
}

// The backward kernels that reduce (embedding scatter, lincomb scalars) give the same bits when
// run twice.
Test(cuda_kernels, reductions_repeat_bitwise) {
    CC_REQUIRE_GPU();
    cc_env e = cc_begin();
    const int V = 300, C = 96;
    const int N = (int)cc_capped("embed_bwd ids", 20000, C);
    const size_t n = cc_capped("lincomb_bwd", (size_t)3 << 20, 1);
    int32_t *ids = cc_randint(&e, (size_t)N, V);
    for (int i = 0; i < N; i += 2) ids[i] = 7;  // one very long run
    gm_real *dout = cc_randn(&e, (size_t)N * C, 1.0), *u = cc_randn(&e, n, 1.0), *w = cc_randn(&e, n, 1.0);
    int32_t *gids = cc_to_gpu(&e, ids, sizeof(int32_t) * N);
    gm_actval *gdout = cc_act_to_gpu(&e, dout, (size_t)N * C), *gu = cc_act_to_gpu(&e, u, n);
    gm_actval *gw = cc_act_to_gpu(&e, w, n);
    gm_real *first_tab = NULL, first_dp = 0;
    for (int run = 0; run < 2; run++) {
        gm_real *gtab = e.gpu->alloc(e.gpu, sizeof(gm_real) * V * C), *gdp = e.gpu->alloc(e.gpu, sizeof(gm_real));
        cr_assert(gtab && gdp);
        e.gpu->embed_bwd(e.gpu, gtab, gids, gdout, N, V, C);
        e.gpu->lincomb_bwd(e.gpu, NULL, GM_GRAD_ADD, NULL, GM_GRAD_ADD, gdp, NULL, gu, 1.0, NULL, gw, 0.0, NULL, NULL, n, 1, 1);
        cc_sync(&e, "repeat run");
        gm_real *tab = cc_from_gpu(&e, gtab, (size_t)V * C), dp;
        e.gpu->download(e.gpu, &dp, gdp, sizeof dp);
        if (run == 0) {
            first_tab = tab, first_dp = dp;
        } else {
            cr_expect(memcmp(tab, first_tab, sizeof(gm_real) * V * C) == 0, "embed_bwd differs between runs (seed %llu)",
                      (unsigned long long)e.seed);
            cr_expect(memcmp(&dp, &first_dp, sizeof dp) == 0, "lincomb dpa differs between runs: %.9g vs %.9g (seed %llu)",
                      (double)dp, (double)first_dp, (unsigned long long)e.seed);
            free(tab);
        }
        e.gpu->free(e.gpu, gtab), e.gpu->free(e.gpu, gdp);
    }
    e.gpu->free(e.gpu, gids), e.gpu->free(e.gpu, gdout), e.gpu->free(e.gpu, gu), e.gpu->free(e.gpu, gw);
    free(ids), free(dout), free(u), free(w), free(first_tab);
}
