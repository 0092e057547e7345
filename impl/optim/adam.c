#include "optim/adam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

// Bytes of one moment buffer of numel elements (at least one element: allocators may refuse 0).
static size_t moment_bytes(size_t numel) { return (numel ? numel : 1) * sizeof(gm_real); }

size_t gm_adam_state_bytes(const gm_opt_view *views, int n) {
    size_t numel = 0;
    for (int i = 0; i < n; i++) numel += gm_view_numel(&views[i]);
    return 2 * moment_bytes(numel);
}

int gm_adam_init(gm_adam *a, const gm_backend *be, const gm_adam_hparams *hp, const gm_opt_view *views, int n) {
    memset(a, 0, sizeof *a);
    a->hp = *hp;
    a->be = be;
    a->n = n;
    a->spans = malloc((size_t)(n > 0 ? n : 1) * sizeof *a->spans);
    for (int i = 0; a->spans && i < n; i++) {
        a->spans[i] = (gm_adam_span){views[i].offset, a->state_numel, gm_view_numel(&views[i])};
        a->state_numel += a->spans[i].n;
    }
    size_t bytes = moment_bytes(a->state_numel);
    if (a->spans) a->m = be->alloc(be, bytes);
    if (a->m) a->v = be->alloc(be, bytes);
    if (!a->spans || !a->m || !a->v) {
        gm_adam_free(a);
        return gm_fail("adam: cannot allocate %zu state elements: %s", a->state_numel, gm_error());
    }
    return 0;
}

void gm_adam_free(gm_adam *a) {
    if (a->be) a->be->free(a->be, a->m), a->be->free(a->be, a->v);
    free(a->spans);
    a->m = a->v = NULL;
    a->spans = NULL;
}

void gm_adam_step(gm_adam *a, gm_real *params, const gm_real *grads, double lr_mult) {
    a->t++;
    const double lr = a->hp.lr * lr_mult, b1 = a->hp.beta1, b2 = a->hp.beta2;
    const double bc1 = 1.0 - pow(b1, (double)a->t), bc2 = 1.0 - pow(b2, (double)a->t);
    const gm_adam_args args = {.step_size = lr / bc1,
                               .bc2_sqrt = sqrt(bc2),
                               .eps = a->hp.eps,
                               .beta1 = b1,
                               .beta2 = b2,
                               .decay = 1.0 - lr * a->hp.weight_decay,
                               .apply_decay = a->hp.weight_decay != 0,
                               .normalize_grad = a->hp.normalize_grad};
    a->be->adam_update(a->be, params, grads, a->m, a->v, a->n, a->spans, &args);
}
