#include "model/config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

// ---- the six presets at full scale (facts from refdata/records/PRESETS.md) ----

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

static const gm_config presets[] = {
    {.name = "adamw", GPT2_ROTARY},
    {.name = "muon-v1", GPT2_ROTARY},
    {.name = "muon-v2", GPT2_ROTARY},
    {.name = "untied", UNTIED, .seq_len = 1024, .batch = 64, .rotary_base = 10000.0},
    {.name = "value-embed",
     UNTIED,
     LONG_CONTEXT,
     .rotary_base = 10000.0,
     .softcap = 30.0,
     .n_value_embeds = 6,
     .ve_pattern = GM_VE_UNET},
    {.name = "softcap",
     UNTIED,
     LONG_CONTEXT,
     .rotary_base = 1024.0,
     .rotary_half_truncated = 1,
     .softcap = 15.0,
     .n_value_embeds = 3,
     .ve_pattern = GM_VE_ENDS,
     .skip_attn_mask = 1u << 7},
};

const char *const gm_preset_names[] = {"adamw", "muon-v1", "muon-v2", "untied", "value-embed", "softcap", NULL};

// Tiny: the same depth (so layer patterns - U-net, value-embedding tables, the attention-free
// layer 7 - stay as recorded), d 128, half the record's head_dim, the embedded corpus's 4096
// tokens (EOT 256), 1024 tokens per micro-batch.
static void to_tiny(gm_config *c) {
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

// Test: small enough for fp64 central differences over every tensor and for committed PyTorch
// reference data, with every feature still active: 4 layers (2 encoder + 2 decoder), d 24
// (3 heads of 8 where the record has 64-wide heads, 2 of 12 where it has 128), vocab 120 (padded
// to 128 where the record pads), 2 x 64 tokens in 16-token attention blocks, value-embedding
// tables 2 (U-net) / 1 (ends), and layer 2 without attention where the record skips one.
static void to_test(gm_config *c) {
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

int gm_config_preset(gm_config *cfg, const char *name, const char *scale) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) != 0) continue;
        *cfg = presets[i];
        if (strcmp(scale, "tiny") == 0)
            to_tiny(cfg);
        else if (strcmp(scale, "test") == 0)
            to_test(cfg);
        else if (strcmp(scale, "full") != 0)
            return gm_fail("--scale: unknown scale '%s' (full, tiny, test)", scale);
        snprintf(cfg->scale, sizeof cfg->scale, "%s", scale);
        return gm_config_check(cfg);
    }
    return gm_fail("--preset: unknown preset '%s' (adamw, muon-v1, muon-v2, untied, value-embed, softcap)", name);
}

int gm_config_window_blocks(const gm_config *cfg, long step, long steps) {
    if (!cfg->window_start_tokens) return 0;
    double f = steps > 0 ? (double)step / (double)steps : 0.0;
    return (int)floor(((1.0 - f) * cfg->window_start_tokens + f * cfg->window_end_tokens) / cfg->attn_block);
}

int gm_config_ve_of_layer(const gm_config *cfg, int l) {
    int n = cfg->n_value_embeds, L = cfg->n_layer;
    if (cfg->ve_pattern == GM_VE_NONE || n == 0) return -1;
    if (l < n) return l;
    if (l >= L - n) return cfg->ve_pattern == GM_VE_UNET ? L - 1 - l : l - (L - n);
    return -1;
}

int gm_config_check(const gm_config *c) {
    if (c->n_layer < 1 || c->n_layer > GM_MAX_LAYERS)
        return gm_fail("config: n_layer %d not in [1, %d]", c->n_layer, GM_MAX_LAYERS);
    if (c->n_head * c->head_dim != c->d_model)
        return gm_fail("config: n_head %d x head_dim %d != d_model %d", c->n_head, c->head_dim, c->d_model);
    if (c->head_dim % 2) return gm_fail("config: head_dim %d must be even (rotary)", c->head_dim);
    if (c->rotary_half_truncated && (c->head_dim % 4 || c->head_dim < 8))
        return gm_fail("config: head_dim %d must be a multiple of 4, >= 8, for the half-truncated rotary", c->head_dim);
    if (c->vocab < 2 || c->vocab_padded < c->vocab)
        return gm_fail("config: vocab %d / padded %d", c->vocab, c->vocab_padded);
    if (c->eot < 0 || c->eot >= c->vocab) return gm_fail("config: eot %d outside the vocabulary", c->eot);
    if (c->n_value_embeds < 0 || c->n_value_embeds > GM_MAX_VALUE_EMBEDS || 2 * c->n_value_embeds > c->n_layer)
        return gm_fail("config: n_value_embeds %d (at most %d and n_layer/2)", c->n_value_embeds, GM_MAX_VALUE_EMBEDS);
    if (c->unet_skips && c->n_layer % 2) return gm_fail("config: U-net skips need an even n_layer (%d)", c->n_layer);
    if ((c->doc_mask || c->window_start_tokens) && c->attn_block < 1)
        return gm_fail("config: attn_block %d", c->attn_block);
    if (c->seq_len < 1 || c->batch < 1) return gm_fail("config: seq_len %d, batch %d", c->seq_len, c->batch);
    if (c->n_layer < 32 && (c->skip_attn_mask >> c->n_layer))
        return gm_fail("config: skip_attn_mask names a layer >= n_layer");
    return 0;
}

int gm_config_describe(const gm_config *c, char *buf, size_t len) {
    int n = snprintf(
        buf, len,
        "preset = %s\nscale = %s\nvocab = %d\nvocab_padded = %d\nn_layer = %d\nn_head = %d\n"
        "head_dim = %d\nd_model = %d\nd_mlp = %d\nseq_len = %d\nbatch = %d\neot = %d\n"
        "tied_head = %d\nqkv_fused = %d\nembed_norm = %d\nqk_norm = %d\nnorm_eps = %.17g\n"
        "rotary_base = %.17g\nrotary_half_truncated = %d\nbranch_scale_depth = %d\nmlp_act = %s\n"
        "softcap = %.17g\nzero_init_proj = %d\nzero_init_head = %d\nx0_lambdas = %d\n"
        "n_value_embeds = %d\nve_pattern = %s\nunet_skips = %d\nskip_attn_mask = %u\n"
        "doc_mask = %d\nattn_block = %d\nwindow_start_tokens = %d\nwindow_end_tokens = %d\n",
        c->name, c->scale, c->vocab, c->vocab_padded, c->n_layer, c->n_head, c->head_dim, c->d_model, c->d_mlp,
        c->seq_len, c->batch, c->eot, c->tied_head, c->qkv_fused, c->embed_norm, c->qk_norm, c->norm_eps,
        c->rotary_base, c->rotary_half_truncated, c->branch_scale_depth, c->mlp_act == GM_ACT_GELU ? "gelu" : "relu2",
        c->softcap, c->zero_init_proj, c->zero_init_head, c->x0_lambdas, c->n_value_embeds,
        c->ve_pattern == GM_VE_UNET   ? "unet"
        : c->ve_pattern == GM_VE_ENDS ? "ends"
                                      : "none",
        c->unet_skips, c->skip_attn_mask, c->doc_mask, c->attn_block, c->window_start_tokens, c->window_end_tokens);
    return n < 0 || (size_t)n >= len ? gm_fail("config: description does not fit in %zu bytes", len) : 0;
}
