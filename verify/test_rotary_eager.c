// Record #16's rotary as eager PyTorch computes it (--rotary_positions=eager-bf16): the angles of
// our tables equal, bit for bit, the bf16 angles torch's outer(arange(T), bf16 inv_freq) gives
// (refdata/rotary/eager_tables.txt, from refdata/gen/rotary_eager_ref.py: sampled rows up to
// t = 65535 and a hash of every angle for T = 1024 and 65536), and their cos/sin are within the
// rounding torch adds; exact positions fail that check (first at t = 257 on the pair w = 1); the
// option is refused without rotary_bf16, reaches the model, and the exact/eager difference is
// measured at T = 1024 and T = 65536 (refdata/records/PRESETS.md §2.4 states the figures).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bf16.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/io.h"
#include "helpers.h"
#include "model/rotary.h"
#include "refdata_fixture.h"
#include "train/run_config.h"

#define BAR 1e-4  // test_refdata's bar on the value-embed reference
#define MAX_ROWS 256
#define MAX_HASHES 16
#define HALF_MAX (GM_MAX_HEAD_DIM / 2)

typedef struct {
    int hd, t;
    double base;
    gm_bf16 theta[HALF_MAX], cos[HALF_MAX], sin[HALF_MAX];
} eager_row;

typedef struct {
    int hd, T;
    double base;
    uint64_t fnv;
} eager_hash;

typedef struct {
    eager_row *rows;
    eager_hash hashes[MAX_HASHES];
    int nrows, nhashes;
} eager_ref;

static void read_eager_ref(eager_ref *r) {
    char *text;
    size_t len;
    cr_assert_eq(gm_read_all(th_root_path("refdata/rotary/eager_tables.txt"), &text, &len), 0, "%s", gm_error());
    r->rows = malloc(sizeof *r->rows * MAX_ROWS);
    r->nrows = r->nhashes = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int n = 0;
        if (line[0] == '#') continue;
        if (!strncmp(line, "fnv ", 4)) {
            cr_assert_lt(r->nhashes, MAX_HASHES);
            eager_hash *h = &r->hashes[r->nhashes++];
            cr_assert_eq(sscanf(line, "fnv %d %lf %d %" SCNx64, &h->hd, &h->base, &h->T, &h->fnv), 4, "bad line: %s", line);
            continue;
        }
        cr_assert_lt(r->nrows, MAX_ROWS);
        eager_row *w = &r->rows[r->nrows++];
        cr_assert_eq(sscanf(line, "row %d %lf %d%n", &w->hd, &w->base, &w->t, &n), 3, "bad line: %.60s", line);
        cr_assert(w->hd > 0 && w->hd <= GM_MAX_HEAD_DIM && w->hd % 2 == 0, "bad head_dim: %.60s", line);
        const char *p = line + n;
        for (int i = 0; i < w->hd / 2; i++, p += n) {
            unsigned a, b, c;
            cr_assert_eq(sscanf(p, " %4x:%4x:%4x%n", &a, &b, &c, &n), 3, "row %d/%d: pair %d missing", w->hd, w->t, i);
            w->theta[i] = (gm_bf16)a, w->cos[i] = (gm_bf16)b, w->sin[i] = (gm_bf16)c;
        }
        cr_assert_eq(*p, '\0', "row %d/%d: more than %d pairs", w->hd, w->t, w->hd / 2);
    }
    free(text);
}

// The value-embed configuration (rotary_bf16 = 1) at the scale whose head_dim is hd.
static int value_embed_with_head_dim(gm_config *cfg, int hd, double base, gm_rotary_positions pos) {
    for (const char *const *s = gm_scale_names; *s; s++) {
        cr_assert_eq(gm_preset_model(cfg, "value-embed", *s), 0);
        if (cfg->head_dim == hd && cfg->rotary_base == base) {
            cfg->rotary_positions = pos;
            cr_assert_eq(gm_config_check(cfg), 0, "%s", gm_error());
            return 1;
        }
    }
    return 0;
}

typedef struct {
    long angles, angle_diffs, trig, trig_outside, trig_bits_equal, hashes, hash_diffs;
    int first_t_w1;      // first sampled position whose pair-0 angle (w_0 = 1: the position alone) differs; -1: none
    double trig_ratio;   // largest |ours - torch| / bound over cos and sin
} eager_check;

