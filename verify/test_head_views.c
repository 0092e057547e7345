// Kernels on a view with token stride ld (backend.h): q, k (and v) are parts of one (N, 2C) or (N, 3C)
// projection. Rotary and QK-norm + rotary read q or k (and write dq, dk) as views; the value mix
// (lincomb) reads v and writes dv as one. On the CPU backends (cpu, and cpu-bf16, which rounds only
// the view's elements) the view's results are bitwise those of a tensor of its own, and every
// element outside the view is left as it was: forward (strided input), backward set (over NaN) and
// added into a prior (strided dinp / dx, strided inp / x).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bf16act/bf16act.h"
#include "backend/cpu/cpu.h"
#include "base/rng.h"

enum { B = 2, T = 7, NH = 3, HD = 8, C = NH * HD, N = B * T, LD = 2 * C };

static gm_real *randn(size_t n, uint64_t stream) {
    gm_real *x = malloc(sizeof *x * n);
    cr_assert(x);
    for (size_t i = 0; i < n; i++) x[i] = (gm_real)gm_rng_normal(31, stream, i);
    return x;
}

// (N, C) x placed at column `at` of (N, 2C) rows; the other half `other`.
static gm_real *widened(const gm_real *x, const gm_real *other, int at) {
    gm_real *w = malloc(sizeof *w * N * LD);
    cr_assert(w);
    for (int r = 0; r < N; r++)
        for (int i = 0; i < C; i++) w[r * LD + at + i] = x[r * C + i], w[r * LD + C - at + i] = other[r * C + i];
    return w;
}

// The (N, 2C) rows hold x at column `at` and `other` in the other half, bit for bit.
static void expect_rows(const char *what, const gm_real *w, const gm_real *x, const gm_real *other, int at) {
    for (int r = 0; r < N; r++)
        for (int i = 0; i < C; i++) {
            cr_expect_eq(memcmp(&w[r * LD + at + i], &x[r * C + i], sizeof *x), 0, "%s: view (%d, %d): %.9g vs %.9g",
                         what, r, i, (double)w[r * LD + at + i], (double)x[r * C + i]);
            cr_expect_eq(memcmp(&w[r * LD + C - at + i], &other[r * C + i], sizeof *x), 0,
                         "%s: the other half changed at (%d, %d)", what, r, i);
        }
}

Test(head_views, a_strided_view_is_bitwise_a_tensor_of_its_own) {
    const gm_backend *backends[] = {gm_backend_cpu(), gm_backend_cpu_bf16()};
    gm_real *ct = randn((size_t)T * HD / 2, 1), *st = randn((size_t)T * HD / 2, 2);
    for (size_t b = 0; b < 2; b++)
        for (int at = 0; at <= C; at += C) {  // the q half, then the k half
            const gm_backend *be = backends[b];
            gm_real *x = randn(N * C, 3), *dy = randn(N * C, 4), *prior = randn(N * C, 5), *other = randn(N * C, 6);
            gm_real *nan = malloc(sizeof *nan * N * C);
            cr_assert(nan);
            for (int i = 0; i < N * C; i++) nan[i] = NAN;
            gm_real *xw = widened(x, other, at);
            gm_real *ref = malloc(sizeof *ref * N * C), *got = malloc(sizeof *got * N * C);
            gm_real *rstd = malloc(sizeof *rstd * N * NH), *rstd_v = malloc(sizeof *rstd_v * N * NH);
            cr_assert(ref && got && rstd && rstd_v);
            char what[96];
            // forward: the strided input
            be->rotary_fwd(be, gm_as_act(ref), gm_as_act(x), ct, st, B, T, NH, HD, C);
            be->rotary_fwd(be, gm_as_act(got), gm_as_act(xw + at), ct, st, B, T, NH, HD, LD);
            snprintf(what, sizeof what, "%s rotary_fwd at %d", be->name, at);
            cr_expect_eq(memcmp(ref, got, sizeof *ref * N * C), 0, "%s", what);
            be->qknorm_rotary_fwd(be, gm_as_act(ref), rstd, gm_as_act(x), ct, st, B, T, NH, HD, C, 1e-6);
            be->qknorm_rotary_fwd(be, gm_as_act(got), rstd_v, gm_as_act(xw + at), ct, st, B, T, NH, HD, LD, 1e-6);
            snprintf(what, sizeof what, "%s qknorm_rotary_fwd at %d", be->name, at);
            cr_expect_eq(memcmp(ref, got, sizeof *ref * N * C), 0, "%s", what);
            cr_expect_eq(memcmp(rstd, rstd_v, sizeof *rstd * N * NH), 0, "%s: rstd", what);
            expect_rows(what, xw, x, other, at);  // the input view is only read
            // backward: the strided dinp (and inp), set over NaN and added into a prior
            for (int w = 0; w < 2; w++) {
                const gm_grad_write write = w ? GM_GRAD_ADD : GM_GRAD_SET;
                const gm_real *start = w ? prior : nan;
                for (int k = 0; k < 2; k++) {
                    memcpy(ref, start, sizeof *ref * N * C);
                    gm_real *dw = widened(start, other, at);
                    if (k == 0) {
                        be->rotary_bwd(be, gm_as_act(ref), write, gm_as_act(dy), ct, st, B, T, NH, HD, C);
                        be->rotary_bwd(be, gm_as_act(dw + at), write, gm_as_act(dy), ct, st, B, T, NH, HD, LD);
                    } else {
                        be->qknorm_rotary_bwd(be, gm_as_act(ref), write, gm_as_act(dy), gm_as_act(x), rstd, ct, st, B, T,
                                              NH, HD, C);
                        be->qknorm_rotary_bwd(be, gm_as_act(dw + at), write, gm_as_act(dy), gm_as_act(xw + at), rstd, ct,
                                              st, B, T, NH, HD, LD);
                    }
                    snprintf(what, sizeof what, "%s %s %s at %d", be->name, k ? "qknorm_rotary_bwd" : "rotary_bwd",
                             w ? "add" : "set", at);
                    expect_rows(what, dw, ref, other, at);
                    free(dw);
                }
            }
            free(x), free(dy), free(prior), free(other), free(nan), free(xw), free(ref), free(got), free(rstd),
                free(rstd_v);
        }
    free(ct), free(st);
}

