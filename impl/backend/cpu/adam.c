// Adam/AdamW over a group of tensors (the formula in optim/adam.h), in gm_real as the reference
// computes in the parameter dtype. The gradient norm of normalize_grad is summed in fp64 in index
// order, one tensor at a time: a chain of dependent adds (about 1 ns an element, a third of this
// kernel's time at full scale), so the tensors' chains run concurrently, one tensor per thread,
// largest first. The elementwise update then runs over all the group's elements in one parallel
// region. Neither changes a bit: every sum and every element is the same statements in the same
// order, whichever thread runs them.
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"

static double sum_squares(const gm_real *g, size_t n) {
    double ss = 0;
    for (size_t j = 0; j < n; j++) ss += (double)g[j] * g[j];
    return ss;
}

typedef struct {
    gm_real step_size, bc2_sqrt, eps, decay, b1, b2, one_b1, one_b2;
    int apply_decay;
} adam_scalars;

// Elements [lo, hi) of one tensor. p, g, m, v are distinct buffers (restrict), and the build's
// -fno-math-errno lets sqrt stay inline, so the loop vectorizes; sqrt and divide are correctly
// rounded in every lane, so the lanes compute what the scalar loop did.
static void update(gm_real *restrict p, const gm_real *restrict g, gm_real *restrict m, gm_real *restrict v,
                   size_t lo, size_t hi, gm_real gscale, const adam_scalars *s) {
    const gm_real decay = s->apply_decay ? s->decay : 1;  // x * 1 is x: no branch in the loop
#pragma omp simd
    for (size_t j = lo; j < hi; j++) {
        const gm_real gj = g[j] * gscale;
        const gm_real pj = p[j] * decay;
        const gm_real mj = s->b1 * m[j] + s->one_b1 * gj;
        const gm_real vj = s->b2 * v[j] + s->one_b2 * gj * gj;
        m[j] = mj, v[j] = vj;
        p[j] = pj - s->step_size * mj / (gm_sqrt(vj) / s->bc2_sqrt + s->eps);
    }
}

// A tensor's size and index; sorted larger first, then by index (the order its norm chain is
// handed to a thread).
typedef struct {
    size_t n;
    int i;
} sized;
static int larger_first(const void *x, const void *y) {
    const sized *a = x, *b = y;
    return a->n != b->n ? (a->n < b->n ? 1 : -1) : (a->i > b->i) - (a->i < b->i);
}

void gm_cpu_adam_update(const gm_backend *be, gm_real *p, const gm_real *g, gm_real *m, gm_real *v, int count,
                        const gm_adam_span *spans, const gm_adam_args *a) {
    (void)be;
    if (count <= 0) return;
    const adam_scalars s = {(gm_real)a->step_size,     (gm_real)a->bc2_sqrt, (gm_real)a->eps,
                            (gm_real)a->decay,         (gm_real)a->beta1,    (gm_real)a->beta2,
                            (gm_real)(1.0 - a->beta1), (gm_real)(1.0 - a->beta2), a->apply_decay};
    gm_real *gscale = malloc((size_t)count * sizeof *gscale);
    sized *order = malloc((size_t)count * sizeof *order);
    if (!gscale || !order) {
        free(gscale), free(order);
        gm_cpu_record_error("adam_update: out of memory for %d tensors", count);
        return;
    }
    size_t total = 0;
    for (int i = 0; i < count; i++) gscale[i] = 1, order[i] = (sized){spans[i].n, i}, total += spans[i].n;
    if (a->normalize_grad) {
        qsort(order, (size_t)count, sizeof *order, larger_first);
#pragma omp parallel for schedule(dynamic, 1) if (count > 1 && total > GM_CPU_PAR_MIN)
        for (int k = 0; k < count; k++) {
            const gm_adam_span *sp = &spans[order[k].i];
            gscale[order[k].i] = (gm_real)(1.0 / (sqrt(sum_squares(g + sp->offset, sp->n)) + 1e-6));
        }
    }
    // The group's elements as one range [0, total), cut into one slice per thread; a slice walks
    // the spans it covers.
#pragma omp parallel if (total > GM_CPU_PAR_MIN)
    {
        size_t lo, hi, base = 0;
        gm_cpu_slice(total, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        for (int i = 0; i < count && base < hi; base += spans[i].n, i++) {
            const gm_adam_span *sp = &spans[i];
            const size_t from = lo > base ? lo - base : 0, to = hi - base < sp->n ? hi - base : sp->n;
            if (from < to)
                update(p + sp->offset, g + sp->offset, m + sp->state_offset, v + sp->state_offset, from, to, gscale[i],
                       &s);
        }
    }
    free(gscale), free(order);
}
