#include "train/run_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fmt_double.h"
#include "base/short_list.h"

// ---- the run's fields (the model's are gm_config_fields): one row per overridable field ----

static const char *const LR_NAMES[] = {"warmup-warmdown", "cooldown-frac", NULL};
static const char *const MATRIX_NAMES[] = {"adam", "muon", NULL};
static const char *const MOM_NAMES[] = {"sum", "ema", NULL};
static const char *const SCALE_NAMES[] = {"none", "sqrt-max", "aspect", NULL};
static const char *const ORTHO_NAMES[] = {"svd", "newton-schulz", "gram-ns", NULL};
static const char *const NORM_NAMES[] = {"of-g", "of-x", NULL};
static const char *const GRAD_SYNC_NAMES[] = {"all-reduce", "reduce-scatter", NULL};
static const char *const RECOMPUTE_NAMES[] = {"auto", "on", "off", NULL};
_Static_assert(sizeof(gm_lr_kind) == sizeof(int) && sizeof(gm_matrix_opt) == sizeof(int) && sizeof(gm_grad_sync) == sizeof(int) &&
                   sizeof(gm_recompute) == sizeof(int) &&
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
    R_DOUBLE("lr_floor", lr.floor, 0, 1, "lr multiplier the cooldown ends at (record #43, 2025-11-10_CautiousWD: 0.1)"),
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
    R_DOUBLE("muon_momentum_cooldown_frac", momentum_cooldown_frac, 0, 1,
             "the last fraction of the steps, over which the Muon momentum falls back to muon_momentum_from (record #43: "
             "its last 50 steps)"),
    R_INT("muon_nesterov", muon.nesterov, 0, 1, "Nesterov momentum"),
    R_ENUM("muon_momentum_form", muon.form, MOM_NAMES, "buf = mu buf + g (sum) or lerp (ema)"),
    R_ENUM("muon_scale", muon.scale, SCALE_NAMES, "update scale rule"),
    R_INT("muon_split_qkv", muon.split_qkv, 0, 1, "orthogonalize a fused QKV weight per block"),
    R_ENUM("ortho", muon.ortho.method, ORTHO_NAMES, "orthogonalizer"),
    R_STR("ns_coeffs", ns_coeffs,
          "Newton-Schulz coefficient set (quintic, cubic, you5, polar-express); polar-express is Polar Express as record "
          "2025-09-29_PolarExpress runs it: five per-iteration triples on X / (1.02 ||X||_F + 1e-6), X = bf16(G) with "
          "--ns_bf16=1 --ns_norm=of-x, transposed when tall"),
    R_INT("ns_steps", muon.ortho.steps, 1, 100, "Newton-Schulz iterations"),
    R_STR("gram_restarts", gram_restarts, "gram-ns: restart after these iterations, e.g. 2 or 2,4 (none: never)"),
    R_INT("ns_bf16", muon.ortho.bf16, 0, 1, "emulate bf16 matmuls inside Newton-Schulz"),
    R_ENUM("ns_norm", muon.ortho.norm_src, NORM_NAMES, "Frobenius norm of G or of bf16(G)"),
    R_INT("normuon", muon.normuon, 0, 1,
          "NorMuon (record #43, 2025-11-10_CautiousWD): after orthogonalization, each row (tall matrix) or column (square "
          "or wide) of the update divided by the root of an EMA of its mean square, then the update rescaled to its norm before"),
    R_DOUBLE("normuon_beta2", muon.beta2, 0, 1, "NorMuon's second-moment EMA coefficient (record #43: 0.95)"),
    R_DOUBLE("muon_wd", muon.weight_decay, 0, 100,
             "Muon's decoupled weight decay (record #43's weight_decay, 1.2 there): p -= lr*scale*(update + lr*muon_wd*p)"),
    R_INT("cautious_wd", muon.cautious, 0, 1,
          "cautious weight decay (record #43): --muon_wd only where the update and the parameter agree in sign (update*p >= 0)"),
    // run
    GM_FIELD_U64("seed", gm_run_config, seed, "initialization seed"),
    R_STR("out_dir", out_dir, "folder of the log and checkpoints"),
    R_INT("ckpt_every", ckpt_every, -1, 1 << 30, "checkpoint every N steps (0: only at the end; -1: never, for benchmarks)"),
    R_INT("ckpt_every_s", ckpt_every_s, 0, 1 << 30,
          "also checkpoint when this many seconds of wall time passed since the last one (checked after every step and "
          "validation), so that a kill -9 or a power loss costs at most that plus one step or validation, and the checkpoint "
          "write it may cut short (0: not by time)"),
    R_INT("halt_at", halt_at, 0, 1 << 30, "stop after N steps with a checkpoint, as Ctrl-C does (0: never)"),
    R_STR("resume", resume, "checkpoint to resume from"),
    R_INT("overwrite", overwrite, 0, 1, "replace the run already in out_dir (its log.jsonl and ckpt.bin)"),
    R_INT("dump_at", dump_at, -1, 1 << 30, "write block-matrix gradients and momenta at this step to out_dir/matrices (-1: never)"),
    R_STR("comm", comm, "communicator: single, mpi, nccl, auto"),
    R_ENUM("grad_sync", grad_sync, GRAD_SYNC_NAMES,
           "gradient averaging across ranks: all-reduce (every rank gets every gradient) or reduce-scatter (each Muon "
           "matrix's gradient goes only to the rank that orthogonalizes it, which alone keeps its momentum; the Adam "
           "parameters' stay all-reduced; record 2025-05-30_noallreduce); the same values, so the same training"),
    R_STR("backend", backend, "where the step runs: cpu, cuda, guarded (CPU with memory locked between kernels: tests), cpu-bf16mm (CPU with the CUDA matmul's bf16 operands), cpu-bf16 (cpu-bf16mm with activations and their gradients rounded to bf16 where a bf16-activation CUDA backend stores them)"),
    R_INT("device", device, 0, 1023, "CUDA device of --backend=cuda"),
    R_ENUM("recompute", recompute, RECOMPUTE_NAMES,
           "recompute the blocks' norms, rotary, value mix and MLP activation in the backward (on) or keep them per "
           "layer (off: more memory, ~23 fewer elementwise passes a step); the same values bit for bit either way; auto: "
           "off where the memory plan without it fits the backend's memory (host: what the process may fill; CUDA: the "
           "device's free memory less 4 GB of workspace), else on"),
    R_INT("head_rows", head_rows, 0, 1 << 30,
          "rows of logits the head computes at a time (its matmuls and the cross-entropy run chunk by chunk); 0: "
          "auto: a micro-batch's B*T rows in one chunk (as the records compute them) where the memory plan with them "
          "fits the backend's memory (as for --recompute, which keeps the first claim on it), else 8192"),
    R_DOUBLE("comm_timeout", comm_timeout, 0.1, 1e6, "seconds before a stuck collective stops the job"),
    R_INT("log_every", log_every, 0, 3600, "seconds between progress lines"),
    R_INT("plan_memory", plan_memory, 0, 1, "print the backend memory plan (bytes per category) and exit"),
};
enum { NFIELDS = sizeof FIELDS / sizeof FIELDS[0] };
_Static_assert(GM_CONFIG_MAX_FIELDS + NFIELDS <= GM_RUN_MAX_FIELDS, "rc->given has a slot per field");