// Our tables under cfg against every row and hash of the reference with cfg's head_dim and base.
static eager_check check_eager(const gm_config *cfg, const eager_ref *r) {
    eager_check k = {0, 0, 0, 0, 0, 0, 0, -1, 0};
    int half = cfg->head_dim / 2, T = 1;
    double w[HALF_MAX];
    gm_rotary_freqs(cfg, w);
    for (int j = 0; j < r->nrows; j++)
        if (r->rows[j].hd == cfg->head_dim && r->rows[j].base == cfg->rotary_base && r->rows[j].t >= T) T = r->rows[j].t + 1;
    gm_real *ct = malloc(sizeof(gm_real) * (size_t)T * half), *st = malloc(sizeof(gm_real) * (size_t)T * half);
    gm_rotary_tables(cfg, T, ct, st);
    for (int j = 0; j < r->nrows; j++) {
        const eager_row *row = &r->rows[j];
        if (row->hd != cfg->head_dim || row->base != cfg->rotary_base) continue;
        for (int i = 0; i < half; i++) {
            double theta = gm_rotary_angle(cfg, row->t, w[i]);
            int differs = theta != gm_bf16_to_f32(row->theta[i]);
            k.angles++, k.angle_diffs += differs;
            if (differs && i == 0 && k.first_t_w1 < 0) k.first_t_w1 = row->t;
            if (differs && k.angle_diffs <= 3)
                cr_log_info("rotary_eager: head_dim %d t %d pair %d: angle %.17g, torch's %.17g", cfg->head_dim, row->t, i,
                            theta, (double)gm_bf16_to_f32(row->theta[i]));
            // torch's value is bf16(fp32 cos(theta)): half a bf16 ulp (at most 2^-8 of the value) for
            // the final rounding, plus its fp32 cos (1 ulp, 2^-23) and our fp32 store (2^-24), which
            // 2^-22 covers with the cross terms. In the fp64 build our store adds ~2^-53.
            const gm_real ours[2] = {ct[(size_t)row->t * half + i], st[(size_t)row->t * half + i]};
            const gm_bf16 theirs[2] = {row->cos[i], row->sin[i]};
            for (int f = 0; f < 2; f++) {
                double d = fabs((double)ours[f] - gm_bf16_to_f32(theirs[f])), bound = (0x1p-8 + 0x1p-22) * fabs((double)ours[f]);
                k.trig++;
                k.trig_outside += d > bound;
                k.trig_bits_equal += gm_f32_to_bf16((float)ours[f]) == theirs[f];
                if (bound > 0 && d / bound > k.trig_ratio) k.trig_ratio = d / bound;
                if (bound == 0 && d > 0) k.trig_ratio = INFINITY;
            }
        }
    }
    free(ct), free(st);
    for (int j = 0; j < r->nhashes; j++) {
        const eager_hash *h = &r->hashes[j];
        if (h->hd != cfg->head_dim || h->base != cfg->rotary_base) continue;
        gm_bf16 *bits = malloc(sizeof *bits * (size_t)h->T * half);
        int not_bf16 = 0;
        for (int t = 0; t < h->T; t++)
            for (int i = 0; i < half; i++) {
                double theta = gm_rotary_angle(cfg, t, w[i]);
                bits[(size_t)t * half + i] = gm_f32_to_bf16((float)theta);
                not_bf16 += gm_bf16_to_f32(bits[(size_t)t * half + i]) != theta;
            }
        // little-endian bytes, as the generator hashes them (x86 and every target of the build)
        uint64_t fnv = gm_hash_bytes(GM_HASH_INIT, bits, sizeof *bits * (size_t)h->T * half);
        k.hashes++, k.hash_diffs += fnv != h->fnv || not_bf16;
        free(bits);
    }
    return k;
}

static void check_every_table(gm_rotary_positions pos, eager_check *sum) {
    eager_ref r;
    read_eager_ref(&r);
    memset(sum, 0, sizeof *sum);
    sum->first_t_w1 = -1;
    int tables = 0;
    for (int j = 0; j < r.nrows; j++) {
        int seen = 0;
        for (int q = 0; q < j; q++) seen |= r.rows[q].hd == r.rows[j].hd && r.rows[q].base == r.rows[j].base;
        if (seen) continue;
        gm_config cfg;
        cr_assert(value_embed_with_head_dim(&cfg, r.rows[j].hd, r.rows[j].base, pos),
                  "refdata/rotary/eager_tables.txt: no value-embed scale has head_dim %d, base %g: run make refdata",
                  r.rows[j].hd, r.rows[j].base);
        eager_check k = check_eager(&cfg, &r);
        cr_log_info("rotary_eager: %s positions, head_dim %d: %ld of %ld angles differ from torch's, %ld of %ld cos/sin "
                    "outside the bound (worst at %.3g of it; %ld equal after bf16 rounding), %ld of %ld table hashes differ, "
                    "first differing position on pair 0: %d",
                    pos == GM_ROTARY_EXACT ? "exact" : "eager-bf16", cfg.head_dim, k.angle_diffs, k.angles, k.trig_outside,
                    k.trig, k.trig_ratio, k.trig_bits_equal, k.hash_diffs, k.hashes, k.first_t_w1);
        cr_expect_eq(k.hashes, 2, "head_dim %d: %ld table hashes, want T = 1024 and 65536: run make refdata", cfg.head_dim,
                     k.hashes);
        sum->angles += k.angles, sum->angle_diffs += k.angle_diffs, sum->trig += k.trig;
        sum->trig_outside += k.trig_outside, sum->hashes += k.hashes, sum->hash_diffs += k.hash_diffs;
        if (k.first_t_w1 >= 0 && (sum->first_t_w1 < 0 || k.first_t_w1 < sum->first_t_w1)) sum->first_t_w1 = k.first_t_w1;
        tables++;
    }
    // every scale's value-embed head_dim is in the file
    for (const char *const *s = gm_scale_names; *s; s++) {
        gm_config cfg;
        cr_assert_eq(gm_preset_model(&cfg, "value-embed", *s), 0);
        int found = 0;
        for (int j = 0; j < r.nrows && !found; j++) found = r.rows[j].hd == cfg.head_dim && r.rows[j].base == cfg.rotary_base;
        cr_expect(found, "refdata/rotary/eager_tables.txt lacks head_dim %d (value-embed at %s): run make refdata",
                  cfg.head_dim, *s);
    }
    cr_expect_geq(tables, 2);
    free(r.rows);
}

