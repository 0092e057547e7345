// Adam / AdamW with PyTorch's semantics (torch.optim.Adam / AdamW, amsgrad off):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p <- p (1 - lr wd)                          (AdamW: decoupled decay, skipped when wd = 0)
//   p <- p - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// with an optional per-tensor gradient normalization g <- g / (||g||_F + 1e-6) before the step
// (the AdamW baseline record's code had it). The moments live in backend memory; a step is one
// backend kernel (adam_update) over all the group's tensors.
#ifndef GM_OPTIM_ADAM_H
#define GM_OPTIM_ADAM_H

#include "backend/backend.h"
#include "base/real.h"
#include "optim/view.h"

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    int normalize_grad;
} gm_adam_hparams;

typedef struct {
    gm_adam_hparams hp;
    const gm_backend *be;
    int n;
    gm_real *m, *v;        // backend memory: moments, packed view after view (spans[i].state_offset)
    gm_adam_span *spans;   // host (n): each view's place in the parameters and in the moments
    size_t state_numel;
    long t;          // steps taken (bias correction uses t after increment: 1-based)
} gm_adam;

int gm_adam_init(gm_adam *a, const gm_backend *be, const gm_adam_hparams *hp, const gm_opt_view *views, int n);
void gm_adam_free(gm_adam *a);
// Backend bytes gm_adam_init allocates for these views (the two moments), without allocating.
size_t gm_adam_state_bytes(const gm_opt_view *views, int n);
// One step on params (flat backend buffer) with grads (same layout); the learning rate is
// hp.lr * lr_mult. Queues kernels; errors show at the backend's sync.
void gm_adam_step(gm_adam *a, gm_real *params, const gm_real *grads, double lr_mult);

#endif
