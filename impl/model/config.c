#include "model/config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/fields.h"

// ---- the model's fields: overridable by name (--key=value), described in logs and refdata ----

static const char *const ACT_NAMES[] = {"gelu", "relu2", NULL};
static const char *const VE_NAMES[] = {"none", "unet", "ends", NULL};
static const char *const ROTARY_POS_NAMES[] = {"exact", "eager-bf16", NULL};
_Static_assert(sizeof(gm_act) == sizeof(int) && sizeof(gm_ve_pattern) == sizeof(int) &&
                   sizeof(gm_rotary_positions) == sizeof(int),
               "enum fields are stored as int");

#define C_INT(key, m, lo, hi, help) GM_FIELD_INT(key, gm_config, m, lo, hi, help)
#define C_DOUBLE(key, m, lo, hi, help) GM_FIELD_DOUBLE(key, gm_config, m, lo, hi, help)
#define C_ENUM(key, m, names, help) GM_FIELD_ENUM(key, gm_config, m, names, help)
const gm_field gm_config_fields[] = {
    C_INT("vocab", vocab, 2, 65536, "token ids are below this"),
    C_INT("vocab_padded", vocab_padded, 2, 1 << 20, "rows of the embedding/head tables"),
    C_INT("n_layer", n_layer, 1, GM_MAX_LAYERS, "transformer blocks"),
    C_INT("n_head", n_head, 1, 1024, "attention heads"),
    C_INT("head_dim", head_dim, 2, GM_MAX_HEAD_DIM, "dimension per head"),
    C_INT("d_model", d_model, 2, 1 << 16, "model width"),
    C_INT("d_mlp", d_mlp, 2, 1 << 18, "MLP hidden width"),
    C_INT("seq_len", seq_len, 1, 1 << 20, "tokens per sequence (T)"),
    C_INT("batch", batch, 1, 1 << 16, "sequences per micro-batch per rank (B)"),
    C_INT("eot", eot, 0, 65535, "end-of-text token id (document boundaries)"),
    C_INT("tied_head", tied_head, 0, 1, "head shares the embedding table"),
    C_INT("qkv_fused", qkv_fused, 0, 1, "one fused (3C, C) QKV matrix"),
    C_INT("embed_norm", embed_norm, 0, 1, "RMSNorm after the embedding"),
    C_INT("qk_norm", qk_norm, 0, 1, "RMSNorm of q and k"),
    C_DOUBLE("norm_eps", norm_eps, 0, 1, "RMSNorm epsilon"),
    C_DOUBLE("rotary_base", rotary_base, 1, 1e9, "rotary base"),
    C_INT("rotary_half_truncated", rotary_half_truncated, 0, 1, "record #18's half-truncated rotary"),
    C_INT("rotary_bf16", rotary_bf16, 0, 1, "record #16's rotary frequencies rounded to bf16 (0: exact)"),
    C_ENUM("rotary_positions", rotary_positions, ROTARY_POS_NAMES,
           "rotary positions t and angles t*w: exact, or eager-bf16 = both rounded to bf16 (257 -> 256) as eager "
           "PyTorch's outer(arange(T), bf16 inv_freq) does in record #16 (2024-12-10_MFUTweaks); needs rotary_bf16=1"),
    C_INT("branch_scale_depth", branch_scale_depth, 0, 1, "attention branch x 1/sqrt(2 n_layer)"),
    C_ENUM("mlp_act", mlp_act, ACT_NAMES, "MLP activation"),
    C_DOUBLE("softcap", softcap, 0, 1e6, "logit softcap (0: none)"),
    C_INT("zero_init_proj", zero_init_proj, 0, 1, "zero-init output projections"),
    C_INT("zero_init_head", zero_init_head, 0, 1, "zero-init untied head"),
    C_INT("x0_lambdas", x0_lambdas, 0, 1, "learnable x/x0 mix per block"),
    C_INT("n_value_embeds", n_value_embeds, 0, GM_MAX_VALUE_EMBEDS, "value-embedding tables"),
    C_ENUM("ve_pattern", ve_pattern, VE_NAMES, "which layers read which table"),
    C_INT("unet_skips", unet_skips, 0, 1, "U-net skip connections"),
    GM_FIELD_UINT("skip_attn_mask", gm_config, skip_attn_mask, 0, 4294967295.0, "bit l: layer l has no attention"),
    C_INT("doc_mask", doc_mask, 0, 1, "attention within documents only"),
    C_INT("attn_block", attn_block, 1, 1 << 16, "block-mask block size (tokens)"),
    C_INT("window_start_tokens", window_start_tokens, 0, 1 << 24, "sliding window at step 0 (0: none)"),
    C_INT("window_end_tokens", window_end_tokens, 0, 1 << 24, "sliding window at the last step"),
};
const size_t gm_config_nfields = sizeof gm_config_fields / sizeof gm_config_fields[0];
_Static_assert(sizeof gm_config_fields / sizeof gm_config_fields[0] <= GM_CONFIG_MAX_FIELDS, "run_config.c counts on it");

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
    if (c->head_dim % 2 || c->head_dim > GM_MAX_HEAD_DIM)
        return gm_fail("config: head_dim %d must be even (rotary) and at most %d", c->head_dim, GM_MAX_HEAD_DIM);
    if (c->rotary_half_truncated && (c->head_dim % 4 || c->head_dim < 8))
        return gm_fail("config: head_dim %d must be a multiple of 4, >= 8, for the half-truncated rotary", c->head_dim);
    if (c->rotary_bf16 && c->rotary_half_truncated)
        return gm_fail("config: rotary_bf16 rounds the base^(-2i/HD) table, not the half-truncated rotary");
    // The eager rounding comes from the bf16 inv_freq buffer: with fp32 frequencies torch promotes
    // the positions to fp32, exact below 2^24.
    if (c->rotary_positions == GM_ROTARY_EAGER_BF16 && !c->rotary_bf16)
        return gm_fail("config: rotary_positions=eager-bf16 rounds positions by the bf16 frequencies of rotary_bf16=1 (record #16); "
                       "this configuration has rotary_bf16=0");
    if (c->vocab < 2 || c->vocab_padded < c->vocab)
        return gm_fail("config: vocab %d / padded %d", c->vocab, c->vocab_padded);
    if (c->eot < 0 || c->eot >= c->vocab) return gm_fail("config: eot %d outside the vocabulary", c->eot);
    if (c->n_value_embeds < 0 || c->n_value_embeds > GM_MAX_VALUE_EMBEDS || 2 * c->n_value_embeds > c->n_layer)
        return gm_fail("config: n_value_embeds %d (at most %d and n_layer/2)", c->n_value_embeds, GM_MAX_VALUE_EMBEDS);
    if (c->unet_skips && c->n_layer % 2) return gm_fail("config: U-net skips need an even n_layer (%d)", c->n_layer);
    if ((c->doc_mask || c->window_start_tokens) && c->attn_block < 1)
        return gm_fail("config: attn_block %d", c->attn_block);
    // The window moves linearly from start to end; below one block it would round to 0 blocks,
    // which the attention reads as no window at all.
    if (c->window_start_tokens &&
        (c->window_start_tokens < c->attn_block || c->window_end_tokens < c->attn_block))
        return gm_fail("config: sliding window of %d to %d tokens: at least one attn_block (%d tokens) at every step, or 0 for no window",
                       c->window_start_tokens, c->window_end_tokens, c->attn_block);
    if (c->seq_len < 1 || c->batch < 1) return gm_fail("config: seq_len %d, batch %d", c->seq_len, c->batch);
    if (c->n_layer < 32 && (c->skip_attn_mask >> c->n_layer))
        return gm_fail("config: skip_attn_mask names a layer >= n_layer");
    return 0;
}

int gm_config_describe(const gm_config *c, char *buf, size_t len) {
    int n = snprintf(buf, len, "preset = %s\nscale = %s\n", c->name, c->scale);
    for (size_t i = 0; i < gm_config_nfields && n >= 0 && (size_t)n < len; i++) {
        int k = snprintf(buf + n, len - (size_t)n, "%s = ", gm_config_fields[i].key);
        if (k < 0 || (size_t)(n + k) >= len) return gm_fail("config: description does not fit in %zu bytes", len);
        n += k;
        if ((k = gm_field_format(&gm_config_fields[i], c, 0, buf + n, len - (size_t)n)) < 0) return -1;
        n += k;
        if ((size_t)n + 2 > len) return gm_fail("config: description does not fit in %zu bytes", len);
        buf[n++] = '\n', buf[n] = '\0';
    }
    return n < 0 || (size_t)n >= len ? gm_fail("config: description does not fit in %zu bytes", len) : 0;
}
