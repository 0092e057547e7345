// The chunked head is the same computation as one chunk: for every preset at test scale (128
// rows), logits chunks of 48 rows (48, 48, 32) against one chunk of all rows give the same loss
// and every parameter gradient within 1e-12 relative (fp64; only the order in which the head's
// gradient sums over rows differs), for an evaluation forward and a training step.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/rng.h"
#include "model/model.h"
#include "train/run_config.h"
#include "../helpers.h"

#define BAR 1e-12

static void check_preset(const char *name) {
    gm_config cfg;
    cr_assert_eq(gm_preset_model(&cfg, name, "test"), 0, "%s", gm_error());
    const int B = cfg.batch, T = cfg.seq_len, N = B * T, rows = 48;
    cr_assert_lt(rows, N, "the test needs more than one chunk");
    gm_model one, chunked;
    cr_assert_eq(gm_model_create(&one, &cfg, gm_backend_cpu()), 0, "%s", gm_error());
    cr_assert_eq(gm_model_create(&chunked, &cfg, gm_backend_cpu()), 0, "%s", gm_error());
    gm_model_set_head_rows(&one, N);
    gm_model_set_head_rows(&chunked, rows);
    int32_t *ids = malloc(sizeof(int32_t) * (N + 1));
    for (int i = 0; i <= N; i++) {
        uint32_t r = gm_rng_u32(5, 1, i);
        ids[i] = r % 7 == 0 ? cfg.eot : (int32_t)(1 + (r >> 8) % (uint32_t)(cfg.vocab - 1));
    }
    gm_model *m[2] = {&one, &chunked};
    double eval[2], train[2];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(gm_model_init(m[k], 77, GM_INIT_TEST), 0);
        if (cfg.window_start_tokens) gm_model_set_window(m[k], 2);
        eval[k] = gm_model_forward(m[k], ids, ids + 1, B, T);
        train[k] = gm_model_forward_backward(m[k], ids, ids + 1, B, T, 0.75);
        cr_assert(!isnan(eval[k]) && !isnan(train[k]), "%s: %s", name, gm_error());
    }
    cr_expect_leq(fabs(eval[1] - eval[0]), BAR * fabs(eval[0]), "%s: loss %.17g chunked, %.17g whole", name, eval[1], eval[0]);
    cr_expect_leq(fabs(train[1] - train[0]), BAR * fabs(train[0]), "%s: training loss %.17g chunked, %.17g whole", name,
                  train[1], train[0]);
    for (int i = 0; i < one.params.n; i++) {
        const gm_view *v = &one.params.v[i];
        double e = th_rel_err(gm_grad(&chunked, i), gm_grad(&one, i), v->numel);
        cr_expect_leq(e, BAR, "%s: d%s differs by %.3g relative", name, v->name, e);
    }
    free(ids);
    gm_model_free(&one), gm_model_free(&chunked);
}

Test(model_head_chunks, adamw) { check_preset("adamw"); }
Test(model_head_chunks, muon_v1) { check_preset("muon-v1"); }
Test(model_head_chunks, muon_v2) { check_preset("muon-v2"); }
Test(model_head_chunks, untied) { check_preset("untied"); }
Test(model_head_chunks, value_embed) { check_preset("value-embed"); }
Test(model_head_chunks, softcap) { check_preset("softcap"); }
