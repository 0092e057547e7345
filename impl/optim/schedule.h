// Schedules as the records define them, all functions of the 0-based step s of N steps.
#ifndef GM_OPTIM_SCHEDULE_H
#define GM_OPTIM_SCHEDULE_H

typedef enum {
    // (s+1)/warmup while s < warmup; 1 until N - warmdown; then (N - s)/warmdown (records #2-#16)
    GM_LR_WARMUP_WARMDOWN,
    // tau = 1 - s/N: 1 while tau >= cooldown_frac, else tau / cooldown_frac (record #18)
    GM_LR_COOLDOWN_FRAC,
} gm_lr_kind;

typedef struct {
    gm_lr_kind kind;
    int steps, warmup, warmdown;
    double cooldown_frac;
} gm_lr_schedule;

// Multiplier of every optimizer's base learning rate at step s.
double gm_lr_mult(const gm_lr_schedule *sc, int s);

// Muon momentum warmup (records #16, #18): mu_s = (1 - f) from + f to, f = min(s / steps, 1).
// steps = 0: constant `to`.
double gm_momentum_at(double from, double to, int warmup_steps, int s);

// The sliding-window schedule is the model's (gm_config_window_blocks in model/config.h).

#endif
