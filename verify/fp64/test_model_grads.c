// The whole model of every preset (test scale: every feature on, tiny shapes) against central
// differences in fp64: every parameter tensor, relative error < 1e-6. Parameters are initialised
// in test mode (no zero tensors, lambdas off their round values) so every path carries gradient;
// tokens contain many EOTs (documents shorter than a block) and the window is 2 blocks.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/rng.h"
#include "gradcheck.h"
#include "model/model.h"
#include "train/run_config.h"

typedef struct {
    gm_model *m;
    const int32_t *ids, *tg;
} mg_ctx;

static void mg_fwd(void *c, gm_real *out) {
    mg_ctx *x = c;
    out[0] = (gm_real)gm_model_forward(x->m, x->ids, x->tg, x->m->cfg.batch, x->m->cfg.seq_len);
}
static void mg_bwd(void *c, const gm_real *dout) {
    mg_ctx *x = c;
    double loss = gm_model_forward_backward(x->m, x->ids, x->tg, x->m->cfg.batch, x->m->cfg.seq_len, dout[0]);
    cr_assert(!isnan(loss), "%s", gm_error());
}

// Sign pattern of every MLP pre-activation: ReLU^2 is smooth within one pattern.
static uint64_t mg_piece(void *c) {
    mg_ctx *x = c;
    const gm_model *m = x->m;
    if (m->cfg.mlp_act != GM_ACT_RELU2) return 0;
    uint64_t h = GM_HASH_INIT;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        char name[48];
        snprintf(name, sizeof name, "h.%d.fc", l);
        const gm_view *v = &m->acts.v[gm_table_find(&m->acts, name)];
        for (size_t i = 0; i < v->numel; i++) {
            unsigned char positive = gm_as_real(m->a)[v->offset + i] > 0;
            h = gm_hash_bytes(h, &positive, 1);
        }
    }
    return h;
}

static void check_preset(const char *name) {
    gm_config cfg;
    cr_assert_eq(gm_preset_model(&cfg, name, "test"), 0, "%s", gm_error());
    gm_model m;
    cr_assert_eq(gm_model_create(&m, &cfg, gm_backend_cpu()), 0, "%s", gm_error());
    cr_assert_eq(gm_model_init(&m, 1234, GM_INIT_TEST), 0);
    if (cfg.window_start_tokens) gm_model_set_window(&m, 2);
    int N = cfg.batch * cfg.seq_len;
    int32_t *ids = malloc(sizeof(int32_t) * (N + 1));
    for (int i = 0; i <= N; i++) {
        uint32_t r = gm_rng_u32(99, 1, i);
        ids[i] = r % 7 == 0 ? cfg.eot : (int32_t)(1 + (r >> 8) % (uint32_t)(cfg.vocab - 1));
    }
    mg_ctx ctx = {&m, ids, ids + 1};
    mg_fwd(&ctx, (gm_real[1]){0});
    cr_assert(isfinite(m.loss), "%s: loss %g", name, m.loss);
    mg_bwd(&ctx, (gm_real[1]){1});  // allocates the gradient buffer
    gc_input *in = malloc(sizeof(gc_input) * m.params.n);
    for (int k = 0; k < m.params.n; k++)
        in[k] = (gc_input){m.params.v[k].name, gm_param(&m, k), gm_grad(&m, k), m.params.v[k].numel};
    double *err = malloc(sizeof(double) * m.params.n);
    gc_check((gc_fn){&ctx, 1, mg_fwd, mg_bwd, mg_piece}, in, m.params.n, 10, 4321, err);
    for (int k = 0; k < m.params.n; k++)
        cr_expect(err[k] < 1e-6, "%s: d%s relative error %.3g", name, in[k].name, err[k]);
    free(in), free(err), free(ids);
    gm_model_free(&m);
}

Test(model_grads, adamw) { check_preset("adamw"); }
Test(model_grads, muon_v1) { check_preset("muon-v1"); }
Test(model_grads, muon_v2) { check_preset("muon-v2"); }
Test(model_grads, untied) { check_preset("untied"); }
Test(model_grads, value_embed) { check_preset("value-embed"); }
Test(model_grads, softcap) { check_preset("softcap"); }