// A key is a model field (stored in rc->model) or a run field; *slot is its index in rc->given.
static const gm_field *find(const gm_run_config *rc, const char *key, const void **base, size_t *slot) {
    const gm_field *f = gm_field_find(gm_config_fields, gm_config_nfields, key);
    if (f) return *base = &rc->model, *slot = (size_t)(f - gm_config_fields), f;
    *base = rc;
    f = gm_field_find(FIELDS, NFIELDS, key);
    if (f) *slot = GM_CONFIG_MAX_FIELDS + (size_t)(f - FIELDS);
    return f;
}

int gm_run_config_set(gm_run_config *rc, const char *key, const char *value) {
    const void *base;
    size_t slot;
    const gm_field *f = find(rc, key, &base, &slot);
    if (!f) return gm_fail("--%s: unknown flag (see --help)", key);
    if (gm_field_set(f, (void *)base, value)) return -1;
    rc->given[slot] = 1;
    return 0;
}

static int given(const gm_run_config *rc, const char *key) {
    const void *base;
    size_t slot;
    return find(rc, key, &base, &slot) && rc->given[slot];
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

// Whether key is one of the NULL-terminated list (NULL: none).
static int listed(const char *key, const char *const *list) {
    for (; list && *list; list++)
        if (!strcmp(key, *list)) return 1;
    return 0;
}

static void put_fields(char **buf, size_t *len, size_t *cap, const gm_field *t, size_t n, const void *base,
                       const char *const *skip) {
    char item[4096];  // the longest string field (511 chars) escaped as \u00XX: 3069
    for (size_t i = 0; i < n; i++) {
        if (listed(t[i].key, skip)) continue;
        snprintf(item, sizeof item, ",\"%s\":", t[i].key);
        put(buf, len, cap, item);
        if (gm_field_format(&t[i], base, 1, item, sizeof item) < 0) abort();  // item holds any field
        put(buf, len, cap, item);
    }
}

char *gm_run_config_json(const gm_run_config *rc) { return gm_run_config_json_without(rc, NULL); }

char *gm_run_config_json_without(const gm_run_config *rc, const char *const *skip) {
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap), item[64];
    if (!buf) abort();
    buf[0] = '\0';
    snprintf(item, sizeof item, "{\"preset\":\"%s\",\"scale\":\"%s\"", rc->model.name, rc->model.scale);
    put(&buf, &len, &cap, item);
    put_fields(&buf, &len, &cap, gm_config_fields, gm_config_nfields, &rc->model, skip);
    put_fields(&buf, &len, &cap, FIELDS, NFIELDS, rc, skip);
    put(&buf, &len, &cap, "}");
    return buf;
}

