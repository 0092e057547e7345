// Schedules as the records define them, all functions of the 0-based step s of N steps.
#ifndef GM_OPTIM_SCHEDULE_H
#define GM_OPTIM_SCHEDULE_H

typedef enum {
    // (s+1)/warmup while s < warmup; 1 until N - warmdown; then (N - s)/warmdown (records #2-#16)
    GM_LR_WARMUP_WARMDOWN,
    // tau = 1 - s/N: 1 while tau >= cooldown_frac, else w + (1 - w) floor with w = tau / cooldown_frac
    // (record #18: floor 0; record #43, 2025-11-10_CautiousWD: floor 0.1)
    GM_LR_COOLDOWN_FRAC,
} gm_lr_kind;

typedef struct {
    gm_lr_kind kind;
    int steps, warmup, warmdown;
    double cooldown_frac;
    double floor;  // cooldown-frac: the multiplier the cooldown decays to
} gm_lr_schedule;

// Multiplier of every optimizer's base learning rate at step s.
double gm_lr_mult(const gm_lr_schedule *sc, int s);

// Muon momentum of step s of N (0-based):
//   warmup (records #16, #18, #43): s < warmup: (1 - f) from + f to, f = s / warmup;
//   cooldown (record #43): s > N - cooldown: to - f (to - from), f = (s - (N - cooldown)) / cooldown,
//   so that it falls back towards `from` over the last steps; else `to`. warmup = cooldown = 0: `to`.
double gm_momentum_at(double from, double to, int warmup, int cooldown, int N, int s);

// The sliding-window schedule is the model's (gm_config_window_blocks in model/config.h).

#endif
