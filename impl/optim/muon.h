// Muon: momentum SGD whose update is orthogonalized (replaced by its polar factor, computed by an
// orthogonalizer of optim/orthogonalize.h) and rescaled by a shape rule. Every variant the records
// used is a setting:
//   momentum  SUM (#3-#8):  buf = mu buf + g;            nesterov: u = g + mu buf
//             EMA (#16-):   buf = mu buf + (1 - mu) g;   nesterov: u = (1 - mu) g + mu buf
//             without nesterov u = buf.
//   scale     NONE (#3): 1;  SQRT_MAX (#4): sqrt(max(rows, cols)), so the update's RMS is 1;
//             ASPECT (#8-): sqrt(max(1, rows / cols)).
//   split_qkv (#4): a matrix with rows == 3 cols (the fused QKV weight) is orthogonalized and
//             scaled as three (rows/3, cols) blocks.
//   mu warmup (#16-): mu_s = (1 - f) mu_from + f mu, f = min(s / warmup, 1).
//   p <- p - lr * scale * O.
// Record #43 (2025-11-10_CautiousWD) adds, each a setting (all off: the update above, bit for bit):
//   normuon   after orthogonalization, per block: V <- NorMuon(O) with a second-moment state per
//             line (backend.h, normuon): a row of a (rows, cols) block when rows > cols, else a
//             column; the record decides by its stored shape, which in this (out, in) convention
//             is that rule (gm_muon_normuon_by_row says why).
//   weight_decay, cautious  p <- p - eff_lr * (V + eff_wd * mask * p), eff_lr = lr * scale,
//             eff_wd = lr * weight_decay (the scheduled lr, without the scale), mask = 1 or
//             (V * p >= 0) elementwise.
// With either on, the scale moves from the orthogonalized update into eff_lr (where the record
// applies it), so NorMuon's state sees the unscaled O, as the record's does.
// Sharded (record #6 on): with W ranks, matrix i is orthogonalized only by rank i % W, and the
// updates are all-gathered so that every rank applies all of them: the parameters are bitwise the
// same as one process computing everything. Every rank keeps every momentum buffer (an
// elementwise update), so any rank's checkpoint holds the whole optimizer state.
// Sharded momentum (`sharded`, the trainer's --grad_sync=reduce-scatter, record 2025-05-30_noallreduce):
// matrix i's averaged gradient reaches only rank i % W, so only that rank keeps its momentum
// current; the other ranks' copies are stale until gm_muon_gather_state collects them (for a
// checkpoint). The buffers keep their whole size: the state is sharded, its memory is not.
// Every buffer is backend memory and every step is backend kernels (momentum, orthogonalize,
// lincomb) plus the communicator's data-channel all-gather.
#ifndef GM_OPTIM_MUON_H
#define GM_OPTIM_MUON_H

#include "backend/backend.h"
#include "base/real.h"
#include "dist/comm.h"
#include "optim/ns_coeffs.h"
#include "optim/view.h"

typedef enum { GM_MOMENTUM_SUM, GM_MOMENTUM_EMA } gm_momentum_form;
typedef enum { GM_MUON_SCALE_NONE, GM_MUON_SCALE_SQRT_MAX, GM_MUON_SCALE_ASPECT } gm_muon_scale;

typedef struct {
    double lr, momentum;
    double momentum_from;   // warmup start and cooldown end (used when momentum_warmup/cooldown > 0)
    int momentum_warmup;    // steps
    int momentum_cooldown;  // the last steps of the run's `steps` (optim/schedule.h)
    int steps;
    int nesterov;
    gm_momentum_form form;
    gm_muon_scale scale;
    int split_qkv;
    gm_ortho ortho;
    int normuon;          // record #43's NorMuon
    double beta2;         // NorMuon's second-moment EMA (record: 0.95)
    double weight_decay;  // record #43's decoupled weight decay (record: 1.2); 0: none
    int cautious;         // decay only where V and p agree in sign (V * p >= 0)
} gm_muon_hparams;

typedef struct {
    gm_muon_hparams hp;
    const gm_backend *be;
    const gm_opt_view *views;
    int n;
    int rank, world;       // the ownership split (matrix i on rank i % world)
    int sharded;           // set after init: grads hold only this rank's matrices' averaged gradients
    gm_real *buf;          // backend: momentum, packed view after view (state_offset)
    size_t *state_offset;  // host (n)
    size_t state_numel;
    gm_real *v2;           // backend (normuon): every block's second moments, matrix after matrix (v2_offset)
    size_t *v2_offset;     // host (n): where matrix i's blocks' lines start
    size_t v2_numel;
    gm_real *u, *send;     // backend: this rank's updates before and after orthogonalization, packed
    gm_real *recv;         // backend: every rank's orthogonalized updates in rank order (world > 1)
    gm_ortho_item *items;  // host: one per orthogonalized block of this rank's matrices
    int nitems;
    size_t *bytes;         // host (world): bytes of updates each rank contributes
} gm_muon;

// comm NULL: one process (rank 0 of 1).
int gm_muon_init(gm_muon *m, const gm_backend *be, const gm_muon_hparams *hp, const gm_opt_view *views, int n,
                 gm_comm *comm);
void gm_muon_free(gm_muon *m);
// Backend bytes gm_muon_init allocates on `rank` of `world` for these views, without allocating.
typedef struct {
    size_t momentum;  // buf: every matrix's momentum
    size_t update;    // u and send: this rank's matrices, before and after orthogonalization
    size_t gather;    // recv: every rank's orthogonalized updates (world > 1)
    size_t second;    // v2: every matrix's NorMuon second moments (normuon)
} gm_muon_mem;
void gm_muon_state_bytes(const gm_muon_hparams *hp, const gm_opt_view *views, int n, int rank, int world,
                         gm_muon_mem *out);
// One step at training step s (for the momentum warmup) on params/grads (flat backend buffers).
// comm: the one given to init. Returns -1 when the all-gather fails; kernel errors show at the
// backend's sync.
int gm_muon_step(gm_muon *m, gm_real *params, const gm_real *grads, double lr_mult, int s, gm_comm *comm);
// Sharded: every rank's current momenta into every rank's buf (a collective: all ranks call it),
// so that buf holds the whole state; 0 at once when not sharded or on one rank.
int gm_muon_gather_state(gm_muon *m, gm_comm *comm);
// The scale applied to the orthogonalized (block) update of a (rows, cols) block.
double gm_muon_scale_of(gm_muon_scale rule, int rows, int cols);
// NorMuon's axis for a (rows, cols) = (out, in) block: 1 = one second moment per row.
int gm_muon_normuon_by_row(int rows, int cols);

#endif