// ---- differences between two configurations ----

// One "key":value pair of a flat JSON object at *p (after '{' or ','); 0 at the end.
static int next_pair(const char **p, const char **key, size_t *klen, const char **val, size_t *vlen) {
    const char *s = *p;
    if (*s != '{' && *s != ',') return 0;
    if (*++s != '"') return 0;
    *key = ++s;
    while (*s && *s != '"') s += s[0] == '\\' && s[1] ? 2 : 1;
    *klen = (size_t)(s - *key);
    if (*s++ != '"' || *s++ != ':') return 0;
    *val = s;
    int depth = 0, in_str = 0;
    for (; *s && (in_str || depth > 0 || (*s != ',' && *s != '}')); s++) {
        if (in_str && *s == '\\' && s[1]) s++;
        else if (*s == '"') in_str = !in_str;
        else if (!in_str) depth += (*s == '{' || *s == '[') - (*s == '}' || *s == ']');
    }
    *vlen = (size_t)(s - *val);
    *p = s;
    return 1;
}

// The value of key in the flat JSON object json, or NULL.
static const char *lookup(const char *json, const char *key, size_t klen, size_t *vlen) {
    const char *p = json, *k, *v;
    size_t kn;
    while (next_pair(&p, &k, &kn, &v, vlen))
        if (kn == klen && !memcmp(k, key, klen)) return v;
    return NULL;
}

// Whether the JSON value v (vn characters) is a number; its value in *d.
static int json_number(const char *v, size_t vn, double *d) {
    char num[48], *end;
    if (!v || vn == 0 || vn >= sizeof num || *v == '"') return 0;
    memcpy(num, v, vn), num[vn] = '\0';
    *d = strtod(num, &end);
    return end != num && *end == '\0';
}

