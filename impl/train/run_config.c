#include "train/run_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

// ---- the field table: one row per overridable field --------------------------------------

typedef enum { F_INT, F_LLONG, F_U64, F_DOUBLE, F_STR, F_ENUM } ftype;

typedef struct {
    const char *key;
    ftype type;
    size_t offset, size;       // size: of the char array (F_STR)
    const char *const *names;  // F_ENUM: value names, index = value
    double lo, hi;             // numeric range
    const char *help;
} field;

static const char *const ACT_NAMES[] = {"gelu", "relu2", NULL};
static const char *const VE_NAMES[] = {"none", "unet", "ends", NULL};
static const char *const LR_NAMES[] = {"warmup-warmdown", "cooldown-frac", NULL};
static const char *const MATRIX_NAMES[] = {"adam", "muon", NULL};
static const char *const MOM_NAMES[] = {"sum", "ema", NULL};
static const char *const SCALE_NAMES[] = {"none", "sqrt-max", "aspect", NULL};
static const char *const ORTHO_NAMES[] = {"svd", "newton-schulz", "gram-ns", NULL};
static const char *const NORM_NAMES[] = {"of-g", "of-x", NULL};

#define M(f) offsetof(gm_run_config, model.f)
#define R(f) offsetof(gm_run_config, f)
#define I(key, off, lo, hi, help) {key, F_INT, off, 0, NULL, lo, hi, help}
#define D(key, off, lo, hi, help) {key, F_DOUBLE, off, 0, NULL, lo, hi, help}
#define S(key, f, help) {key, F_STR, R(f), sizeof(((gm_run_config *)0)->f), NULL, 0, 0, help}
#define E(key, off, names, help) {key, F_ENUM, off, 0, names, 0, 0, help}

