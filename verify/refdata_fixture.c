#include "refdata_fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "base/hash.h"
#include "helpers.h"
#include "train/run_config.h"

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

float *th_ref_floats(const char *preset, const char *file, size_t n) {
    size_t len;
    float *r = (float *)slurp(preset, file, &len);
    cr_assert_eq(len, sizeof(float) * n, "%s/%s: %zu bytes, expected %zu floats: run make refdata", preset, file, len,
                 n);
    return r;
}

void th_ref_open(th_refcase *rc, const char *preset, const char *key, const char *value) {
    memset(rc, 0, sizeof *rc);
    cr_assert_eq(gm_preset_model(&rc->cfg, preset, "test"), 0);
    size_t len, tlen;
    char desc[4096];
    rc->meta = slurp(preset, "meta.txt", &len);
    cr_assert_eq(gm_config_describe(&rc->cfg, desc, sizeof desc), 0);
    cr_assert(strncmp(rc->meta, desc, strlen(desc)) == 0,
              "%s: configuration changed since refdata was made: run make refdata", preset);
    if (key) {
        const gm_field *f = gm_field_find(gm_config_fields, gm_config_nfields, key);
        cr_assert(f && gm_field_set(f, &rc->cfg, value) == 0, "%s=%s: %s", key, value, gm_error());
    }
    cr_assert_eq(gm_model_create(&rc->m, &rc->cfg, gm_backend_cpu()), 0, "%s", gm_error());
    cr_assert_eq(gm_model_init(&rc->m, (uint64_t)meta_int(rc->meta, "seed", 10), GM_INIT_TEST), 0);
    uint64_t fnv = gm_hash_bytes(GM_HASH_INIT, rc->m.p, sizeof(gm_real) * rc->m.params.total);
    cr_assert_eq(fnv, (uint64_t)meta_int(rc->meta, "params_fnv", 16),
                 "%s: parameter init changed since refdata was made: run make refdata", preset);
    rc->window = (int)meta_int(rc->meta, "window_blocks", 10);
    rc->N = rc->cfg.batch * rc->cfg.seq_len, rc->Vp = rc->cfg.vocab_padded;
    rc->tok = (int32_t *)slurp(preset, "tokens.bin", &tlen);
    cr_assert_eq(tlen, sizeof(int32_t) * (rc->N + 1));
    rc->ref = th_ref_floats(preset, "ref.bin", 1 + (size_t)rc->N * rc->Vp + rc->m.params.count);
}

void th_ref_close(th_refcase *rc) {
    free(rc->meta), free(rc->tok), free(rc->ref);
    gm_model_free(&rc->m);
}

th_referr th_ref_compare(th_refcase *rc, int window, const float *ref, int grads) {
    gm_model *m = &rc->m;
    th_referr e = {0, 0, 0, ""};
    gm_model_set_window(m, window);
    double loss = gm_model_forward(m, rc->tok, rc->tok + 1, rc->cfg.batch, rc->cfg.seq_len);
    cr_assert(!isnan(loss), "%s", gm_error());
    e.loss = fabs(loss - ref[0]) / fabs(ref[0]);
    // The evaluation forward leaves the logits of its last chunk in the head buffer: all of them
    // when the batch fits one chunk (the CPU backend's memory is the host's).
    cr_assert_leq(rc->N, m->head_rows, "the reference batch must fit one logits chunk");
    e.logits = th_rel_err(gm_as_real(gm_model_act(m, m->aix.logits)), ref + 1, (size_t)rc->N * rc->Vp);
    if (!grads) return e;
    // The training step (which overwrites the logits by their gradient) computes the same loss.
    gm_model_zero_grad(m);
    double train_loss = gm_model_forward_backward(m, rc->tok, rc->tok + 1, rc->cfg.batch, rc->cfg.seq_len, 1.0);
    cr_assert(!isnan(train_loss), "%s", gm_error());
    cr_expect_eq(train_loss, loss, "training loss %.17g, evaluation loss %.17g", train_loss, loss);
    const float *g = ref + 1 + (size_t)rc->N * rc->Vp;
    for (int i = 0; i < m->params.n; i++) {
        const gm_view *v = &m->params.v[i];
        double ei = th_rel_err(gm_grad(m, i), g, v->numel);
        if (ei > e.grad || i == 0) e.grad = ei, e.worst = v->name;
        g += v->numel;
    }
    return e;
}
