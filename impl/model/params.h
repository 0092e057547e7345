// The parameter table of a configuration: every tensor's name, shape, optimizer group and
// record initialisation, and where each layer's tensors are in the table.
#ifndef GM_MODEL_PARAMS_H
#define GM_MODEL_PARAMS_H

#include <stdint.h>

#include "base/real.h"
#include "model/config.h"
#include "model/table.h"

// Table indices of one block's tensors; -1 where the configuration has none.
typedef struct {
    int c_attn;         // (3C, C) fused q|k|v (#2-#4)
    int c_q, c_k, c_v;  // (C, C) each (#8+)
    int c_proj;         // (C, C)
    int fc, mlp_proj;   // (H, C), (C, H)
    int lambdas;        // (2,) x0 mixing
    int attn_lambdas;   // (2,) value-embedding mixing
} gm_layer_params;

typedef struct {
    int embed;  // (Vp, C)
    int head;   // (Vp, C); == embed when tied
    int ve[GM_MAX_VALUE_EMBEDS];
    int skip_weights;  // (L/2,)
    gm_layer_params layer[GM_MAX_LAYERS];
} gm_param_index;

typedef enum {
    GM_INIT_RECORD = 0,  // as the record: zero-init projections/head, lambdas (1,0), (0.5,0.5), ones
    GM_INIT_TEST = 1,    // every tensor random and non-zero (gradient checks see every path)
} gm_init_mode;

// Build the table (names as in the records: h.<l>.attn.c_q, h.<l>.mlp.c_fc, lm_head, ...).
int gm_params_build(const gm_config *cfg, gm_table *t, gm_param_index *ix);
// Fill a host buffer of t->total elements. Element i of tensor `name` is drawn from Philox
// stream hash(name), so a tensor's values do not depend on which other tensors exist.
void gm_params_init(const gm_table *t, gm_real *host, uint64_t seed, gm_init_mode mode);

#endif
