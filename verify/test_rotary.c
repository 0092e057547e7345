// Record #16's rotary frequencies: the value-embed preset rounds them to bf16 as the record's
// model.bfloat16() rounds its inv_freq buffer, at every scale, bit for bit against the buffer
// torch computes (refdata/rotary/bf16_inv_freq.txt, from refdata/gen/rotary_ref.py); rotary_bf16=0
// gives the exact frequencies back; the value-embed PyTorch reference rejects the exact ones.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bf16.h"
#include "base/error.h"
#include "base/io.h"
#include "helpers.h"
#include "model/rotary.h"
#include "refdata_fixture.h"
#include "train/run_config.h"

#define BAR 1e-4

// Round a positive normal float to bf16 (8 significant bits), nearest with ties to even, by
// scaling rather than bit patterns: nearbyint rounds ties to even in the default rounding mode.
static double rne_bf16(float f) {
    int e;
    frexp(f, &e);  // f = m 2^e, m in [0.5, 1)
    double ulp = ldexp(1.0, e - 8);
    return nearbyint(f / ulp) * ulp;
}

typedef struct {
    int hd, i;
    double base;
    unsigned f32, bf16;
} torch_freq;

static torch_freq *read_torch_freqs(int *n) {
    char *text;
    size_t len;
    cr_assert_eq(gm_read_all(th_root_path("refdata/rotary/bf16_inv_freq.txt"), &text, &len), 0, "%s", gm_error());
    torch_freq *t = malloc(sizeof *t * (len / 8 + 1));
    *n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        torch_freq *r = &t[*n];
        cr_assert_eq(sscanf(line, "%d %lf %d %x %x", &r->hd, &r->base, &r->i, &r->f32, &r->bf16), 5, "bad line: %s",
                     line);
        (*n)++;
    }
    free(text);
    return t;
}

Test(rotary, value_embed_frequencies_are_the_records_bf16_buffer) {
    int n, tables = 0, f32_differ = 0, f32_ulps = 0;
    torch_freq *t = read_torch_freqs(&n);
    for (const char *const *s = gm_scale_names; *s; s++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, "value-embed", *s), 0);
        cr_expect_eq(cfg.rotary_bf16, 1, "value-embed at scale %s: rotary_bf16 is not the default", *s);
        double w[GM_MAX_HEAD_DIM / 2];
        gm_rotary_freqs(&cfg, w);
        int found = 0;
        for (int k = 0; k < n; k++) {
            if (t[k].hd != cfg.head_dim || t[k].base != cfg.rotary_base) continue;
            float f32 = gm_bits_f32(t[k].f32);
            double want = rne_bf16(f32);
            cr_assert_eq(want, gm_bf16_to_f32((gm_bf16)t[k].bf16), "torch's .bfloat16() is not nearest-even at %g",
                         (double)f32);
            cr_expect_eq(w[t[k].i], want, "head_dim %d pair %d: %.9g, the record's buffer holds %.9g", cfg.head_dim,
                         t[k].i, w[t[k].i], want);
            float ours = powf((float)(1.0 / cfg.rotary_base), (float)(2 * t[k].i) / (float)cfg.head_dim);
            int ulps = abs((int)(gm_f32_bits(ours) - t[k].f32));  // same sign, so bits are ordered
            f32_differ += ulps != 0;
            if (ulps > f32_ulps) f32_ulps = ulps;
            found++;
        }
        cr_expect_eq(found, cfg.head_dim / 2,
                     "refdata/rotary has %d of %d frequencies for head_dim %d: run make refdata", found,
                     cfg.head_dim / 2, cfg.head_dim);
        tables++;
    }
    cr_log_info(
        "rotary: value-embed's %d tables equal torch's bf16 buffer (glibc's fp32 powf differs from torch's "
        "fp32 pow in %d values, by up to %d ulp; their bf16 roundings agree)",
        tables, f32_differ, f32_ulps);
    free(t);
}

Test(rotary, exact_without_rotary_bf16_within_half_a_bf16_ulp_with_it) {
    gm_config cfg;
    cr_assert_eq(gm_preset_model(&cfg, "value-embed", "full"), 0);
    int half = cfg.head_dim / 2, moved = 0;
    double rounded[GM_MAX_HEAD_DIM / 2], exact[GM_MAX_HEAD_DIM / 2], worst = 0;
    gm_rotary_freqs(&cfg, rounded);
    cfg.rotary_bf16 = 0;
    gm_rotary_freqs(&cfg, exact);
    for (int i = 0; i < half; i++) {
        double e = pow(cfg.rotary_base, -2.0 * i / cfg.head_dim), rel = fabs(rounded[i] - e) / e;
        cr_expect_eq(exact[i], e, "pair %d: %.17g, exact %.17g", i, exact[i], e);
        cr_expect_eq((double)gm_round_bf16((float)rounded[i]), rounded[i], "pair %d: %.9g is not a bf16 value", i,
                     rounded[i]);
        // half an ulp of 8 significant bits, plus the fp32 pow's own error
        cr_expect_leq(rel, ldexp(1.0, -8) + 1e-6, "pair %d: rounded %.9g is %.3g away from %.9g", i, rounded[i], rel,
                      e);
        moved += rounded[i] != e;
        if (rel > worst) worst = rel;
    }
    cr_expect_gt(moved, half / 2, "only %d of %d frequencies moved by the rounding", moved, half);
    cr_log_info("rotary: bf16 rounding moves %d of %d frequencies (head_dim %d), by up to %.2f%%", moved, half,
                cfg.head_dim, 100 * worst);
}

Test(rotary, half_truncated_rotary_refuses_rotary_bf16) {
    gm_config cfg;
    cr_assert_eq(gm_preset_model(&cfg, "softcap", "test"), 0);
    cfg.rotary_bf16 = 1;
    cr_expect_neq(gm_config_check(&cfg), 0);
    cr_expect(strstr(gm_error(), "rotary_bf16") != NULL, "message: %s", gm_error());
}

Test(rotary, value_embed_reference_rejects_the_exact_frequencies) {
    th_refcase rc;
    th_ref_open(&rc, "value-embed", "rotary_bf16", "0");
    th_referr e = th_ref_compare(&rc, rc.window, rc.ref, 1);
    // test_refdata's check fails: here by more than ten times its bar
    cr_expect(fmax(e.logits, e.grad) > 10 * BAR,
              "value-embed with exact frequencies: logits within %.3g, gradients within %.3g of the reference",
              e.logits, e.grad);
    cr_log_info(
        "rotary: value-embed with exact frequencies vs its reference: loss %.2e logits %.2e worst gradient "
        "%.2e (d%s)",
        e.loss, e.logits, e.grad, e.worst);
    th_ref_close(&rc);
}
