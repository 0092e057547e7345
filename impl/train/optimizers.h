// The preset's optimizer split: the parameter table's groups (embed, head, matrix, scalar), each
// trained by Adam/AdamW at its own learning rate, or the block matrices by Muon (sharded over the
// ranks), every state in backend memory. The trainer and the benchmarks build it here, so the
// optimizer step they run is the same one.
#ifndef GM_TRAIN_OPTIMIZERS_H
#define GM_TRAIN_OPTIMIZERS_H

#include "backend/backend.h"
#include "dist/comm.h"
#include "model/table.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "train/run_config.h"

enum { GM_NGROUPS = 4 };  // gm_group - 1: embed, head, matrix, scalar
extern const char *const gm_group_names[GM_NGROUPS];

typedef struct {
    gm_opt_view *views[GM_NGROUPS];
    int nviews[GM_NGROUPS];
    gm_adam adam[GM_NGROUPS];
    int has_adam[GM_NGROUPS];
    gm_muon muon;
    int has_muon;
} gm_optimizers;

// A backend buffer of optimizer state, named as a checkpoint section.
typedef struct {
    char name[48];
    gm_real *buf;
    size_t numel;
    int second_moment;  // an average of squares (Adam's v, NorMuon's): no training makes one negative
} gm_state_buf;
enum { GM_MAX_STATE_BUFS = 2 * GM_NGROUPS + 2 };

// comm NULL: one process. -1 + gm_fail (a parameter without a group, out of memory).
int gm_optimizers_init(gm_optimizers *o, const gm_run_config *rc, const gm_table *params, const gm_backend *be,
                       gm_comm *comm);
void gm_optimizers_free(gm_optimizers *o);
// Step s on params / grads (flat backend buffers): every group at its base lr times the
// schedule's multiplier. Queues kernels (and Muon's all-gather); errors show at the backend's sync.
int gm_optimizers_step(gm_optimizers *o, const gm_run_config *rc, gm_real *params, const gm_real *grads, int s,
                       gm_comm *comm);
// Which ranks need each parameter's averaged gradient (--grad_sync=reduce-scatter): Muon's matrix i
// only rank i % world, which orthogonalizes it; every other parameter every rank. Spans in the
// order of the flat buffer, neighbours with the same rank merged; *spans malloc'd. Count, or -1.
int gm_optimizers_grad_spans(const gm_optimizers *o, int world, gm_comm_span **spans);
// Sharded Muon momentum gathered on every rank (a collective), so gm_optimizers_states holds the
// whole state; 0 at once when nothing is sharded.
int gm_optimizers_gather_state(gm_optimizers *o, gm_comm *comm);
// The state buffers (Adam's m and v per group, Muon's momentum and NorMuon's second moments) into out;
// returns their count.
int gm_optimizers_states(const gm_optimizers *o, gm_state_buf *out);
// Bytes of their states for rc on `rank` of `world`, without allocating.
int gm_optimizers_plan(const gm_run_config *rc, const gm_table *params, int rank, int world, size_t *adam,
                       gm_muon_mem *muon);

#endif
