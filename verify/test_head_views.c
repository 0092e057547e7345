// Rotary and QK-norm + rotary on a view with token stride ld (backend.h): q and k are the two halves
// of one (N, 2C) projection. On the CPU backends (cpu, and cpu-bf16, which rounds only the view's
// elements) the view's results are bitwise those of a tensor of its own, in both halves (q at 0, k
// at C), and every element of the other half is left as it was: forward (strided input), backward
// set (over NaN) and added into a prior (strided dinp, strided inp).
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