// v at column 2C of (N, 3C) rows (x_cols C, x_ld 3C), the value mix out = a v + b ve and its backward
// (dv into the view, dve, both scalars' gradients).
Test(head_views, the_value_mix_reads_and_writes_v_as_a_view) {
    enum { W3 = 3 * C };
    const gm_backend *backends[] = {gm_backend_cpu(), gm_backend_cpu_bf16()};
    for (size_t b = 0; b < 2; b++) {
        const gm_backend *be = backends[b];
        gm_real *v = randn(N * C, 7), *ve = randn(N * C, 8), *dout = randn(N * C, 9), *prior = randn(N * C, 10);
        gm_real *rest = randn((size_t)N * W3, 11), lam[2] = {0.75f, -0.5f};
        gm_real *wide = malloc(sizeof *wide * N * W3), *dwide = malloc(sizeof *dwide * N * W3);
        gm_real *ref = malloc(sizeof *ref * N * C), *got = malloc(sizeof *got * N * C);
        cr_assert(wide && dwide && ref && got);
        for (int r = 0; r < N; r++)
            for (int i = 0; i < W3; i++)
                wide[r * W3 + i] = i >= 2 * C ? v[r * C + i - 2 * C] : rest[r * W3 + i];
        be->lincomb_fwd(be, gm_as_act(ref), 1, lam, gm_as_act(v), 1, lam + 1, gm_as_act(ve), N * C, C, C);
        be->lincomb_fwd(be, gm_as_act(got), 1, lam, gm_as_act(wide + 2 * C), 1, lam + 1, gm_as_act(ve), N * C, C, W3);
        cr_expect_eq(memcmp(ref, got, sizeof *ref * N * C), 0, "%s: value mix from a view", be->name);
        for (int w = 0; w < 2; w++) {
            const gm_grad_write write = w ? GM_GRAD_ADD : GM_GRAD_SET;
            gm_real dl[2] = {0, 0}, dl_v[2] = {0, 0};
            gm_real *dve = malloc(sizeof *dve * N * C), *dve_v = malloc(sizeof *dve_v * N * C);
            cr_assert(dve && dve_v);
            memcpy(dve, prior, sizeof *dve * N * C), memcpy(dve_v, prior, sizeof *dve * N * C);
            for (int r = 0; r < N; r++)
                for (int i = 0; i < W3; i++)
                    dwide[r * W3 + i] = i >= 2 * C ? (w ? prior[r * C + i - 2 * C] : NAN) : rest[r * W3 + i];
            for (int i = 0; i < N * C; i++) ref[i] = w ? prior[i] : NAN;
            be->lincomb_bwd(be, gm_as_act(ref), write, gm_as_act(dve), GM_GRAD_ADD, dl, dl + 1, gm_as_act(dout), 1, lam,
                            gm_as_act(v), 1, lam + 1, gm_as_act(ve), N * C, C, C);
            be->lincomb_bwd(be, gm_as_act(dwide + 2 * C), write, gm_as_act(dve_v), GM_GRAD_ADD, dl_v, dl_v + 1,
                            gm_as_act(dout), 1, lam, gm_as_act(wide + 2 * C), 1, lam + 1, gm_as_act(ve), N * C, C, W3);
            cr_expect_eq(memcmp(dl, dl_v, sizeof dl), 0, "%s: the scalars' gradients", be->name);
            cr_expect_eq(memcmp(dve, dve_v, sizeof *dve * N * C), 0, "%s: dve", be->name);
            for (int r = 0; r < N; r++)
                for (int i = 0; i < W3; i++) {
                    const gm_real want = i >= 2 * C ? ref[r * C + i - 2 * C] : rest[r * W3 + i];
                    cr_expect_eq(memcmp(&dwide[r * W3 + i], &want, sizeof want), 0, "%s %s: (%d, %d)", be->name,
                                 w ? "add" : "set", r, i);
                }
            free(dve), free(dve_v);
        }
        free(v), free(ve), free(dout), free(prior), free(rest), free(wide), free(dwide), free(ref), free(got);
    }
}