Test(rotary_eager, angles_are_torchs_bit_for_bit_and_cos_sin_within_its_rounding) {
    eager_check k;
    check_every_table(GM_ROTARY_EAGER_BF16, &k);
    cr_expect_eq(k.angle_diffs, 0, "%ld of %ld angles differ from torch's eager bf16 angles", k.angle_diffs, k.angles);
    cr_expect_eq(k.hash_diffs, 0, "%ld of %ld whole-table angle hashes differ from torch's", k.hash_diffs, k.hashes);
    cr_expect_eq(k.trig_outside, 0, "%ld of %ld cos/sin values outside torch's rounding", k.trig_outside, k.trig);
    cr_expect_gt(k.angles, 1000);
}

// Negative control: the same check with exact positions and angles fails, first (on the pair
// whose frequency is 1, so only the position can move) at t = 257, which bf16 holds as 256.
Test(rotary_eager, exact_positions_fail_the_eager_refdata) {
    eager_check k;
    check_every_table(GM_ROTARY_EXACT, &k);
    cr_expect_gt(k.angle_diffs, k.angles / 2, "exact angles: only %ld of %ld differ from torch's eager ones",
                 k.angle_diffs, k.angles);
    cr_expect_eq(k.hash_diffs, k.hashes, "exact angles: %ld of %ld table hashes differ", k.hash_diffs, k.hashes);
    cr_expect_gt(k.trig_outside, 0, "exact angles: every cos/sin within torch's rounding of the eager ones");
    cr_expect_eq(k.first_t_w1, 257, "exact positions: pair 0 first differs at t = %d, want 257", k.first_t_w1);
}

Test(rotary_eager, positions_round_as_bf16) {
    gm_config cfg;
    cr_assert(value_embed_with_head_dim(&cfg, 128, 10000.0, GM_ROTARY_EAGER_BF16));
    // 8 significant bits: exact to 256, then steps of 2, 4, ...; ties go to the even significand
    const int t[] = {255, 256, 257, 258, 259, 1000, 1001, 1002, 1023, 65535};
    const double want[] = {255, 256, 256, 258, 260, 1000, 1000, 1000, 1024, 65536};
    for (size_t j = 0; j < sizeof t / sizeof t[0]; j++)
        cr_expect_eq(gm_rotary_angle(&cfg, t[j], 1.0), want[j], "position %d: %g, want %g", t[j],
                     gm_rotary_angle(&cfg, t[j], 1.0), want[j]);
}

Test(rotary_eager, presets_default_to_exact_and_eager_needs_rotary_bf16) {
    for (const char *const *p = gm_preset_names; *p; p++)
        for (const char *const *s = gm_scale_names; *s; s++) {
            gm_config cfg;
            cr_assert_eq(gm_preset_model(&cfg, *p, *s), 0);
            cr_expect_eq(cfg.rotary_positions, GM_ROTARY_EXACT, "%s/%s", *p, *s);
        }
    gm_config cfg;
    cr_assert_eq(gm_preset_model(&cfg, "untied", "test"), 0);
    cfg.rotary_positions = GM_ROTARY_EAGER_BF16;
    cr_expect_neq(gm_config_check(&cfg), 0);
    cr_expect(strstr(gm_error(), "rotary_positions=eager-bf16") != NULL, "message: %s", gm_error());
    th_expect_refused("train", "--preset=softcap --scale=test --rotary_positions=eager-bf16",
                      "rotary_positions=eager-bf16", 1);
    th_expect_refused("train", "--preset=value-embed --scale=test --rotary_positions=bf16",
                      "--rotary_positions: 'bf16' is not one of: exact, eager-bf16", 1);
}

