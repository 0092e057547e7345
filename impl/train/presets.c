// The presets: one row per record (its model and its optimizer recipe, facts from
// refdata/records/PRESETS.md), and one rule per scale that shrinks a row (full: the record's
// shapes; tiny: a few million parameters on the embedded corpus; small: tiny's model on longer
// sequences and more tokens, for `make repro SCALE=small`; test: a few ten thousand, for gradient
// checks and refdata). gm_run_config_preset applies both once.
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/fields.h"
#include "train/run_config.h"

// ---- models ----

// #2-#4: GPT-2 124M with rotary, tied head, GELU, 1/sqrt(24) attention branch, eps 1e-6.
#define GPT2_ROTARY                                                                                                    \
    .vocab = 50257, .vocab_padded = 50257, .n_layer = 12, .n_head = 12, .head_dim = 64, .d_model = 768, .d_mlp = 3072, \
    .seq_len = 1024, .batch = 64, .eot = 50256, .tied_head = 1, .qkv_fused = 1, .norm_eps = 1e-6,                      \
    .rotary_base = 10000.0, .branch_scale_depth = 1, .mlp_act = GM_ACT_GELU

// #8: padded vocab, 6 x 128 heads, separate q/k/v, QK-norm, embed norm, ReLU^2, zero-init
// projections and untied zero-init head, F.rms_norm's eps.
#define UNTIED                                                                                                         \
    .vocab = 50257, .vocab_padded = 50304, .n_layer = 12, .n_head = 6, .head_dim = 128, .d_model = 768, .d_mlp = 3072, \
    .eot = 50256, .embed_norm = 1, .qk_norm = 1, .norm_eps = 1.1920928955078125e-07, .mlp_act = GM_ACT_RELU2,          \
    .zero_init_proj = 1, .zero_init_head = 1

// #16/#18 on top of #8: one 64K-token sequence per rank, document + sliding-window block mask,
// x0 lambdas, U-net skips.
#define LONG_CONTEXT                                                                                  \
    .seq_len = 65536, .batch = 1, .x0_lambdas = 1, .unet_skips = 1, .doc_mask = 1, .attn_block = 128, \
    .window_start_tokens = 128, .window_end_tokens = 1856

// ---- the rows ----

typedef struct {
    gm_config model;                // the record's shapes and switches
    int steps, warmup, warmdown;    // the record's schedule, in its steps
    double cooldown_frac;           // > 0: the cooldown-fraction schedule (#18)
    double lr_floor;                // the cooldown ends at this lr multiplier (#43; 0: at 0)
    int val_every;
    double lr_embed, lr_head, lr_scalar, lr_matrix;
    gm_matrix_opt matrix_opt;
    double beta1, weight_decay;
    int normalize_grad;             // Adam's per-tensor gradient normalization (the AdamW baseline)
    gm_momentum_form form;
    gm_muon_scale scale;
    int split_qkv, momentum_warmup, batch0_twice;
    int momentum_cooldown;          // the last steps over which the Muon momentum falls back (#43)
    gm_ns_norm_src ns_norm;
    const char *ns_coeffs;          // Newton-Schulz coefficient set (optim/ns_coeffs.c); NULL: quintic
    int normuon;                    // #43's NorMuon, with its beta2
    double normuon_beta2;
    double muon_wd;                 // #43's decoupled Muon weight decay; cautious: masked by sign
    int cautious;
} preset;

// Record #43's NorMuon beta2: rows without NorMuon keep it, ready for --normuon=1.
#define NORMUON_BETA2 0.95

