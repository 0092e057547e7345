// The fp32 model of every preset (test scale) against our independent PyTorch float64 reference
// (refdata/gen/ref_model.py, files in refdata/model/<preset>/): loss, logits and every parameter
// gradient within relative error 1e-4 per tensor. The weights are rebuilt from the recorded seed;
// a changed configuration or init makes the test say the refdata is stale (`make refdata`).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "helpers.h"
#include "model/model.h"

#define BAR 1e-4

static char *slurp(const char *preset, const char *file, size_t *len) {
    char rel[256];
    snprintf(rel, sizeof rel, "refdata/model/%s/%s", preset, file);
    char *data;
    cr_assert_eq(gm_read_all(th_root_path(rel), &data, len), 0, "%s", gm_error());
    return data;
}

static unsigned long long meta_int(const char *meta, const char *key, int base) {
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s = ", key);
    const char *p = strstr(meta, pat);
    cr_assert_not_null(p, "meta.txt has no %s", key);
    return strtoull(p + strlen(pat), NULL, base);
}

static double rel_err(const gm_real *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++)
        num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]), den += (double)ref[i] * ref[i];
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static uint64_t fnv1a(const void *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

static void check_preset(const char *preset) {
    gm_config cfg;
    cr_assert_eq(gm_config_preset(&cfg, preset, "test"), 0);
    size_t len, tlen, rlen;
    char *meta = slurp(preset, "meta.txt", &len), desc[4096];
    cr_assert_eq(gm_config_describe(&cfg, desc, sizeof desc), 0);
    cr_assert(strncmp(meta, desc, strlen(desc)) == 0,
              "%s: configuration changed since refdata was made: run make refdata", preset);
    gm_model m;
    cr_assert_eq(gm_model_create(&m, &cfg, gm_backend_cpu()), 0, "%s", gm_error());
    cr_assert_eq(gm_model_init(&m, (uint64_t)meta_int(meta, "seed", 10), GM_INIT_TEST), 0);
    cr_assert_eq(fnv1a(m.p, sizeof(gm_real) * m.params.total), (uint64_t)meta_int(meta, "params_fnv", 16),
                 "%s: parameter init changed since refdata was made: run make refdata", preset);
    gm_model_set_window(&m, (int)meta_int(meta, "window_blocks", 10));
    int32_t *tok = (int32_t *)slurp(preset, "tokens.bin", &tlen);
    int N = cfg.batch * cfg.seq_len, Vp = cfg.vocab_padded;
    cr_assert_eq(tlen, sizeof(int32_t) * (N + 1));
    float *ref = (float *)slurp(preset, "ref.bin", &rlen);
    cr_assert_eq(rlen, sizeof(float) * (1 + (size_t)N * Vp + m.params.count), "%s: ref.bin size", preset);

    // The evaluation forward leaves the logits of its last chunk in the head buffer: all of
    // them when the batch fits one chunk. The training step then overwrites them by their gradient.
    cr_assert_leq(N, m.head_rows, "%s: the test batch must fit one logits chunk", preset);
    double loss = gm_model_forward(&m, tok, tok + 1, cfg.batch, cfg.seq_len);
    double e_loss = fabs(loss - ref[0]) / fabs(ref[0]);
    cr_expect(e_loss < BAR, "%s: loss %.8g vs %.8g", preset, loss, ref[0]);
    const gm_real *logits = gm_model_act(&m, m.aix.logits);
    double e_logits = rel_err(logits, ref + 1, (size_t)N * Vp), e_grad = 0;
    cr_expect(e_logits < BAR, "%s: logits relative error %.3g", preset, e_logits);
    double train_loss = gm_model_forward_backward(&m, tok, tok + 1, cfg.batch, cfg.seq_len, 1.0);
    cr_assert(!isnan(train_loss), "%s", gm_error());
    cr_expect_eq(train_loss, loss, "%s: training loss %.17g, evaluation loss %.17g", preset, train_loss, loss);
    const float *g = ref + 1 + (size_t)N * Vp;
    const char *worst = "";
    for (int i = 0; i < m.params.n; i++) {
        const gm_view *v = &m.params.v[i];
        double e = rel_err(gm_grad(&m, i), g, v->numel);
        cr_expect(e < BAR, "%s: d%s relative error %.3g", preset, v->name, e);
        if (e > e_grad) e_grad = e, worst = v->name;
        g += v->numel;
    }
    cr_log_info("refdata %s: loss %.2e logits %.2e worst gradient %.2e (d%s)", preset, e_loss, e_logits, e_grad, worst);
    free(meta), free(tok), free(ref);
    gm_model_free(&m);
}

Test(refdata, adamw) { check_preset("adamw"); }
Test(refdata, muon_v1) { check_preset("muon-v1"); }
Test(refdata, muon_v2) { check_preset("muon-v2"); }
Test(refdata, untied) { check_preset("untied"); }
Test(refdata, value_embed) { check_preset("value-embed"); }
Test(refdata, softcap) { check_preset("softcap"); }
