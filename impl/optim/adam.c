#include "optim/adam.h"

#include <math.h>
#include <stdlib.h>

#include "base/error.h"

int gm_adam_init(gm_adam *a, const gm_adam_hparams *hp, const gm_opt_view *views, int n) {
    a->hp = *hp;
    a->views = views;
    a->n = n;
    a->t = 0;
    a->state_offset = malloc((size_t)(n > 0 ? n : 1) * sizeof *a->state_offset);
    a->state_numel = 0;
    for (int i = 0; a->state_offset && i < n; i++) {
        a->state_offset[i] = a->state_numel;
        a->state_numel += gm_view_numel(&views[i]);
    }
    a->m = calloc(a->state_numel ? a->state_numel : 1, sizeof *a->m);
    a->v = calloc(a->state_numel ? a->state_numel : 1, sizeof *a->v);
    if (!a->state_offset || !a->m || !a->v) {
        gm_adam_free(a);
        return gm_fail("adam: out of memory for %zu state elements", a->state_numel);
    }
    return 0;
}

void gm_adam_free(gm_adam *a) {
    free(a->m);
    free(a->v);
    free(a->state_offset);
    a->m = a->v = NULL;
    a->state_offset = NULL;
}

void gm_adam_step(gm_adam *a, gm_real *params, const gm_real *grads, double lr_mult) {
    a->t++;
    const double lr = a->hp.lr * lr_mult, b1 = a->hp.beta1, b2 = a->hp.beta2;
    const double bc1 = 1.0 - pow(b1, (double)a->t), bc2 = 1.0 - pow(b2, (double)a->t);
    // Computed in gm_real like the reference implementation computes in the parameter dtype.
    const gm_real step_size = (gm_real)(lr / bc1), bc2_sqrt = (gm_real)sqrt(bc2), eps = (gm_real)a->hp.eps;
    const gm_real decay = (gm_real)(1.0 - lr * a->hp.weight_decay);
    const gm_real rb1 = (gm_real)b1, rb2 = (gm_real)b2, one_b1 = (gm_real)(1.0 - b1), one_b2 = (gm_real)(1.0 - b2);
    for (int i = 0; i < a->n; i++) {
        const gm_opt_view *vw = &a->views[i];
        size_t n = gm_view_numel(vw);
        gm_real *p = params + vw->offset, *m = a->m + a->state_offset[i], *v = a->v + a->state_offset[i];
        const gm_real *g = grads + vw->offset;
        gm_real gscale = 1;
        if (a->hp.normalize_grad) {
            double ss = 0;
            for (size_t j = 0; j < n; j++) ss += (double)g[j] * g[j];
            gscale = (gm_real)(1.0 / (sqrt(ss) + 1e-6));
        }
#pragma omp parallel for schedule(static) if (n > 65536)
        for (size_t j = 0; j < n; j++) {
            gm_real gj = g[j] * gscale;
            if (a->hp.weight_decay != 0) p[j] *= decay;
            m[j] = rb1 * m[j] + one_b1 * gj;
            v[j] = rb2 * v[j] + one_b2 * gj * gj;
            p[j] -= step_size * m[j] / (gm_sqrt(v[j]) / bc2_sqrt + eps);
        }
    }
}
