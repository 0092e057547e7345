// The observer hook sees, after iteration k, exactly what a run of k steps returns (the harness
// builds its error-vs-steps table from one run per configuration).
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "backend/cpu/linalg.h"
#include "optim/ns_coeffs.h"
#include "ortho_fixtures.h"

enum { M = 37, N = 21, STEPS = 7 };

typedef struct {
    float seen[STEPS][M * N];
    int calls;
} observed;

static void keep(void *ctx, int k, const double *X, int rows, int cols) {
    observed *o = ctx;
    cr_assert(rows == M && cols == N && k == o->calls + 1, "observe(k=%d, %dx%d) after %d calls", k, rows, cols, o->calls);
    for (int i = 0; i < M * N; i++) o->seen[k - 1][i] = (float)X[i];
    o->calls++;
}

Test(ns_observe, iterate_k_equals_a_k_step_run) {
    static observed o;
    float G[M * N], X[M * N];
    th_gauss_f32(G, M, N, 17);
    for (int si = 0; si < gm_ns_coeffs_count(); si++) {
        memset(&o, 0, sizeof o);
        gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_at(si), .steps = STEPS, .bf16 = 1,
                        .norm_src = GM_NS_NORM_OF_X, .observe = keep, .observe_ctx = &o};
        cr_assert_eq(gm_ns_f32(&cfg, G, X, M, N, GM_MM_BLAS), 0, "%s", gm_error());
        cr_assert_eq(o.calls, STEPS);
        cfg.observe = NULL;
        for (int k = 1; k <= STEPS; k++) {
            cfg.steps = k;
            cr_assert_eq(gm_ns_f32(&cfg, G, X, M, N, GM_MM_BLAS), 0, "%s", gm_error());
            cr_assert_eq(memcmp(X, o.seen[k - 1], sizeof X), 0, "%s: observed iterate %d differs from a %d-step run",
                         cfg.coeffs->name, k, k);
        }
    }
}