static const preset PRESETS[] = {
    {.model = {.name = "adamw", GPT2_ROTARY},
     .steps = 9536, .warmup = 256, .warmdown = 2048, .val_every = 128,
     .lr_embed = 0.0018, .lr_head = 0.0018, .lr_scalar = 0.0018, .lr_matrix = 0.0018, .matrix_opt = GM_MATRIX_ADAM,
     .beta1 = 0.9, .weight_decay = 0.1, .normalize_grad = 1,
     .form = GM_MOMENTUM_SUM, .scale = GM_MUON_SCALE_NONE, .ns_norm = GM_NS_NORM_OF_G},
    {.model = {.name = "muon-v1", GPT2_ROTARY},
     .steps = 7000, .warmup = 250, .warmdown = 2000, .val_every = 128,
     .lr_embed = 0.0018, .lr_head = 0.0018, .lr_scalar = 0.0018, .lr_matrix = 0.018, .matrix_opt = GM_MATRIX_MUON,
     .beta1 = 0.9, .form = GM_MOMENTUM_SUM, .scale = GM_MUON_SCALE_NONE, .ns_norm = GM_NS_NORM_OF_G},
    {.model = {.name = "muon-v2", GPT2_ROTARY},
     .steps = 6200, .warmup = 0, .warmdown = 1800, .val_every = 125,
     .lr_embed = 0.0036, .lr_head = 0.0036, .lr_scalar = 0.0036, .lr_matrix = 0.00036, .matrix_opt = GM_MATRIX_MUON,
     .beta1 = 0.9, .form = GM_MOMENTUM_SUM, .scale = GM_MUON_SCALE_SQRT_MAX, .split_qkv = 1, .batch0_twice = 1,
     .ns_norm = GM_NS_NORM_OF_G},
    {.model = {.name = "untied", UNTIED, .seq_len = 1024, .batch = 64, .rotary_base = 10000.0},
     .steps = 4578, .warmup = 0, .warmdown = 1308, .val_every = 125,
     .lr_embed = 0.3, .lr_head = 0.002, .lr_scalar = 0.002, .lr_matrix = 0.02, .matrix_opt = GM_MATRIX_MUON,
     .beta1 = 0.9, .form = GM_MOMENTUM_SUM, .scale = GM_MUON_SCALE_ASPECT, .batch0_twice = 1,
     .ns_norm = GM_NS_NORM_OF_X},
    {.model = {.name = "value-embed", UNTIED, LONG_CONTEXT, .rotary_base = 10000.0, .rotary_bf16 = 1, .softcap = 30.0,
               .n_value_embeds = 6, .ve_pattern = GM_VE_UNET},
     .steps = 1480, .warmup = 0, .warmdown = 600, .val_every = 125,
     .lr_embed = 0.6, .lr_head = 0.008, .lr_scalar = 0.04, .lr_matrix = 0.05, .matrix_opt = GM_MATRIX_MUON,
     .beta1 = 0.8, .form = GM_MOMENTUM_EMA, .scale = GM_MUON_SCALE_ASPECT, .momentum_warmup = 300,
     .ns_norm = GM_NS_NORM_OF_X},
    {.model = {.name = "softcap", UNTIED, LONG_CONTEXT, .rotary_base = 1024.0, .rotary_half_truncated = 1,
               .softcap = 15.0, .n_value_embeds = 3, .ve_pattern = GM_VE_ENDS, .skip_attn_mask = 1u << 7},
     .steps = 1390, .warmup = 0, .warmdown = 0, .cooldown_frac = 0.4, .val_every = 125,
     .lr_embed = 0.6, .lr_head = 0.008, .lr_scalar = 0.04, .lr_matrix = 0.05, .matrix_opt = GM_MATRIX_MUON,
     .beta1 = 0.8, .form = GM_MOMENTUM_EMA, .scale = GM_MUON_SCALE_ASPECT, .momentum_warmup = 300,
     .ns_norm = GM_NS_NORM_OF_X},
    // #43's optimizer (2025-11-10_CautiousWD, refdata/records/PRESETS.md §9) on softcap's model and softcap's
    // 1390 steps of 2^19 tokens: its momentum warmup (300) and cooldown (50) keep the record's step
    // counts at full scale, its lr cooldown the record's fraction (0.5 of the steps, to 0.1).
    {.model = {.name = "normuon", UNTIED, LONG_CONTEXT, .rotary_base = 1024.0, .rotary_half_truncated = 1,
               .softcap = 15.0, .n_value_embeds = 3, .ve_pattern = GM_VE_ENDS, .skip_attn_mask = 1u << 7},
     .steps = 1390, .warmup = 0, .warmdown = 0, .cooldown_frac = 0.5, .lr_floor = 0.1, .val_every = 125,
     .lr_embed = 0.6, .lr_head = 0.008, .lr_scalar = 0.04, .lr_matrix = 0.03, .matrix_opt = GM_MATRIX_MUON,
     .beta1 = 0.65, .form = GM_MOMENTUM_EMA, .scale = GM_MUON_SCALE_ASPECT, .momentum_warmup = 300,
     .momentum_cooldown = 50, .ns_norm = GM_NS_NORM_OF_X, .ns_coeffs = "polar-express", .normuon = 1,
     .normuon_beta2 = 0.95, .muon_wd = 1.2, .cautious = 1},
};
enum { NPRESETS = sizeof PRESETS / sizeof PRESETS[0] };

