#include "train/run_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

// ---- the run's fields (the model's are gm_config_fields): one row per overridable field ----

static const char *const LR_NAMES[] = {"warmup-warmdown", "cooldown-frac", NULL};
static const char *const MATRIX_NAMES[] = {"adam", "muon", NULL};
static const char *const MOM_NAMES[] = {"sum", "ema", NULL};
static const char *const SCALE_NAMES[] = {"none", "sqrt-max", "aspect", NULL};
static const char *const ORTHO_NAMES[] = {"svd", "newton-schulz", NULL};
static const char *const NORM_NAMES[] = {"of-g", "of-x", NULL};
_Static_assert(sizeof(gm_lr_kind) == sizeof(int) && sizeof(gm_matrix_opt) == sizeof(int) &&
                   sizeof(gm_momentum_form) == sizeof(int) && sizeof(gm_muon_scale) == sizeof(int) &&
                   sizeof(gm_ortho_method) == sizeof(int) && sizeof(gm_ns_norm_src) == sizeof(int),
               "enum fields are stored as int");

#define R_INT(key, m, lo, hi, help) GM_FIELD_INT(key, gm_run_config, m, lo, hi, help)
#define R_DOUBLE(key, m, lo, hi, help) GM_FIELD_DOUBLE(key, gm_run_config, m, lo, hi, help)
#define R_ENUM(key, m, names, help) GM_FIELD_ENUM(key, gm_run_config, m, names, help)
#define R_STR(key, m, help) GM_FIELD_STR(key, gm_run_config, m, help)
static const gm_field FIELDS[] = {
    // data and batch
    R_STR("train_data", train_data, "glob of train shards"),
    R_STR("val_data", val_data, "glob of val shards"),
    R_INT("grad_accum", grad_accum, 1, 1 << 16, "micro-batches per optimizer step"),
    R_INT("steps", steps, 1, 1 << 30, "optimizer steps"),
    R_INT("val_every", val_every, 0, 1 << 30, "validate every N steps (0: only at the end)"),
    GM_FIELD_LLONG("val_tokens", gm_run_config, val_tokens, 1, 1e15, "tokens per validation (fixed for every world size)"),
    R_INT("batch0_twice", batch0_twice, 0, 1, "records #4/#8: steps 0 and 1 see the same batch"),
    // schedules and optimizers
    R_ENUM("lr_schedule", lr.kind, LR_NAMES, "learning-rate schedule"),
    R_DOUBLE("warmup_frac", warmup_frac, 0, 1, "lr warmup, as a fraction of the steps"),
    R_DOUBLE("warmdown_frac", warmdown_frac, 0, 1, "lr warmdown, as a fraction of the steps"),
    R_DOUBLE("cooldown_frac", lr.cooldown_frac, 0, 1, "fraction of steps in the cooldown"),
    R_DOUBLE("lr_embed", lr_embed, 0, 1e3, "base lr of the embedding tables"),
    R_DOUBLE("lr_head", lr_head, 0, 1e3, "base lr of the head (the tied table)"),
    R_DOUBLE("lr_scalar", lr_scalar, 0, 1e3, "base lr of scalars (lambdas, skip weights)"),
    R_DOUBLE("lr_matrix", lr_matrix, 0, 1e3, "base lr of the block matrices"),
    R_ENUM("matrix_opt", matrix_opt, MATRIX_NAMES, "optimizer of the block matrices"),
    R_DOUBLE("adam_beta1", adam.beta1, 0, 1, "Adam beta1"),
    R_DOUBLE("adam_beta2", adam.beta2, 0, 1, "Adam beta2"),
    R_DOUBLE("adam_eps", adam.eps, 0, 1, "Adam epsilon"),
    R_DOUBLE("weight_decay", adam.weight_decay, 0, 10, "AdamW decoupled weight decay"),
    R_INT("adam_normalize_grad", adam.normalize_grad, 0, 1, "g / (||g|| + 1e-6) per tensor before Adam"),
    R_DOUBLE("muon_momentum", muon.momentum, 0, 1, "Muon momentum (after warmup)"),
    R_DOUBLE("muon_momentum_from", muon.momentum_from, 0, 1, "Muon momentum at step 0 of the warmup"),
    R_DOUBLE("muon_momentum_warmup_frac", momentum_warmup_frac, 0, 1, "Muon momentum warmup, as a fraction of the steps"),
    R_INT("muon_nesterov", muon.nesterov, 0, 1, "Nesterov momentum"),
    R_ENUM("muon_momentum_form", muon.form, MOM_NAMES, "buf = mu buf + g (sum) or lerp (ema)"),
    R_ENUM("muon_scale", muon.scale, SCALE_NAMES, "update scale rule"),
    R_INT("muon_split_qkv", muon.split_qkv, 0, 1, "orthogonalize a fused QKV weight per block"),
    R_ENUM("ortho", muon.ortho.method, ORTHO_NAMES, "orthogonalizer"),
    R_STR("ns_coeffs", ns_coeffs, "Newton-Schulz coefficient set (quintic, cubic, you5, polar-express)"),
    R_INT("ns_steps", muon.ortho.steps, 1, 100, "Newton-Schulz iterations"),
    R_INT("ns_bf16", muon.ortho.bf16, 0, 1, "emulate bf16 matmuls inside Newton-Schulz"),
    R_ENUM("ns_norm", muon.ortho.norm_src, NORM_NAMES, "Frobenius norm of G or of bf16(G)"),
    // run
    GM_FIELD_U64("seed", gm_run_config, seed, "initialization seed"),
    R_STR("out_dir", out_dir, "folder of the log and checkpoints"),
    R_INT("ckpt_every", ckpt_every, 0, 1 << 30, "checkpoint every N steps (0: only at the end)"),
    R_INT("halt_at", halt_at, 0, 1 << 30, "stop after N steps with a checkpoint, as Ctrl-C does (0: never)"),
    R_STR("resume", resume, "checkpoint to resume from"),
    R_INT("dump_at", dump_at, -1, 1 << 30, "write block-matrix gradients and momenta at this step to out_dir/matrices (-1: never)"),
    R_STR("comm", comm, "communicator: single, mpi, nccl, auto"),
    R_STR("backend", backend, "where the step runs: cpu, cuda, guarded (CPU with memory locked between kernels: tests)"),
    R_INT("device", device, 0, 1023, "CUDA device of --backend=cuda"),
    R_DOUBLE("comm_timeout", comm_timeout, 0.1, 1e6, "seconds before a stuck collective stops the job"),
    R_INT("log_every", log_every, 0, 3600, "seconds between progress lines"),
    R_INT("plan_memory", plan_memory, 0, 1, "print the backend memory plan (bytes per category) and exit"),
};
enum { NFIELDS = sizeof FIELDS / sizeof FIELDS[0] };

