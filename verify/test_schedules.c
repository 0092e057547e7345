// Schedules at their break points, against the records' formulas (refdata/records/PRESETS.md).
#include <criterion/criterion.h>
#include <math.h>

#include "base/error.h"
#include "model/config.h"
#include "optim/schedule.h"
#include "train/run_config.h"

Test(schedules, warmup_warmdown_break_points) {
    // adamw record: 9536 steps, warmup 256, warmdown 2048.
    gm_lr_schedule s = {GM_LR_WARMUP_WARMDOWN, 9536, 256, 2048, 0, 0};
    cr_assert_eq(gm_lr_mult(&s, 0), 1.0 / 256);
    cr_assert_eq(gm_lr_mult(&s, 255), 1.0);
    cr_assert_eq(gm_lr_mult(&s, 256), 1.0);
    cr_assert_eq(gm_lr_mult(&s, 7487), 1.0);
    cr_assert_eq(gm_lr_mult(&s, 7488), 1.0);  // (9536 - 7488) / 2048
    cr_assert_eq(gm_lr_mult(&s, 7489), 2047.0 / 2048);
    cr_assert_eq(gm_lr_mult(&s, 9535), 1.0 / 2048);
    cr_assert_eq(gm_lr_mult(&s, 9536), 0.0);
    // muon-v2: no warmup, warmdown 1800 of 6200.
    gm_lr_schedule v2 = {GM_LR_WARMUP_WARMDOWN, 6200, 0, 1800, 0, 0};
    cr_assert_eq(gm_lr_mult(&v2, 0), 1.0);
    cr_assert_eq(gm_lr_mult(&v2, 4399), 1.0);
    cr_assert_eq(gm_lr_mult(&v2, 4401), 1799.0 / 1800);
}

Test(schedules, cooldown_fraction_of_the_softcap_record) {
    gm_lr_schedule s = {GM_LR_COOLDOWN_FRAC, 1390, 0, 0, 0.4, 0};
    cr_assert_eq(gm_lr_mult(&s, 0), 1.0);
    cr_assert_eq(gm_lr_mult(&s, 834), 1.0, "tau = 0.4 exactly in double");
    cr_assert_float_eq(gm_lr_mult(&s, 835), 555.0 / 556, 1e-12);
    cr_assert_float_eq(gm_lr_mult(&s, 1389), 1.0 / 556, 1e-12);
}

// Record #43 (2025-11-10_CautiousWD, get_lr): x = s / 2205; from x >= 0.5 on, w = (1 - x) / 0.5 and
// lr = w + (1 - w) 0.1, so the cooldown ends at 0.1, not 0.
Test(schedules, cooldown_to_a_floor_of_the_cautious_wd_record) {
    gm_lr_schedule s = {GM_LR_COOLDOWN_FRAC, 2205, 0, 0, 0.5, 0.1};
    cr_assert_eq(gm_lr_mult(&s, 0), 1.0);
    cr_assert_eq(gm_lr_mult(&s, 1102), 1.0);
    for (int k = 1103; k < 2205; k++) {
        const double x = (double)k / 2205, w = (1 - x) / 0.5;
        cr_assert_float_eq(gm_lr_mult(&s, k), w * 1.0 + (1 - w) * 0.1, 1e-15, "step %d", k);
    }
    cr_assert_float_eq(gm_lr_mult(&s, 2204), 0.1 + 0.9 * 2.0 / 2205, 1e-15);
    // Floor 0 is the softcap record's formula, bit for bit, so its runs are unchanged.
    gm_lr_schedule z = {GM_LR_COOLDOWN_FRAC, 1390, 0, 0, 0.4, 0};
    for (int k = 0; k < 1390; k++) {
        const double tau = 1.0 - (double)k / 1390;
        cr_assert_eq(gm_lr_mult(&z, k), tau >= 0.4 ? 1.0 : tau / 0.4, "step %d", k);
    }
}

Test(schedules, momentum_warmup) {
    cr_assert_eq(gm_momentum_at(0.85, 0.95, 300, 0, 1390, 0), 0.85);
    cr_assert_float_eq(gm_momentum_at(0.85, 0.95, 300, 0, 1390, 150), 0.90, 1e-15);
    cr_assert_eq(gm_momentum_at(0.85, 0.95, 300, 0, 1390, 300), 0.95);
    cr_assert_eq(gm_momentum_at(0.85, 0.95, 300, 0, 1390, 1389), 0.95);
    cr_assert_eq(gm_momentum_at(0.85, 0.95, 0, 0, 1390, 0), 0.95);
}

// Record #43 (get_muon_momentum, 2245 steps): up from 0.85 over 300 steps, 0.95, then down over the
// last 50: after step 2195, 0.95 - (s - 2195) / 50 * 0.1.
Test(schedules, momentum_cooldown_of_the_cautious_wd_record) {
    const int N = 2245, cd = 50;
    cr_assert_float_eq(gm_momentum_at(0.85, 0.95, 300, cd, N, 299), 0.85 + 299.0 / 300 * 0.1, 1e-15);
    cr_assert_eq(gm_momentum_at(0.85, 0.95, 300, cd, N, 300), 0.95);
    cr_assert_eq(gm_momentum_at(0.85, 0.95, 300, cd, N, 2195), 0.95);
    for (int s = 2196; s < N; s++)
        cr_assert_float_eq(gm_momentum_at(0.85, 0.95, 300, cd, N, s), 0.95 - (s - 2195) / 50.0 * 0.1, 1e-15, "step %d", s);
    cr_assert_float_eq(gm_momentum_at(0.85, 0.95, 300, cd, N, 2244), 0.852, 1e-15);
}

Test(schedules, window_blocks_match_the_closed_form) {
    // Both records: W_s = 1 + floor(13.5 s / N), first increase at s = 110 (N = 1480), 103 (N = 1390).
    const gm_config c = {.attn_block = 128, .window_start_tokens = 128, .window_end_tokens = 1856};
    const int N[2] = {1480, 1390}, first[2] = {110, 103};
    for (int r = 0; r < 2; r++) {
        for (int s = 0; s <= N[r]; s++)
            cr_assert_eq(gm_config_window_blocks(&c, s, N[r]), 1 + (int)floor(13.5 * s / N[r]), "N=%d s=%d", N[r], s);
        cr_assert_eq(gm_config_window_blocks(&c, first[r] - 1, N[r]), 1);
        cr_assert_eq(gm_config_window_blocks(&c, first[r], N[r]), 2);
        cr_assert_eq(gm_config_window_blocks(&c, N[r], N[r]), 14);
    }
}

// A window below one block would be 0 blocks, which the attention reads as "no window": refused.
Test(schedules, window_below_one_block_is_refused) {
    gm_config c;
    cr_assert_eq(gm_preset_model(&c, "softcap", "tiny"), 0, "%s", gm_error());  // attn_block 128
    cr_assert_eq(gm_config_check(&c), 0, "%s", gm_error());
    c.window_start_tokens = 100;
    cr_assert_eq(gm_config_check(&c), -1, "a 100-token window start in 128-token blocks was accepted");
    cr_assert_str_eq(gm_error(), "config: sliding window of 100 to 1856 tokens: at least one attn_block (128 tokens) at every "
                                 "step, or 0 for no window");
    c.window_start_tokens = 1856, c.window_end_tokens = 64;
    cr_assert_eq(gm_config_check(&c), -1, "a window shrinking to 64 tokens in 128-token blocks was accepted");
    c.window_end_tokens = 128;
    cr_assert_eq(gm_config_check(&c), 0, "%s", gm_error());
}