// A JSON value as a message shows it: a number in its shortest text that reads back as the same
// double (a checkpoint of a build that printed 17 digits shows "0.05", as this run does), anything
// else as it is, and NULL as "absent". Returns its length; the text is in *out.
static int shown_value(const char *v, size_t vn, char buf[GM_FMT_DOUBLE_LEN], const char **out) {
    double d;
    *out = !v ? "absent" : json_number(v, vn, &d) ? gm_fmt_double(d, buf) : v;
    return v && *out == v ? (int)vn : (int)strlen(*out);
}

// Add "key (a -> b)" (a or b NULL: "absent") to the list.
static void add_difference(gm_short_list *l, const char *key, size_t klen, const char *a, size_t an, const char *b, size_t bn) {
    char abuf[GM_FMT_DOUBLE_LEN], bbuf[GM_FMT_DOUBLE_LEN];
    const char *as, *bs;
    int al = shown_value(a, an, abuf, &as), bl = shown_value(b, bn, bbuf, &bs);
    gm_short_list_add(l, "%.*s (%.*s -> %.*s)", (int)klen, key, al, as, bl, bs);
}

// Two JSON values are the same when their text is, or when both are numbers of equal value: a
// checkpoint written when numbers were printed with 17 digits ("0.050000000000000003") holds the
// same configuration as this run's shortest text ("0.05").
static int same_value(const char *a, size_t an, const char *b, size_t bn) {
    double x, y;
    return (an == bn && !memcmp(a, b, an)) || (json_number(a, an, &x) && json_number(b, bn, &y) && x == y);
}

int gm_run_config_diff(const char *a, const char *b, char *buf, size_t len) {
    gm_short_list l;
    gm_short_list_init(&l, buf, len);
    const char *p = a, *k, *v, *w;
    size_t kn, vn, wn;
    while (next_pair(&p, &k, &kn, &v, &vn))
        if (!(w = lookup(b, k, kn, &wn)) || !same_value(v, vn, w, wn)) add_difference(&l, k, kn, v, vn, w, wn);
    for (p = b; next_pair(&p, &k, &kn, &w, &wn);)
        if (!lookup(a, k, kn, &vn)) add_difference(&l, k, kn, NULL, 0, w, wn);
    gm_short_list_end(&l);
    return l.shown + l.left_out;
}

void gm_run_config_help(const gm_run_config *defaults) {
    gm_field_help(gm_config_fields, gm_config_nfields, &defaults->model);
    gm_field_help(FIELDS, NFIELDS, defaults);
}

// ---- flags the chosen recipe never reads ----

static int lr_warmup_warmdown(const gm_run_config *rc) { return rc->lr.kind == GM_LR_WARMUP_WARMDOWN; }
static int lr_cooldown_frac(const gm_run_config *rc) { return rc->lr.kind == GM_LR_COOLDOWN_FRAC; }
static int matrices_by_muon(const gm_run_config *rc) { return rc->matrix_opt == GM_MATRIX_MUON; }
static int uses_normuon(const gm_run_config *rc) { return matrices_by_muon(rc) && rc->muon.normuon; }
static int has_muon_wd(const gm_run_config *rc) { return matrices_by_muon(rc) && rc->muon.weight_decay > 0; }
static int has_window(const gm_run_config *rc) { return rc->model.window_start_tokens > 0; }
static int uses_gram_ns(const gm_run_config *rc) {
    return rc->matrix_opt == GM_MATRIX_MUON && rc->muon.ortho.method == GM_ORTHO_GRAM_NS;
}