// The option reaches the model: value-embed's reference (exact positions) rejects the eager
// angles. At the test scale (T = 64) the positions are exact; the products t * w are rounded.
Test(rotary_eager, value_embed_reference_rejects_eager_angles) {
    th_refcase rc;
    th_ref_open(&rc, "value-embed", "rotary_positions", "eager-bf16");
    th_referr e = th_ref_compare(&rc, rc.window, rc.ref, 0);
    cr_expect(fmax(e.loss, e.logits) > 10 * BAR, "value-embed with eager angles: loss within %.3g, logits within %.3g",
              e.loss, e.logits);
    cr_log_info("rotary_eager: value-embed with eager angles vs its exact-position reference: loss %.2e logits %.2e",
                e.loss, e.logits);
    th_ref_close(&rc);
}

// What eager changes, over the whole table of full-scale value-embed (head_dim 128): the largest
// position error, |dtheta|, |dcos|, |dsin| at T = 1024 and at T = 65536 (PRESETS.md §2.4 quotes them).
Test(rotary_eager, exact_vs_eager_at_1024_and_65536, .timeout = 120) {
    gm_config ex, eg;
    cr_assert(value_embed_with_head_dim(&ex, 128, 10000.0, GM_ROTARY_EXACT));
    cr_assert(value_embed_with_head_dim(&eg, 128, 10000.0, GM_ROTARY_EAGER_BF16));
    enum { T = 65536 };
    int half = ex.head_dim / 2;
    double w[HALF_MAX], wmax = 0;
    gm_rotary_freqs(&ex, w);
    for (int i = 0; i < half; i++) wmax = fmax(wmax, w[i]);
    size_t n = (size_t)T * half;
    gm_real *c0 = malloc(sizeof(gm_real) * n), *s0 = malloc(sizeof(gm_real) * n);
    gm_real *c1 = malloc(sizeof(gm_real) * n), *s1 = malloc(sizeof(gm_real) * n);
    gm_rotary_tables(&ex, T, c0, s0);
    gm_rotary_tables(&eg, T, c1, s1);
    const int upto[2] = {1024, T};
    double pos[2] = {0, 0}, th[2] = {0, 0}, dc[2] = {0, 0}, ds[2] = {0, 0}, sum_dc[2] = {0, 0};
    long moved[2] = {0, 0};
    int at_pos[2] = {0, 0}, at_th[2] = {0, 0};
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++)
            for (int u = 0; u < 2; u++) {
                if (t >= upto[u]) continue;
                size_t k = (size_t)t * half + i;
                double d = fabs(gm_rotary_angle(&eg, t, w[i]) - gm_rotary_angle(&ex, t, w[i]));
                if (i == 0 && d > pos[u]) pos[u] = d, at_pos[u] = t;  // w_0 = 1: the position error
                if (d > th[u]) th[u] = d, at_th[u] = t;
                moved[u] += d != 0;
                sum_dc[u] += fabs((double)c1[k] - c0[k]);
                dc[u] = fmax(dc[u], fabs((double)c1[k] - c0[k]));
                ds[u] = fmax(ds[u], fabs((double)s1[k] - s0[k]));
            }
    for (int u = 0; u < 2; u++) {
        // t in [2^(e-1), 2^e) has bf16 spacing 2^(e-8): the largest error is half of it, at the top octave
        double want_pos = ldexp(1.0, (int)ceil(log2(upto[u])) - 9);
        cr_expect_eq(pos[u], want_pos, "T = %d: largest position error %g, want %g", upto[u], pos[u], want_pos);
        // |bf16(bf16(t) w) - t w| <= 2^-8 t w + 2^-8 (1 + 2^-8) t w: the two half-ulp roundings
        double bound = 0x1p-8 * (2 + 0x1p-8) * (upto[u] - 1) * wmax;
        cr_expect_leq(th[u], bound, "T = %d: |dtheta| %g above the bound %g", upto[u], th[u], bound);
        // cos and sin are 1-Lipschitz, plus our two fp32 stores
        cr_expect_leq(fmax(dc[u], ds[u]), fmin(2.0, th[u]) + 1e-6, "T = %d", upto[u]);
        cr_log_info("rotary_eager: exact vs eager-bf16, head_dim 128, T = %d: largest position error %g (t = %d), "
                    "|dtheta| %.6g (t = %d, bound %.4g), |dcos| %.6g, |dsin| %.6g; %ld of %ld angles moved, mean |dcos| %.3g",
                    upto[u], pos[u], at_pos[u], th[u], at_th[u], bound, dc[u], ds[u], moved[u], (long)upto[u] * half,
                    sum_dc[u] / ((double)upto[u] * half));
    }
    free(c0), free(s0), free(c1), free(s1);
}
