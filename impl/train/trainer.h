// The training loop, one function for every preset, scale and world size:
//   per step s: validation when due (fixed token count, averaged over ranks, excluded from timing)
//   -> sliding window for step s -> grad_accum micro-batches (forward, backward; gradients summed)
//   -> one all-reduce of the averaged gradients (the no_sync pattern: sync only once per step)
//   -> each group's optimizer at lr_base * schedule(s) (Muon sharded over ranks)
//   -> a JSON-lines record and, when due, the progress line (train/progress.h); checkpoints
//      atomically every ckpt_every steps, every ckpt_every_s seconds, at the end, and when a stop
//      is requested (train/signals.h: Ctrl-C, SIGTERM, SIGHUP, the output gone; every rank stops at
//      the same step, or between the same two batches of a validation, which is then abandoned).
// Before the first step, rank 0 makes out_dir ready (train/run_dir.h: locked, not holding another
// run, room for the checkpoints). Any failure after the log is open (the MPI watchdog's included)
// ends it with an "error" record (step, message); a failed log write is a failure, and a failed
// checkpoint write leaves the previous checkpoint as it was.
#ifndef GM_TRAIN_TRAINER_H
#define GM_TRAIN_TRAINER_H

#include "backend/backend.h"
#include "dist/comm.h"
#include "train/mem_plan.h"
#include "train/run_config.h"

typedef struct {
    int steps_done;
    double final_val_loss;  // the last validation's loss (NAN when none ran)
    int val_step;           // the step of that validation (-1: none)
    double train_seconds;   // timed steps only (first 10 steps and validation excluded)
    long long tokens;       // training tokens consumed (all ranks)
    double tokens_per_s;    // over the timed steps
    long peak_rss_kb;
    int interrupted;        // stopped early by a stop request
    // Optional outputs for tests (NULL: not wanted): train losses per step (rc.steps), final
    // parameters (the model's parameter buffer, params_len elements, copied out).
    double *train_loss;
    gm_real *params;
    size_t params_len;
} gm_train_result;

// Run rc on this rank of comm (comm NULL: single process). Logs to rc->out_dir/log.jsonl on rank 0
// (and progress lines to stdout when verbose). Returns -1 with gm_fail on any error.
int gm_train(const gm_run_config *rc, gm_comm *comm, const gm_backend *be, int verbose, gm_train_result *res);
// The parts of gm_train for programs that drive steps themselves (the benchmarks): the data,
// model and optimizers of rc on this rank (comm NULL: one process) on backend be, with the
// start-up checks of gm_train, but no output folder, log, checkpoint or validation.
typedef struct gm_trainer gm_trainer;
gm_trainer *gm_trainer_open(const gm_run_config *rc, gm_comm *comm, const gm_backend *be);  // NULL + gm_fail
void gm_trainer_close(gm_trainer *t);
// Told the name of each part of a step before it starts: "model" (the window's mask, gradients zeroed), then per
// micro-batch "data" and "model" (forward and backward), "allreduce", "optimizer", "loss".
typedef void (*gm_phase_fn)(void *ctx, const char *phase);
// Training step s (its sliding window, micro-batches, gradient all-reduce, optimizers), the very
// step gm_train runs; *loss gets the mean train loss over ranks. phase may be NULL.
int gm_trainer_step(gm_trainer *t, int s, double *loss, gm_phase_fn phase, void *ctx);

// The backend bytes gm_train allocates for rc on `rank` of `world`, per category, without
// allocating (the model's plan plus the optimizers' states). -1 (gm_fail) on a bad configuration.
int gm_train_memory_plan(const gm_run_config *rc, int world, int rank, gm_mem_plan *out);
// The memory choices left to auto decided, each set in rc: --head_rows=0 (a micro-batch's B*T rows in
// one chunk, else GM_HEAD_ROWS) and --recompute=auto (off, else on), recompute off having the first
// claim; each is taken where the plan with it fits the memory the backend has (host backends: what
// the process may fill and map, the host plan beyond the backend's included; CUDA: the device's free
// memory less 4 GB the plan leaves out, or `budget` bytes when > 0: a device not present, as when
// counting). Where that memory is unknown: recompute on, GM_HEAD_ROWS. `why` says each choice, whether
// auto or the flag made it, and the figures auto went by. -1 (gm_fail) when no plan can be made.
int gm_train_resolve_memory(gm_run_config *rc, int world, int rank, double budget, char *why, size_t len);
// Length of the parameter buffer gm_train will use for rc (for sizing res->params).
size_t gm_train_params_len(const gm_run_config *rc, const gm_backend *be);

#endif