static const struct {
    const char *key;
    int (*read)(const gm_run_config *rc);  // 1 when the configuration uses the flag
    const char *why;                       // what makes it unused
} DEPENDENT[] = {
    {"warmup_frac", lr_warmup_warmdown, "--lr_schedule=cooldown-frac sets the lr from --cooldown_frac alone"},
    {"warmdown_frac", lr_warmup_warmdown, "--lr_schedule=cooldown-frac sets the lr from --cooldown_frac alone"},
    {"cooldown_frac", lr_cooldown_frac, "--lr_schedule=warmup-warmdown sets the lr from --warmup_frac and --warmdown_frac"},
    {"lr_floor", lr_cooldown_frac, "--lr_schedule=warmup-warmdown has no cooldown"},
    {"muon_momentum_from", matrices_by_muon, "--matrix_opt=adam: no Muon momentum to warm up"},
    {"muon_momentum_warmup_frac", matrices_by_muon, "--matrix_opt=adam: no Muon momentum to warm up"},
    {"muon_momentum_cooldown_frac", matrices_by_muon, "--matrix_opt=adam: no Muon momentum"},
    {"normuon", matrices_by_muon, "--matrix_opt=adam: no Muon update to normalize"},
    {"normuon_beta2", uses_normuon, "--normuon=0: no NorMuon second moments"},
    {"muon_wd", matrices_by_muon, "--matrix_opt=adam: --weight_decay is AdamW's"},
    {"cautious_wd", has_muon_wd, "--muon_wd=0: no Muon weight decay to make cautious"},
    {"window_end_tokens", has_window, "--window_start_tokens=0: no sliding window"},
    {"gram_restarts", uses_gram_ns, "the matrices are not orthogonalized by --ortho=gram-ns"},
    {"grad_sync", matrices_by_muon, "--matrix_opt=adam: no Muon matrices to reduce-scatter"},
};

static int refuse_unused_flags(const gm_run_config *rc) {
    for (size_t i = 0; i < sizeof DEPENDENT / sizeof DEPENDENT[0]; i++)
        if (given(rc, DEPENDENT[i].key) && !DEPENDENT[i].read(rc))
            return gm_fail("--%s: has no effect on this run (%s, preset %s); leave it out", DEPENDENT[i].key,
                           DEPENDENT[i].why, rc->model.name);
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
    // Fractions that fit (checked below) may still round to one step more than the run has
    // (0.5 + 0.5 of 3 steps: 2 + 2): the warmdown gives that step up.
    rc->lr.warmdown = (int)lround(rc->warmdown_frac * rc->steps);
    if (rc->lr.warmup + rc->lr.warmdown > rc->steps) rc->lr.warmdown = rc->steps - rc->lr.warmup;
    rc->muon.momentum_warmup = (int)lround(rc->momentum_warmup_frac * rc->steps);
    rc->muon.momentum_cooldown = (int)lround(rc->momentum_cooldown_frac * rc->steps);
    rc->muon.steps = rc->steps;
    rc->muon.lr = rc->lr_matrix;
    rc->muon.ortho.coeffs = gm_ns_coeffs_find(rc->ns_coeffs);
    if (!rc->muon.ortho.coeffs) return gm_fail("--ns_coeffs: %s", gm_error());
    if (parse_restarts(rc->gram_restarts, &rc->muon.ortho.gram_restarts)) return -1;
    char up[GM_FMT_DOUBLE_LEN], down[GM_FMT_DOUBLE_LEN];
    // The fractions themselves, so that the verdict does not depend on --steps (their rounded step
    // counts let 0.7 + 0.5 through at 2 steps); the margin absorbs the decimal inputs' binary error.
    if (rc->lr.kind == GM_LR_WARMUP_WARMDOWN && rc->warmup_frac + rc->warmdown_frac > 1 + 1e-12)
        return gm_fail("--warmup_frac/--warmdown_frac: %s + %s exceed 1", gm_fmt_double(rc->warmup_frac, up),
                       gm_fmt_double(rc->warmdown_frac, down));
    if (rc->momentum_warmup_frac + rc->momentum_cooldown_frac > 1 + 1e-12)
        return gm_fail("--muon_momentum_warmup_frac/--muon_momentum_cooldown_frac: %s + %s exceed 1",
                       gm_fmt_double(rc->momentum_warmup_frac, up), gm_fmt_double(rc->momentum_cooldown_frac, down));
    if (gm_config_check(&rc->model)) return -1;
    return refuse_unused_flags(rc);
}
