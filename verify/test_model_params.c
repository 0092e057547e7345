// The parameter table of every preset at full scale against the records: total count, number of
// Muon matrices (counts from the records, refdata/records/PRESETS.md section 1; normuon's model
// is softcap's), contiguous
// non-overlapping views; and the record initialisation (zero-init projections/head, lambdas).
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "model/model.h"
#include "train/run_config.h"
#include "model/params.h"

typedef struct {
    const char *preset;
    size_t params;  // the record's model
    int matrices;   // tensors Muon (or, for adamw, AdamW) treats as block matrices
} record_count;

static const record_count records[] = {
    {"adamw", 123532032, 48},  {"muon-v1", 123532032, 48},     {"muon-v2", 123532032, 48},
    {"untied", 162201600, 72}, {"value-embed", 394002486, 72}, {"softcap", 275742772, 68},
    {"normuon", 275742772, 68},
};
enum { NRECORDS = sizeof records / sizeof records[0] };

// Every preset has its record's count above (a preset added without one fails here).
Test(model_params, every_preset_has_a_record_count) {
    for (const char *const *p = gm_preset_names; *p; p++) {
        size_t r = 0;
        while (r < NRECORDS && strcmp(records[r].preset, *p)) r++;
        cr_expect_lt(r, NRECORDS, "%s: no parameter count from its record here", *p);
    }
}

Test(model_params, full_scale_counts_match_the_records) {
    for (size_t r = 0; r < NRECORDS; r++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, records[r].preset, "full"), 0, "%s", gm_error());
        gm_table t;
        gm_param_index ix;
        cr_assert_eq(gm_params_build(&cfg, &t, &ix), 0, "%s", gm_error());
        cr_expect_eq(t.count, records[r].params, "%s: %zu parameters, record %zu", records[r].preset, t.count,
                     records[r].params);
        int matrices = 0;
        size_t end = 0;
        for (int i = 0; i < t.n; i++) {
            matrices += t.v[i].group == GM_GROUP_MATRIX;
            cr_expect(t.v[i].offset >= end && t.v[i].offset % GM_TABLE_ALIGN == 0, "%s overlaps", t.v[i].name);
            end = t.v[i].offset + t.v[i].numel;
        }
        cr_expect_eq(end, t.total);
        cr_expect_eq(matrices, records[r].matrices, "%s: %d matrices", records[r].preset, matrices);
        gm_table_free(&t);
    }
}

static double max_abs(const gm_real *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs((double)x[i]) > m ? fabs((double)x[i]) : m;
    return m;
}

// Record init at tiny scale: what is zero, what is bounded, what the scalars start at.
Test(model_params, record_initialisation) {
    for (const char *const *p = gm_preset_names; *p; p++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, *p, "tiny"), 0);
        gm_model m;
        cr_assert_eq(gm_model_create(&m, &cfg, gm_backend_cpu()), 0, "%s", gm_error());
        cr_assert_eq(gm_model_init(&m, 1, GM_INIT_RECORD), 0);
        for (int i = 0; i < m.params.n; i++) {
            const gm_view *v = &m.params.v[i];
            const gm_real *x = gm_param(&m, i);
            int is_proj = strstr(v->name, "c_proj") != NULL, is_head = strcmp(v->name, "lm_head") == 0;
            if ((is_proj && cfg.zero_init_proj) || (is_head && !cfg.tied_head && cfg.zero_init_head))
                cr_expect_eq(max_abs(x, v->numel), 0.0, "%s/%s not zero", *p, v->name);
            else if (v->group == GM_GROUP_MATRIX || is_head)  // default Linear: U(+-1/sqrt(in))
                cr_expect(max_abs(x, v->numel) <= 1 / sqrt((double)v->shape[1]) &&
                              max_abs(x, v->numel) > 0.9 / sqrt((double)v->shape[1]),
                          "%s/%s not U(+-1/sqrt(in))", *p, v->name);
            if (strstr(v->name, "attn.lambdas"))
                cr_expect(x[0] == 0.5 && x[1] == 0.5, "%s/%s", *p, v->name);
            else if (strstr(v->name, "lambdas"))
                cr_expect(x[0] == 1 && x[1] == 0, "%s/%s", *p, v->name);
            if (strcmp(v->name, "skip_weights") == 0)
                for (size_t k = 0; k < v->numel; k++) cr_expect_eq(x[k], 1);
            if (v->group == GM_GROUP_EMBED) {  // N(0, 1)
                double s = 0;
                for (size_t k = 0; k < v->numel; k++) s += (double)x[k] * x[k];
                cr_expect(fabs(sqrt(s / v->numel) - 1) < 0.01, "%s/%s std %g", *p, v->name, sqrt(s / v->numel));
            }
        }
        gm_model_free(&m);
    }
}