static const field FIELDS[] = {
    // model
    I("vocab", M(vocab), 2, 65536, "token ids are below this"),
    I("vocab_padded", M(vocab_padded), 2, 1 << 20, "rows of the embedding/head tables"),
    I("n_layer", M(n_layer), 1, GM_MAX_LAYERS, "transformer blocks"),
    I("n_head", M(n_head), 1, 1024, "attention heads"),
    I("head_dim", M(head_dim), 2, 1024, "dimension per head"),
    I("d_model", M(d_model), 2, 1 << 16, "model width"),
    I("d_mlp", M(d_mlp), 2, 1 << 18, "MLP hidden width"),
    I("seq_len", M(seq_len), 1, 1 << 20, "tokens per sequence (T)"),
    I("batch", M(batch), 1, 1 << 16, "sequences per micro-batch per rank (B)"),
    I("eot", M(eot), 0, 65535, "end-of-text token id (document boundaries)"),
    I("tied_head", M(tied_head), 0, 1, "head shares the embedding table"),
    I("qkv_fused", M(qkv_fused), 0, 1, "one fused (3C, C) QKV matrix"),
    I("embed_norm", M(embed_norm), 0, 1, "RMSNorm after the embedding"),
    I("qk_norm", M(qk_norm), 0, 1, "RMSNorm of q and k"),
    D("norm_eps", M(norm_eps), 0, 1, "RMSNorm epsilon"),
    D("rotary_base", M(rotary_base), 1, 1e9, "rotary base"),
    I("rotary_half_truncated", M(rotary_half_truncated), 0, 1, "record #18's half-truncated rotary"),
    I("branch_scale_depth", M(branch_scale_depth), 0, 1, "attention branch x 1/sqrt(2 n_layer)"),
    E("mlp_act", M(mlp_act), ACT_NAMES, "MLP activation"),
    D("softcap", M(softcap), 0, 1e6, "logit softcap (0: none)"),
    I("zero_init_proj", M(zero_init_proj), 0, 1, "zero-init output projections"),
    I("zero_init_head", M(zero_init_head), 0, 1, "zero-init untied head"),
    I("x0_lambdas", M(x0_lambdas), 0, 1, "learnable x/x0 mix per block"),
    I("n_value_embeds", M(n_value_embeds), 0, GM_MAX_VALUE_EMBEDS, "value-embedding tables"),
    E("ve_pattern", M(ve_pattern), VE_NAMES, "which layers read which table"),
    I("unet_skips", M(unet_skips), 0, 1, "U-net skip connections"),
    {"skip_attn_mask", F_INT, M(skip_attn_mask), 0, NULL, 0, 4294967295.0, "bit l: layer l has no attention"},
    I("doc_mask", M(doc_mask), 0, 1, "attention within documents only"),
    I("attn_block", M(attn_block), 1, 1 << 16, "block-mask block size (tokens)"),
    I("window_start_tokens", M(window_start_tokens), 0, 1 << 24, "sliding window at step 0 (0: none)"),
    I("window_end_tokens", M(window_end_tokens), 0, 1 << 24, "sliding window at the last step"),
    // data and batch
    S("train_data", train_data, "glob of train shards"),
    S("val_data", val_data, "glob of val shards"),
    I("grad_accum", R(grad_accum), 1, 1 << 16, "micro-batches per optimizer step"),
    I("steps", R(steps), 1, 1 << 30, "optimizer steps"),
    I("val_every", R(val_every), 0, 1 << 30, "validate every N steps (0: only at the end)"),
    {"val_tokens", F_LLONG, R(val_tokens), 0, NULL, 1, 1e15, "tokens per validation (fixed for every world size)"},
    I("batch0_twice", R(batch0_twice), 0, 1, "records #4/#8: steps 0 and 1 see the same batch"),
    // schedules and optimizers
    E("lr_schedule", R(lr.kind), LR_NAMES, "learning-rate schedule"),
    D("warmup_frac", R(warmup_frac), 0, 1, "lr warmup, as a fraction of the steps"),
    D("warmdown_frac", R(warmdown_frac), 0, 1, "lr warmdown, as a fraction of the steps"),
    D("cooldown_frac", R(lr.cooldown_frac), 0, 1, "fraction of steps in the cooldown"),
    D("lr_embed", R(lr_embed), 0, 1e3, "base lr of the embedding tables"),
    D("lr_head", R(lr_head), 0, 1e3, "base lr of the head (the tied table)"),
    D("lr_scalar", R(lr_scalar), 0, 1e3, "base lr of scalars (lambdas, skip weights)"),
    D("lr_matrix", R(lr_matrix), 0, 1e3, "base lr of the block matrices"),
    E("matrix_opt", R(matrix_opt), MATRIX_NAMES, "optimizer of the block matrices"),
    D("adam_beta1", R(adam.beta1), 0, 1, "Adam beta1"),
    D("adam_beta2", R(adam.beta2), 0, 1, "Adam beta2"),
    D("adam_eps", R(adam.eps), 0, 1, "Adam epsilon"),
    D("weight_decay", R(adam.weight_decay), 0, 10, "AdamW decoupled weight decay"),
    I("adam_normalize_grad", R(adam.normalize_grad), 0, 1, "g / (||g|| + 1e-6) per tensor before Adam"),
    D("muon_momentum", R(muon.momentum), 0, 1, "Muon momentum (after warmup)"),
    D("muon_momentum_from", R(muon.momentum_from), 0, 1, "Muon momentum at step 0 of the warmup"),
    D("muon_momentum_warmup_frac", R(momentum_warmup_frac), 0, 1, "Muon momentum warmup, as a fraction of the steps"),
    I("muon_nesterov", R(muon.nesterov), 0, 1, "Nesterov momentum"),
    E("muon_momentum_form", R(muon.form), MOM_NAMES, "buf = mu buf + g (sum) or lerp (ema)"),
    E("muon_scale", R(muon.scale), SCALE_NAMES, "update scale rule"),
    I("muon_split_qkv", R(muon.split_qkv), 0, 1, "orthogonalize a fused QKV weight per block"),
    E("ortho", R(muon.ortho.method), ORTHO_NAMES, "orthogonalizer"),
    S("ns_coeffs", ns_coeffs, "Newton-Schulz coefficient set (quintic, cubic, you5, polar-express)"),
    I("ns_steps", R(muon.ortho.steps), 1, 100, "Newton-Schulz iterations"),
    S("gram_restarts", gram_restarts, "gram-ns: restart after these iterations, e.g. 2 or 2,4 (none: never)"),
    I("ns_bf16", R(muon.ortho.bf16), 0, 1, "emulate bf16 matmuls inside Newton-Schulz"),
    E("ns_norm", R(muon.ortho.norm_src), NORM_NAMES, "Frobenius norm of G or of bf16(G)"),
    // run
    {"seed", F_U64, R(seed), 0, NULL, 0, 0, "initialization seed"},
    S("out_dir", out_dir, "folder of the log and checkpoints"),
    I("ckpt_every", R(ckpt_every), -1, 1 << 30, "checkpoint every N steps (0: only at the end; -1: never, for benchmarks)"),
    I("halt_at", R(halt_at), 0, 1 << 30, "stop after N steps with a checkpoint, as Ctrl-C does (0: never)"),
    S("resume", resume, "checkpoint to resume from"),
    I("dump_at", R(dump_at), -1, 1 << 30, "write block-matrix gradients and momenta at this step to out_dir/matrices (-1: never)"),
    S("comm", comm, "communicator: single, mpi, nccl, auto"),
    S("backend", backend, "where the step runs: cpu, cuda, guarded (CPU with memory locked between kernels: tests)"),
    I("device", R(device), 0, 1023, "CUDA device of --backend=cuda"),
    D("comm_timeout", R(comm_timeout), 0.1, 1e6, "seconds before a stuck collective stops the job"),
    I("log_every", R(log_every), 0, 3600, "seconds between progress lines"),
};

