#include "model/params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "base/rng.h"

// Add one tensor, its name formatted from `fmt` and the layer/table number `i`.
static int add(gm_table *t, int64_t rows, int64_t cols, gm_group g, gm_init_kind k, double a, double b, const char *fmt,
               int i) {
    char name[64];
    snprintf(name, sizeof name, fmt, i);
    return gm_table_add(t, name, rows, cols, g, k, a, b);
}

int gm_params_build(const gm_config *c, gm_table *t, gm_param_index *ix) {
    int C = c->d_model, H = c->d_mlp, Vp = c->vocab_padded, L = c->n_layer;
    double uC = 1.0 / sqrt(C), uH = 1.0 / sqrt(H);  // PyTorch's default Linear init bound 1/sqrt(in)
    gm_table_init(t);
    memset(ix, -1, sizeof *ix);
    // A tied table is the head Linear's weight (the embedding's N(0,1) init is discarded by the tie).
    ix->embed = c->tied_head ? add(t, Vp, C, GM_GROUP_HEAD, GM_INIT_UNIFORM, uC, 0, "lm_head", 0)
                             : add(t, Vp, C, GM_GROUP_EMBED, GM_INIT_NORMAL, 1.0, 0, "embed", 0);
    for (int j = 0; j < c->n_value_embeds; j++)
        ix->ve[j] = add(t, Vp, C, GM_GROUP_EMBED, GM_INIT_NORMAL, 1.0, 0, "value_embeds.%d", j);
    gm_init_kind proj = c->zero_init_proj ? GM_INIT_CONST : GM_INIT_UNIFORM;
    for (int l = 0; l < L; l++) {
        gm_layer_params *p = &ix->layer[l];
        char pre[32];
        snprintf(pre, sizeof pre, "h.%d.", l);
        if (c->x0_lambdas) p->lambdas = add(t, 2, 1, GM_GROUP_SCALAR, GM_INIT_CONST, 1.0, 0.0, "h.%d.lambdas", l);
        if (gm_config_has_attn(c, l)) {
            if (c->qkv_fused) {
                p->c_attn = add(t, 3 * C, C, GM_GROUP_MATRIX, GM_INIT_UNIFORM, uC, 0, "h.%d.attn.c_attn", l);
            } else {
                p->c_q = add(t, C, C, GM_GROUP_MATRIX, GM_INIT_UNIFORM, uC, 0, "h.%d.attn.c_q", l);
                p->c_k = add(t, C, C, GM_GROUP_MATRIX, GM_INIT_UNIFORM, uC, 0, "h.%d.attn.c_k", l);
                p->c_v = add(t, C, C, GM_GROUP_MATRIX, GM_INIT_UNIFORM, uC, 0, "h.%d.attn.c_v", l);
            }
            p->c_proj = add(t, C, C, GM_GROUP_MATRIX, proj, proj == GM_INIT_CONST ? 0 : uC, 0, "h.%d.attn.c_proj", l);
            if (c->n_value_embeds)
                p->attn_lambdas = add(t, 2, 1, GM_GROUP_SCALAR, GM_INIT_CONST, 0.5, 0.5, "h.%d.attn.lambdas", l);
        }
        p->fc = add(t, H, C, GM_GROUP_MATRIX, GM_INIT_UNIFORM, uC, 0, "h.%d.mlp.c_fc", l);
        p->mlp_proj = add(t, C, H, GM_GROUP_MATRIX, proj, proj == GM_INIT_CONST ? 0 : uH, 0, "h.%d.mlp.c_proj", l);
    }
    if (c->unet_skips) ix->skip_weights = add(t, L / 2, 1, GM_GROUP_SCALAR, GM_INIT_CONST, 1.0, 1.0, "skip_weights", 0);
    ix->head = c->tied_head ? ix->embed
                            : add(t, Vp, C, GM_GROUP_HEAD, c->zero_init_head ? GM_INIT_CONST : GM_INIT_UNIFORM,
                                  c->zero_init_head ? 0 : uC, 0, "lm_head", 0);
    if (!t->failed) return 0;
    gm_table_free(t);
    return -1;
}

static uint64_t name_stream(const char *s) { return gm_hash_bytes(GM_HASH_INIT, s, strlen(s)); }

void gm_params_init(const gm_table *t, gm_real *host, uint64_t seed, gm_init_mode mode) {
    memset(host, 0, sizeof(gm_real) * t->total);
    for (int k = 0; k < t->n; k++) {
        const gm_view *v = &t->v[k];
        gm_real *p = host + v->offset;
        uint64_t s = name_stream(v->name);
        gm_init_kind kind = v->init;
        double a = v->init_a;
        // Test mode: zero-initialised matrices get the default uniform init, so no path is dead.
        if (mode == GM_INIT_TEST && kind == GM_INIT_CONST && v->ndim == 2)
            kind = GM_INIT_UNIFORM, a = 1.0 / sqrt((double)v->shape[1]);
        for (size_t i = 0; i < v->numel; i++) {
            double x;
            if (kind == GM_INIT_NORMAL)
                x = a * gm_rng_normal(seed, s, i);
            else if (kind == GM_INIT_UNIFORM)
                x = a * (2.0 * gm_rng_uniform(seed, s, i) - 1.0);
            else
                x = i == 0 ? v->init_a : v->init_b;
            // Test mode: scalars moved off their round init values.
            if (mode == GM_INIT_TEST && kind == GM_INIT_CONST) x += 0.3 * gm_rng_normal(seed, s, i);
            p[i] = (gm_real)x;
        }
    }
}