// A tiny-scale step: the loss at record init is ln(vocab) where the head is zero (uniform
// logits), a plausible value otherwise; a forward alone allocates no gradient memory and gives
// the same loss twice; a training step runs without error and computes the same loss.
Test(model_params, tiny_forward_backward_runs) {
    for (const char *const *p = gm_preset_names; *p; p++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, *p, "tiny"), 0);
        gm_model m;
        cr_assert_eq(gm_model_create(&m, &cfg, gm_backend_cpu()), 0);
        cr_assert_eq(gm_model_init(&m, 1, GM_INIT_RECORD), 0);
        int N = cfg.batch * cfg.seq_len;
        int32_t *ids = malloc(sizeof(int32_t) * (N + 1));
        for (int i = 0; i <= N; i++) ids[i] = (i * 7919) % cfg.vocab;
        double loss = gm_model_forward(&m, ids, ids + 1, cfg.batch, cfg.seq_len);
        if (!cfg.tied_head && cfg.zero_init_head)
            cr_expect(fabs(loss - log(cfg.vocab_padded)) < 1e-5, "%s: loss %g, ln(Vp) %g", *p, loss,
                      log(cfg.vocab_padded));
        else
            cr_expect(isfinite(loss) && loss > 0 && loss < 3 * log(cfg.vocab_padded), "%s: loss %g", *p, loss);
        cr_expect(m.g == NULL && m.da == NULL, "%s: a forward alone allocated gradient buffers", *p);
        cr_expect_eq(gm_model_forward(&m, ids, ids + 1, cfg.batch, cfg.seq_len), loss, "%s: not deterministic", *p);
        double train_loss = gm_model_forward_backward(&m, ids, ids + 1, cfg.batch, cfg.seq_len, 1.0);
        cr_expect_eq(train_loss, loss, "%s: training loss %g (%s)", *p, train_loss, gm_error());
        free(ids);
        gm_model_free(&m);
    }
}

// The sliding-window schedule against the records' own figures (PRESETS.md 7.2 and 8.1):
// W_0 = 1 block, first increase at step 110 of 1480 (#16) and 103 of 1390 (#18, and normuon on
// its model and steps), W_N = 14.
Test(model_params, window_schedule_as_recorded) {
    const struct {
        const char *preset;
        long steps, first_increase;
    } r[] = {{"value-embed", 1480, 110}, {"softcap", 1390, 103}, {"normuon", 1390, 103}};
    for (int i = 0; i < 3; i++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, r[i].preset, "full"), 0);
        cr_expect_eq(gm_config_window_blocks(&cfg, 0, r[i].steps), 1);
        cr_expect_eq(gm_config_window_blocks(&cfg, r[i].first_increase - 1, r[i].steps), 1, "%s", r[i].preset);
        cr_expect_eq(gm_config_window_blocks(&cfg, r[i].first_increase, r[i].steps), 2, "%s", r[i].preset);
        cr_expect_eq(gm_config_window_blocks(&cfg, r[i].steps, r[i].steps), 14, "%s", r[i].preset);
        for (long s = 0; s <= r[i].steps; s++)  // the closed form 1 + floor(13.5 s / N) from the spec
            cr_expect_eq(gm_config_window_blocks(&cfg, s, r[i].steps), 1 + (int)floor(13.5 * s / r[i].steps),
                         "%s step %ld", r[i].preset, s);
    }
    gm_config adamw;
    cr_assert_eq(gm_preset_model(&adamw, "adamw", "full"), 0);
    cr_expect_eq(gm_config_window_blocks(&adamw, 5, 10), 0);  // no window: plain causal
}
