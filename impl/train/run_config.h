// The complete configuration of a training run: the model (model/config.h), the data, the batch,
// the schedules and each parameter group's optimizer. Every preset at every scale is a value of
// this struct; `--key=value` overrides any field by name; the whole thing is printed as JSON at
// start-up and stored in logs and checkpoints, and its hash is compared across ranks.
#ifndef GM_TRAIN_RUN_CONFIG_H
#define GM_TRAIN_RUN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "optim/schedule.h"

typedef enum { GM_MATRIX_ADAM = 0, GM_MATRIX_MUON = 1 } gm_matrix_opt;
// How the ranks average the gradients: every rank all of them, or each Muon matrix's only to the
// rank that orthogonalizes it (record 2025-05-30_noallreduce); the same values either way.
typedef enum { GM_GRAD_SYNC_ALL_REDUCE = 0, GM_GRAD_SYNC_REDUCE_SCATTER = 1 } gm_grad_sync;
// Whether the backward recomputes the blocks' elementwise inputs (model.h): auto is off where the
// plan without it fits the memory the backend has (train.c decides before the run), else on.
typedef enum { GM_RECOMPUTE_AUTO = 0, GM_RECOMPUTE_ON = 1, GM_RECOMPUTE_OFF = 2 } gm_recompute;

// Flags given on the command line are remembered by field (model fields first, then the run's),
// so that a flag the chosen recipe ignores can be refused instead of silently dropped.
enum { GM_RUN_MAX_FIELDS = 128 };

typedef struct {
    gm_config model;

    char train_data[512];  // glob of train shards
    char val_data[512];    // glob of val shards
    int grad_accum;        // micro-batches per optimizer step
    int steps;             // optimizer steps
    int val_every;         // validate every N steps (and after the last); 0: only after the last
    long long val_tokens;  // fixed token count of each validation, the same for every world size
    int batch0_twice;      // records #4 and #8 train step 0 and step 1 on the same batch

    gm_lr_schedule lr;  // lr.steps, lr.warmup, lr.warmdown follow `steps` and the fractions below
    // Schedule lengths as fractions of `steps` (the records' step counts divided by their N), so
    // a run of any length keeps the recipe's shape.
    double warmup_frac, warmdown_frac, momentum_warmup_frac, momentum_cooldown_frac;
    // Base learning rates per parameter group; the schedule multiplies them all.
    double lr_embed, lr_head, lr_scalar, lr_matrix;
    gm_matrix_opt matrix_opt;  // the adamw preset trains matrices with AdamW too
    gm_adam_hparams adam;      // betas, eps, weight decay, grad normalization (lr per group above)
    gm_muon_hparams muon;      // lr = lr_matrix; ortho.coeffs set from ns_coeffs, gram_restarts from gram_restarts
    char ns_coeffs[32];
    char gram_restarts[64];    // gram-ns: restart after these iterations, comma-separated ("2", "2,4", "none")

    uint64_t seed;
    char out_dir[512];   // log and checkpoints
    int ckpt_every;      // 0: only at the end (and on Ctrl-C); -1: never
    int ckpt_every_s;    // also after this many seconds of wall time since the last one (0: not by time)
    int halt_at;         // stop after this many steps as if interrupted (0: run to the end)
    int dump_at;         // at this step, write every block matrix's gradient and Muon momentum to
                         // out_dir/matrices/ (base/matfile.h format) for the NS harness (-1: never)
    char resume[512];    // checkpoint to resume from ("" : fresh start)
    int overwrite;       // 1: replace the run already in out_dir (its log and checkpoint)
    char comm[16];       // single | mpi | nccl | auto
    gm_grad_sync grad_sync;
    char backend[16];    // cpu | cuda | guarded (backend/select.h)
    int device;          // CUDA device of --backend=cuda
    gm_recompute recompute;
    int head_rows;       // rows of logits per head chunk; 0: auto (train.c: all B*T where they fit, else GM_HEAD_ROWS)
    double comm_timeout; // seconds a collective may take before the job is stopped
    int log_every;       // progress line at most every N seconds
    int plan_memory;     // train: print the memory plan (train/mem_plan.h) and exit

    unsigned char given[GM_RUN_MAX_FIELDS];  // set by gm_run_config_set (not part of the JSON)
} gm_run_config;

// The preset `name` (adamw, muon-v1, muon-v2, untied, value-embed, softcap, normuon) at `scale` (full: the
// record's shapes; small: tiny's model on longer sequences, for `make repro SCALE=small`; tiny: the
// embedded corpus on a CPU; test: gradient checks and refdata); -1 +
// gm_fail naming --preset or --scale when unknown. Defined in train/presets.c.
int gm_run_config_preset(gm_run_config *rc, const char *name, const char *scale);
// Only the model of that preset and scale.
int gm_preset_model(gm_config *cfg, const char *name, const char *scale);
// The preset names and the scale names, NULL-terminated.
extern const char *const gm_preset_names[];
extern const char *const gm_scale_names[];
// Apply one override; fails naming the flag (unknown key, malformed or out-of-range value).
int gm_run_config_set(gm_run_config *rc, const char *key, const char *value);
// Derived fields (schedule steps, coefficient pointer) and consistency; fails naming the field,
// also for a flag given with gm_run_config_set that the chosen schedule or optimizer never reads
// (e.g. --warmup_frac with --lr_schedule=cooldown-frac).
int gm_run_config_finish(gm_run_config *rc);
// The whole configuration as one JSON object (malloc'd).
char *gm_run_config_json(const gm_run_config *rc);
// The same less the fields named in `skip` (NULL-terminated).
char *gm_run_config_json_without(const gm_run_config *rc, const char *const *skip);
// The fields that differ between two configuration JSON objects of gm_run_config_json (or any
// flat JSON objects), as "key (a_value -> b_value), ..." into buf (numbers in their shortest
// text), whole items while they fit in len, then "and N more" (base/short_list.h); "" when they
// agree. Returns how many differ.
int gm_run_config_diff(const char *a, const char *b, char *buf, size_t len);
// Print the accepted keys with their help and their values in *defaults to stdout.
void gm_run_config_help(const gm_run_config *defaults);

#endif