const char *const gm_preset_names[] = {"adamw", "muon-v1", "muon-v2", "untied", "value-embed", "softcap", "normuon", NULL};
_Static_assert(sizeof gm_preset_names / sizeof gm_preset_names[0] == NPRESETS + 1, "one name per preset row");

// ---- scales ----

// Tiny: the same depth (so layer patterns - U-net, value-embedding tables, the attention-free
// layer 7 - stay as recorded), d 128, half the record's head_dim, the embedded corpus's 4096
// tokens (EOT 256), 1024 tokens per micro-batch.
static void shrink_tiny(gm_config *c) {
    c->d_model = 128;
    c->head_dim /= 2;
    c->n_head = c->d_model / c->head_dim;
    c->d_mlp = 4 * c->d_model;
    c->vocab = 4096;
    c->vocab_padded = 4096;  // already a multiple of 128
    c->eot = 256;
    if (c->doc_mask)
        c->seq_len = 1024, c->batch = 1;
    else
        c->seq_len = 256, c->batch = 4;
}

// Small: tiny's model with twice its sequence length (512 x 4, or one 2048-token sequence where
// the record has the document mask) and so 2048 tokens per step. What grows from tiny towards the
// records is the training, not the width: tokens per parameter (tiny's 100-step repro sees about
// 0.04 per parameter, the records 6 to 40) and context, where the sliding window of #16/#18
// (128 tokens growing to 1856) stays narrower than the sequence, as in the records, while at
// tiny's 1024 it ends up covering all of it.
static void shrink_small(gm_config *c) {
    shrink_tiny(c);
    c->seq_len *= 2;
}

// Test: small enough for fp64 central differences over every tensor and for committed PyTorch
// reference data, with every feature still active: 4 layers (2 encoder + 2 decoder), d 24
// (3 heads of 8 where the record has 64-wide heads, 2 of 12 where it has 128), vocab 120 (padded
// to 128 where the record pads), 2 x 64 tokens in 16-token attention blocks, value-embedding
// tables 2 (U-net) / 1 (ends), and layer 2 without attention where the record skips one.
static void shrink_test(gm_config *c) {
    int padded = c->vocab_padded != c->vocab;
    c->d_model = 24;
    c->head_dim = c->head_dim == 64 ? 8 : 12;
    c->n_head = c->d_model / c->head_dim;
    c->d_mlp = 4 * c->d_model;
    c->n_layer = 4;
    c->vocab = 120;
    c->vocab_padded = padded ? 128 : 120;
    c->eot = 0;
    c->seq_len = 64, c->batch = 2;
    if (c->doc_mask) c->attn_block = 16, c->window_start_tokens = 16, c->window_end_tokens = 48;
    if (c->n_value_embeds) c->n_value_embeds = c->ve_pattern == GM_VE_UNET ? 2 : 1;
    if (c->skip_attn_mask) c->skip_attn_mask = 1u << 2;
}

// The scales; each one's name and rule are declared by this index, so the names listed in every
// message and --help (gm_scale_names) are those of the rules.
enum { SCALE_FULL, SCALE_SMALL, SCALE_TINY, SCALE_TEST, NSCALES };

const char *const gm_scale_names[] = {
    [SCALE_FULL] = "full", [SCALE_SMALL] = "small", [SCALE_TINY] = "tiny", [SCALE_TEST] = "test", [NSCALES] = NULL};

typedef struct {
    void (*shrink)(gm_config *c);  // NULL: the record's shapes
    int steps, val_every;          // 0: the record's
    long long val_tokens;
    const char *train_data, *val_data;
} scale_rule;

// Small's 150 steps x 3 seeds x 6 presets made `make repro SCALE=small` about 37 minutes on 2 quiet
// cores (the committed sample took 4384 s of CPU time: reports/repro-small/README.md; normuon, the
// seventh, adds about a sixth); 11
// validations on 8 k tokens. Test scale trains only on data with ids below its vocab of 120 (the tests make their
// own); its run settings are tiny's.
static const scale_rule SCALES[NSCALES] = {
    [SCALE_FULL] = {NULL, 0, 0, 10485760, "data/fineweb10B/fineweb_train_*.bin", "data/fineweb10B/fineweb_val_*.bin"},
    [SCALE_SMALL] = {shrink_small, 150, 15, 8192, "data/gcide/train_*.bin", "data/gcide/val_*.bin"},
    [SCALE_TINY] = {shrink_tiny, 200, 25, 32768, "data/gcide/train_*.bin", "data/gcide/val_*.bin"},
    [SCALE_TEST] = {shrink_test, 200, 25, 32768, "data/gcide/train_*.bin", "data/gcide/val_*.bin"},
};

