// The CPU adam_update kernel over a group of tensors (gm_adam_span) runs the tensors' norm sums
// concurrently and the elementwise update over the whole group: every tensor's p, m, v must be
// bitwise those of the plain loop below (one tensor after another, the norm summed in fp64 in
// index order, the statements of optim/adam.h), at any thread count, with gaps between the
// tensors left untouched.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/rng.h"
#include "helpers.h"

// Sizes across GM_CPU_PAR_MIN (65536), so both the one-thread and the parallel paths run; the
// spans sit in the buffers in another order than their sizes and with gaps.
static const size_t sizes[] = {70001, 3, 200000, 768, 65536, 131071};
#define NT ((int)(sizeof sizes / sizeof sizes[0]))
#define GAP 17

static void reference(gm_real *p, const gm_real *g, gm_real *m, gm_real *v, int count, const gm_adam_span *spans,
                      const gm_adam_args *a) {
    for (int i = 0; i < count; i++) {
        gm_real *pi = p + spans[i].offset, *mi = m + spans[i].state_offset, *vi = v + spans[i].state_offset;
        const gm_real *gi = g + spans[i].offset;
        gm_real gscale = 1;
        if (a->normalize_grad) {
            double ss = 0;
            for (size_t j = 0; j < spans[i].n; j++) ss += (double)gi[j] * gi[j];
            gscale = (gm_real)(1.0 / (sqrt(ss) + 1e-6));
        }
        for (size_t j = 0; j < spans[i].n; j++) {
            gm_real gj = gi[j] * gscale;
            if (a->apply_decay) pi[j] *= (gm_real)a->decay;
            mi[j] = (gm_real)a->beta1 * mi[j] + (gm_real)(1.0 - a->beta1) * gj;
            vi[j] = (gm_real)a->beta2 * vi[j] + (gm_real)(1.0 - a->beta2) * gj * gj;
            pi[j] -= (gm_real)a->step_size * mi[j] / (gm_sqrt(vi[j]) / (gm_real)a->bc2_sqrt + (gm_real)a->eps);
        }
    }
}

// x = scale * N(0, 1), stream `stream` of a fixed seed.
static void fill(gm_real *x, size_t n, uint64_t stream, double scale) {
    for (size_t j = 0; j < n; j++) x[j] = (gm_real)(scale * gm_rng_normal(2024, stream, j));
}

Test(adam_group, the_group_kernel_is_the_plain_loop_bit_for_bit_at_any_thread_count) {
    gm_adam_span spans[NT];
    size_t total = 0, state = 0;
    for (int k = NT - 1; k >= 0; k--) spans[k].offset = total + GAP, total += sizes[k] + GAP;  // reversed in p
    for (int k = 0; k < NT; k++) spans[k].state_offset = state, spans[k].n = sizes[k], state += sizes[k] + GAP;
    const size_t plen = total + GAP;
    gm_real *p0 = malloc(plen * sizeof(gm_real)), *g = malloc(plen * sizeof(gm_real));
    gm_real *p[2], *m[2], *v[2];
    cr_assert(p0 && g);
    fill(p0, plen, 0, 1.0);
    for (int c = 0; c < 2; c++) {
        p[c] = malloc(plen * sizeof(gm_real)), m[c] = malloc(state * sizeof(gm_real)), v[c] = malloc(state * sizeof(gm_real));
        cr_assert(p[c] && m[c] && v[c]);
    }
    const gm_backend *be = gm_backend_cpu();
    const int saved = omp_get_max_threads();
    for (int mode = 0; mode < 3; mode++)  // Adam; AdamW; AdamW with normalize_grad
        for (int threads = 1; threads <= 4; threads++) {
            for (int c = 0; c < 2; c++) {
                memcpy(p[c], p0, plen * sizeof(gm_real));
                memset(m[c], 0, state * sizeof(gm_real)), memset(v[c], 0, state * sizeof(gm_real));
            }
            for (long t = 1; t <= 3; t++) {
                fill(g, plen, (uint64_t)t, 0.01);
                const double lr = 1e-3, wd = mode ? 0.1 : 0.0;
                const gm_adam_args a = {.step_size = lr / (1.0 - pow(0.9, (double)t)),
                                        .bc2_sqrt = sqrt(1.0 - pow(0.95, (double)t)),
                                        .eps = 1e-8,
                                        .beta1 = 0.9,
                                        .beta2 = 0.95,
                                        .decay = 1.0 - lr * wd,
                                        .apply_decay = wd != 0,
                                        .normalize_grad = mode == 2};
                reference(p[0], g, m[0], v[0], NT, spans, &a);
                omp_set_num_threads(threads);
                be->adam_update(be, p[1], g, m[1], v[1], NT, spans, &a);
                omp_set_num_threads(saved);
                cr_assert_eq(be->sync(be), 0, "%s", gm_error());
            }
            cr_assert_eq(memcmp(p[0], p[1], plen * sizeof(gm_real)), 0, "mode %d, %d threads: parameters differ",
                         mode, threads);
            cr_assert_eq(memcmp(m[0], m[1], state * sizeof(gm_real)), 0, "mode %d, %d threads: m differs", mode,
                         threads);
            cr_assert_eq(memcmp(v[0], v[1], state * sizeof(gm_real)), 0, "mode %d, %d threads: v differs", mode,
                         threads);
        }
    for (int c = 0; c < 2; c++) free(p[c]), free(m[c]), free(v[c]);
    free(p0), free(g);
}
