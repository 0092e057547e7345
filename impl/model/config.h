// Model configuration: every architectural switch of the six presets as data. The forward and
// backward read these fields; there is no per-preset code.
#ifndef GM_MODEL_CONFIG_H
#define GM_MODEL_CONFIG_H

#include <stddef.h>

#include "backend/backend.h"
#include "base/fields.h"

enum { GM_MAX_LAYERS = 32, GM_MAX_VALUE_EMBEDS = 8, GM_MAX_HEAD_DIM = 1024, GM_CONFIG_MAX_FIELDS = 64 };

// Which layer reads which value-embedding table (records #16 and #18), for n tables and L layers:
// UNET: tables 0..n-1 on the first n layers and mirrored on the last n (012345 543210);
// ENDS: tables 0..n-1 on the first n layers and again on the last n (012 ... 012).
typedef enum { GM_VE_NONE = 0, GM_VE_UNET, GM_VE_ENDS } gm_ve_pattern;

// Positions t and angles t * w of the rotary tables (refdata/records/PRESETS.md §2.4):
// EXACT: t and t * w exact (in double); EAGER_BF16: as eager PyTorch computes record #16's
// torch.outer(torch.arange(T), inv_freq) with its bf16 inv_freq: the int64 positions promoted to
// bf16 (257 -> 256) and the product rounded to bf16 (both nearest, ties to even).
typedef enum { GM_ROTARY_EXACT = 0, GM_ROTARY_EAGER_BF16 } gm_rotary_positions;

typedef struct {
    char name[32];     // preset
    char scale[8];     // "full", "small", "tiny" or "test"
    int vocab;         // token ids are < vocab
    int vocab_padded;  // rows of the embedding / head tables and width of the logits (CE runs over all)
    int n_layer, n_head, head_dim, d_model, d_mlp;
    int seq_len, batch;  // per rank, one micro-batch
    int eot;             // end-of-text id: documents for the doc mask

    int tied_head;              // head = embedding table (default-Linear uniform init), else its own table
    int qkv_fused;              // one (3C, C) c_attn matrix instead of c_q, c_k, c_v
    int embed_norm;             // RMSNorm right after the embedding
    int qk_norm;                // RMSNorm of q and k per head (before rotary)
    double norm_eps;            // 1e-6 (hand-written norm, #2-#4) or 2^-23 (F.rms_norm, #8+)
    double rotary_base;         // 1e4; 1024 for the half-truncated rotary of #18
    int rotary_half_truncated;  // #18: HD/4 frequencies base^(-i/(HD/4-1)), the other HD/4 pairs fixed
    int rotary_bf16;            // #16: frequencies as fp32, rounded to bf16 (its inv_freq buffer under .bfloat16())
    gm_rotary_positions rotary_positions;  // #16 eager: positions and angles rounded to bf16 (needs rotary_bf16)
    int branch_scale_depth;     // attention branch scaled by 1/sqrt(2 n_layer) (#2-#4)
    gm_act mlp_act;
    double softcap;      // logits cap*tanh(z/cap); 0: none
    int zero_init_proj;  // attention c_proj and MLP c_proj start at zero
    int zero_init_head;  // untied head starts at zero

    int x0_lambdas;      // per block x = l0*x + l1*x0 (learnable, init (1, 0))
    int n_value_embeds;  // value-embedding tables, mixed into v by per-layer (a0, a1), init (0.5, 0.5)
    gm_ve_pattern ve_pattern;
    int unet_skips;           // decoder layer i adds skip_weights[i] * output of encoder layer L/2-1-i
    unsigned skip_attn_mask;  // bit l set: layer l has no attention (#18: layer 7)

    int doc_mask;             // attention within documents (EOT-delimited)
    int attn_block;           // block of the block mask (128)
    int window_start_tokens;  // sliding window schedule, blocks = floor(((1-f)*start + f*end)/block) at
    int window_end_tokens;    // progress f = step/steps; 0: no window
} gm_config;

// The fields, in the order logs and refdata list them (every one overridable as --key=value).
extern const gm_field gm_config_fields[];
extern const size_t gm_config_nfields;
// Sliding-window size in blocks at training step `step` of `steps`; 0 when the preset has none.
int gm_config_window_blocks(const gm_config *cfg, long step, long steps);
// Table index of the value embedding layer `l` reads, or -1.
int gm_config_ve_of_layer(const gm_config *cfg, int l);
static inline int gm_config_has_attn(const gm_config *cfg, int l) { return !((cfg->skip_attn_mask >> l) & 1u); }
// Consistency checks (divisibility, limits); -1 with a message naming the field.
int gm_config_check(const gm_config *cfg);
// "preset = ...", "scale = ..." then one line per field ("key = value"), for refdata.
int gm_config_describe(const gm_config *cfg, char *buf, size_t len);

#endif