static const field *find_field(const char *key) {
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++)
        if (!strcmp(FIELDS[i].key, key)) return &FIELDS[i];
    return NULL;
}

// Enum fields are read and written as int: every enum type in the table must be int-sized.
_Static_assert(sizeof(gm_act) == sizeof(int) && sizeof(gm_ve_pattern) == sizeof(int) &&
                   sizeof(gm_lr_kind) == sizeof(int) && sizeof(gm_matrix_opt) == sizeof(int) &&
                   sizeof(gm_momentum_form) == sizeof(int) && sizeof(gm_muon_scale) == sizeof(int) &&
                   sizeof(gm_ortho_method) == sizeof(int) && sizeof(gm_ns_norm_src) == sizeof(int),
               "enum fields are accessed as int");

int gm_run_config_set(gm_run_config *rc, const char *key, const char *value) {
    const field *f = find_field(key);
    if (!f) return gm_fail("--%s: unknown flag (see --help)", key);
    char *p = (char *)rc + f->offset, *end;
    errno = 0;
    switch (f->type) {
    case F_U64: {
        unsigned long long u = strtoull(value, &end, 0);
        if (errno || end == value || *end || value[0] == '-') return gm_fail("--%s: '%s' is not an unsigned integer", key, value);
        *(uint64_t *)p = u;
        return 0;
    }
    case F_INT:
    case F_LLONG: {
        long long v = strtoll(value, &end, 0);
        if (errno || end == value || *end) return gm_fail("--%s: '%s' is not an integer", key, value);
        if (v < f->lo || v > f->hi) return gm_fail("--%s: %lld is out of range [%.0f, %.0f]", key, v, f->lo, f->hi);
        if (f->type == F_INT) *(int *)p = (int)(unsigned)v;
        else *(long long *)p = v;
        return 0;
    }
    case F_DOUBLE: {
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v)) return gm_fail("--%s: '%s' is not a finite number", key, value);
        if (v < f->lo || v > f->hi) return gm_fail("--%s: %g is out of range [%g, %g]", key, v, f->lo, f->hi);
        *(double *)p = v;
        return 0;
    }
    case F_STR:
        if (strlen(value) >= f->size) return gm_fail("--%s: value longer than %zu characters", key, f->size - 1);
        strcpy(p, value);
        return 0;
    case F_ENUM:
        for (int i = 0; f->names[i]; i++)
            if (!strcmp(f->names[i], value)) {
                *(int *)p = i;
                return 0;
            }
        {
            char known[256] = "";
            for (int i = 0; f->names[i]; i++) snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", f->names[i]);
            return gm_fail("--%s: '%s' is not one of: %s", key, value, known);
        }
    }
    return gm_fail("--%s: internal: bad field type", key);
}

// Append text to a growing buffer: raw (JSON syntax) or escaped as a JSON string body.
static void put(char **buf, size_t *len, size_t *cap, const char *s, int escape) {
    for (; *s; s++) {
        char tmp[8];
        if (escape && (*s == '"' || *s == '\\')) snprintf(tmp, sizeof tmp, "\\%c", *s);
        else if (escape && (unsigned char)*s < 0x20) snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned char)*s);
        else snprintf(tmp, sizeof tmp, "%c", *s);
        size_t n = strlen(tmp);
        if (*len + n + 1 > *cap) {
            *cap *= 2;
            *buf = realloc(*buf, *cap);
            if (!*buf) abort();
        }
        memcpy(*buf + *len, tmp, n + 1);
        *len += n;
    }
}