// A key is a model field (stored in rc->model) or a run field.
static const gm_field *find(const gm_run_config *rc, const char *key, const void **base) {
    const gm_field *f = gm_field_find(gm_config_fields, gm_config_nfields, key);
    if (f) return *base = &rc->model, f;
    *base = rc;
    return gm_field_find(FIELDS, NFIELDS, key);
}

int gm_run_config_set(gm_run_config *rc, const char *key, const char *value) {
    const void *base;
    const gm_field *f = find(rc, key, &base);
    if (!f) return gm_fail("--%s: unknown flag (see --help)", key);
    return gm_field_set(f, (void *)base, value);
}

// Append text to a growing buffer.
static void put(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t n = strlen(s);
    while (*len + n + 1 > *cap) {
        *cap *= 2;
        if (!(*buf = realloc(*buf, *cap))) abort();
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

static void put_fields(char **buf, size_t *len, size_t *cap, const gm_field *t, size_t n, const void *base) {
    char item[4096];  // the longest string field (511 chars) escaped as \u00XX: 3069
    for (size_t i = 0; i < n; i++) {
        snprintf(item, sizeof item, ",\"%s\":", t[i].key);
        put(buf, len, cap, item);
        if (gm_field_format(&t[i], base, 1, item, sizeof item) < 0) abort();  // item holds any field
        put(buf, len, cap, item);
    }
}

char *gm_run_config_json(const gm_run_config *rc) {
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap), item[64];
    if (!buf) abort();
    buf[0] = '\0';
    snprintf(item, sizeof item, "{\"preset\":\"%s\",\"scale\":\"%s\"", rc->model.name, rc->model.scale);
    put(&buf, &len, &cap, item);
    put_fields(&buf, &len, &cap, gm_config_fields, gm_config_nfields, &rc->model);
    put_fields(&buf, &len, &cap, FIELDS, NFIELDS, rc);
    put(&buf, &len, &cap, "}");
    return buf;
}

void gm_run_config_help(void) {
    gm_field_help(gm_config_fields, gm_config_nfields);
    gm_field_help(FIELDS, NFIELDS);
}

int gm_run_config_finish(gm_run_config *rc) {
    rc->lr.steps = rc->steps;
    // At the record's step count these give back its exact step numbers (e.g. 256 of 9536).
    rc->lr.warmup = (int)lround(rc->warmup_frac * rc->steps);
    rc->lr.warmdown = (int)lround(rc->warmdown_frac * rc->steps);
    rc->muon.momentum_warmup = (int)lround(rc->momentum_warmup_frac * rc->steps);
    rc->muon.lr = rc->lr_matrix;
    rc->muon.ortho.coeffs = gm_ns_coeffs_find(rc->ns_coeffs);
    if (!rc->muon.ortho.coeffs) return gm_fail("--ns_coeffs: %s", gm_error());
    if (rc->lr.kind == GM_LR_WARMUP_WARMDOWN && rc->lr.warmup + rc->lr.warmdown > rc->steps)
        return gm_fail("--warmup_frac/--warmdown_frac: %g + %g exceed 1", rc->warmup_frac, rc->warmdown_frac);
    if (gm_config_check(&rc->model)) return -1;
    return 0;
}