int gm_run_config_preset(gm_run_config *rc, const char *name, const char *scale) {
    memset(rc, 0, sizeof *rc);
    const preset *p = NULL;
    const scale_rule *sc = NULL;
    int si = 0;
    for (int i = 0; i < NPRESETS; i++)
        if (!strcmp(PRESETS[i].model.name, name)) p = &PRESETS[i];
    for (int i = 0; i < NSCALES; i++)
        if (!strcmp(gm_scale_names[i], scale)) sc = &SCALES[i], si = i;
    char known[256];
    if (!p) return gm_fail("--preset: unknown preset '%s' (%s)", name, gm_names_join(gm_preset_names, ", ", known, sizeof known));
    if (!sc) return gm_fail("--scale: unknown scale '%s' (%s)", scale, gm_names_join(gm_scale_names, ", ", known, sizeof known));
    rc->model = p->model;
    if (sc->shrink) sc->shrink(&rc->model);
    snprintf(rc->model.scale, sizeof rc->model.scale, "%s", gm_scale_names[si]);
    rc->steps = sc->steps ? sc->steps : p->steps;
    rc->val_every = sc->val_every ? sc->val_every : p->val_every;
    rc->val_tokens = sc->val_tokens;
    snprintf(rc->train_data, sizeof rc->train_data, "%s", sc->train_data);
    snprintf(rc->val_data, sizeof rc->val_data, "%s", sc->val_data);
    rc->grad_accum = 1;
    rc->batch0_twice = p->batch0_twice;
    // Schedule lengths as fractions of the record's steps: at its step count they give back its
    // exact step numbers (e.g. 256 of 9536), at any other the same shape.
    rc->lr.kind = p->cooldown_frac > 0 ? GM_LR_COOLDOWN_FRAC : GM_LR_WARMUP_WARMDOWN;
    rc->warmup_frac = (double)p->warmup / p->steps;
    rc->warmdown_frac = (double)p->warmdown / p->steps;
    rc->lr.cooldown_frac = p->cooldown_frac;
    rc->lr.floor = p->lr_floor;
    rc->lr_embed = p->lr_embed, rc->lr_head = p->lr_head, rc->lr_scalar = p->lr_scalar, rc->lr_matrix = p->lr_matrix;
    rc->matrix_opt = p->matrix_opt;
    rc->adam = (gm_adam_hparams){0, p->beta1, 0.95, 1e-8, p->weight_decay, p->normalize_grad};
    rc->muon.momentum = 0.95;
    rc->muon.momentum_from = 0.85;
    rc->momentum_warmup_frac = (double)p->momentum_warmup / p->steps;
    rc->momentum_cooldown_frac = (double)p->momentum_cooldown / p->steps;
    rc->muon.nesterov = 1;
    rc->muon.form = p->form;
    rc->muon.scale = p->scale;
    rc->muon.split_qkv = p->split_qkv;
    rc->muon.ortho.method = GM_ORTHO_NS;
    rc->muon.ortho.steps = 5;
    rc->muon.ortho.bf16 = 1;
    rc->muon.ortho.norm_src = p->ns_norm;
    // Record #43's additions (the normuon row's; off in the others).
    rc->muon.normuon = p->normuon;
    rc->muon.beta2 = p->normuon ? p->normuon_beta2 : NORMUON_BETA2;
    rc->muon.weight_decay = p->muon_wd;
    rc->muon.cautious = p->cautious;
    snprintf(rc->ns_coeffs, sizeof rc->ns_coeffs, "%s", p->ns_coeffs ? p->ns_coeffs : "quintic");
    snprintf(rc->gram_restarts, sizeof rc->gram_restarts, "2");  // Dao-AILab's choice for 5 steps
    rc->seed = 1337;
    snprintf(rc->out_dir, sizeof rc->out_dir, "runs/%s-%s", name, scale);
    snprintf(rc->comm, sizeof rc->comm, "auto");
    rc->grad_sync = GM_GRAD_SYNC_ALL_REDUCE;
    snprintf(rc->backend, sizeof rc->backend, "cpu");
    rc->comm_timeout = 300;
    rc->log_every = 5;
    rc->ckpt_every_s = 300;  // a few minutes: a checkpoint takes seconds at full scale
    rc->dump_at = -1;
    return gm_config_check(&rc->model);
}

int gm_preset_model(gm_config *cfg, const char *name, const char *scale) {
    gm_run_config rc;
    if (gm_run_config_preset(&rc, name, scale)) return -1;
    *cfg = rc.model;
    return 0;
}