char *gm_run_config_json(const gm_run_config *rc) {
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap), item[1024];
    if (!buf) abort();
    buf[0] = '\0';
    put(&buf, &len, &cap, "{\"preset\":\"", 0);
    put(&buf, &len, &cap, rc->model.name, 1);
    put(&buf, &len, &cap, "\",\"scale\":\"", 0);
    put(&buf, &len, &cap, rc->model.scale, 1);
    put(&buf, &len, &cap, "\"", 0);
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++) {
        const field *f = &FIELDS[i];
        const char *p = (const char *)rc + f->offset;
        snprintf(item, sizeof item, ",\"%s\":", f->key);
        put(&buf, &len, &cap, item, 0);
        switch (f->type) {
        case F_INT: snprintf(item, sizeof item, "%d", *(const int *)p); break;
        case F_LLONG: snprintf(item, sizeof item, "%lld", *(const long long *)p); break;
        case F_U64: snprintf(item, sizeof item, "%llu", (unsigned long long)*(const uint64_t *)p); break;
        case F_DOUBLE: snprintf(item, sizeof item, "%.17g", *(const double *)p); break;
        case F_ENUM: snprintf(item, sizeof item, "\"%s\"", f->names[*(const int *)p]); break;
        case F_STR: snprintf(item, sizeof item, "\""); break;
        }
        put(&buf, &len, &cap, item, 0);
        if (f->type == F_STR) {
            put(&buf, &len, &cap, p, 1);
            put(&buf, &len, &cap, "\"", 0);
        }
    }
    put(&buf, &len, &cap, "}", 0);
    return buf;
}

void gm_run_config_help(void) {
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++) {
        const field *f = &FIELDS[i];
        printf("  --%-24s %s", f->key, f->help);
        if (f->type == F_ENUM) {
            printf(" (");
            for (int k = 0; f->names[k]; k++) printf("%s%s", k ? ", " : "", f->names[k]);
            printf(")");
        }
        printf("\n");
    }
}

// ---- presets: the records' optimizers and schedules (refdata/records/PRESETS.md) ----------

typedef struct {
    const char *name;
    int steps, warmup, warmdown;
    double cooldown_frac;  // > 0: the cooldown-fraction schedule
    int val_every;
    double lr_embed, lr_head, lr_scalar, lr_matrix;
    gm_matrix_opt matrix_opt;
    double beta1, weight_decay;
    int normalize_grad;
    gm_momentum_form form;
    gm_muon_scale scale;
    int split_qkv, momentum_warmup, batch0_twice;
    gm_ns_norm_src ns_norm;
} run_preset;

static const run_preset RUN_PRESETS[] = {
    // name         steps warm wdown cfrac val  embed head   scalar matrix  opt             b1   wd   ng  form             scale                   qkv mw   b0 norm
    {"adamw",       9536, 256, 2048, 0,    128, 0.0018, 0.0018, 0.0018, 0.0018, GM_MATRIX_ADAM, 0.9, 0.1, 1, GM_MOMENTUM_SUM, GM_MUON_SCALE_NONE,     0, 0,   0, GM_NS_NORM_OF_G},
    {"muon-v1",     7000, 250, 2000, 0,    128, 0.0018, 0.0018, 0.0018, 0.018,  GM_MATRIX_MUON, 0.9, 0,   0, GM_MOMENTUM_SUM, GM_MUON_SCALE_NONE,     0, 0,   0, GM_NS_NORM_OF_G},
    {"muon-v2",     6200, 0,   1800, 0,    125, 0.0036, 0.0036, 0.0036, 0.00036, GM_MATRIX_MUON, 0.9, 0,  0, GM_MOMENTUM_SUM, GM_MUON_SCALE_SQRT_MAX, 1, 0,   1, GM_NS_NORM_OF_G},
    {"untied",      4578, 0,   1308, 0,    125, 0.3,    0.002,  0.002,  0.02,   GM_MATRIX_MUON, 0.9, 0,   0, GM_MOMENTUM_SUM, GM_MUON_SCALE_ASPECT,   0, 0,   1, GM_NS_NORM_OF_X},
    {"value-embed", 1480, 0,   600,  0,    125, 0.6,    0.008,  0.04,   0.05,   GM_MATRIX_MUON, 0.8, 0,   0, GM_MOMENTUM_EMA, GM_MUON_SCALE_ASPECT,   0, 300, 0, GM_NS_NORM_OF_X},
    {"softcap",     1390, 0,   0,    0.4,  125, 0.6,    0.008,  0.04,   0.05,   GM_MATRIX_MUON, 0.8, 0,   0, GM_MOMENTUM_EMA, GM_MUON_SCALE_ASPECT,   0, 300, 0, GM_NS_NORM_OF_X},
};

// Tiny scale: the same recipe over fewer steps (the schedules are fractions of the steps).
enum { TINY_STEPS = 200, TINY_VAL_EVERY = 25, TINY_VAL_TOKENS = 32768 };

int gm_run_config_preset(gm_run_config *rc, const char *preset, const char *scale) {
    memset(rc, 0, sizeof *rc);
    if (gm_config_preset(&rc->model, preset, scale)) return -1;
    const run_preset *p = NULL;
    for (size_t i = 0; i < sizeof RUN_PRESETS / sizeof RUN_PRESETS[0]; i++)
        if (!strcmp(RUN_PRESETS[i].name, preset)) p = &RUN_PRESETS[i];
    if (!p) return gm_fail("--preset: no optimizer preset for '%s'", preset);
    int tiny = !strcmp(scale, "tiny");
    rc->steps = tiny ? TINY_STEPS : p->steps;
    rc->grad_accum = 1;
    rc->val_every = tiny ? TINY_VAL_EVERY : p->val_every;
    rc->val_tokens = tiny ? TINY_VAL_TOKENS : 10485760;
    rc->batch0_twice = p->batch0_twice;
    rc->lr.kind = p->cooldown_frac > 0 ? GM_LR_COOLDOWN_FRAC : GM_LR_WARMUP_WARMDOWN;
    rc->warmup_frac = (double)p->warmup / p->steps;
    rc->warmdown_frac = (double)p->warmdown / p->steps;
    rc->lr.cooldown_frac = p->cooldown_frac;
    rc->lr_embed = p->lr_embed;
    rc->lr_head = p->lr_head;
    rc->lr_scalar = p->lr_scalar;
    rc->lr_matrix = p->lr_matrix;
    rc->matrix_opt = p->matrix_opt;
    gm_adam_hparams adam = {0, p->beta1, 0.95, 1e-8, p->weight_decay, p->normalize_grad};
    rc->adam = adam;
    rc->muon.momentum = 0.95;
    rc->muon.momentum_from = 0.85;
    rc->momentum_warmup_frac = (double)p->momentum_warmup / p->steps;
    rc->muon.nesterov = 1;
    rc->muon.form = p->form;
    rc->muon.scale = p->scale;
    rc->muon.split_qkv = p->split_qkv;
    rc->muon.ortho.method = GM_ORTHO_NS;
    rc->muon.ortho.steps = 5;
    rc->muon.ortho.bf16 = 1;
    rc->muon.ortho.norm_src = p->ns_norm;
    snprintf(rc->ns_coeffs, sizeof rc->ns_coeffs, "quintic");
    snprintf(rc->gram_restarts, sizeof rc->gram_restarts, "2");  // Dao-AILab's choice for 5 steps
    if (tiny) {
        snprintf(rc->train_data, sizeof rc->train_data, "data/gcide/train_*.bin");
        snprintf(rc->val_data, sizeof rc->val_data, "data/gcide/val_*.bin");
    } else {
        snprintf(rc->train_data, sizeof rc->train_data, "data/fineweb10B/fineweb_train_*.bin");
        snprintf(rc->val_data, sizeof rc->val_data, "data/fineweb10B/fineweb_val_*.bin");
    }
    rc->seed = 1337;
    snprintf(rc->out_dir, sizeof rc->out_dir, "runs/%s-%s", preset, scale);
    snprintf(rc->comm, sizeof rc->comm, "auto");
    snprintf(rc->backend, sizeof rc->backend, "cpu");
    rc->comm_timeout = 300;
    rc->log_every = 5;
    rc->dump_at = -1;
    return 0;
}

// "2,4" -> bits 2 and 4 (restart before 0-based iteration k = after k iterations); "none" -> 0.
static int parse_restarts(const char *list, unsigned *mask) {
    *mask = 0;
    if (!strcmp(list, "none")) return 0;
    for (const char *p = list;;) {
        char *end;
        errno = 0;
        long k = strtol(p, &end, 10);
        if (end == p || errno || k < 1 || k > 31 || (*end != ',' && *end != 0))
            return gm_fail("--gram_restarts: '%s' is not 'none' or a comma-separated list of iterations 1..31", list);
        *mask |= 1u << k;
        if (!*end) return 0;
        p = end + 1;
    }
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
    if (parse_restarts(rc->gram_restarts, &rc->muon.ortho.gram_restarts)) return -1;
    if (rc->lr.kind == GM_LR_WARMUP_WARMDOWN && rc->lr.warmup + rc->lr.warmdown > rc->steps)
        return gm_fail("--warmup_frac/--warmdown_frac: %g + %g exceed 1", rc->warmup_frac, rc->warmdown_frac);
    if (gm_config_check(&rc->model)) return -1;
    return 0;
}
