#include "optim/schedule.h"


double gm_lr_mult(const gm_lr_schedule *sc, int s) {
    const int N = sc->steps;
    if (sc->kind == GM_LR_COOLDOWN_FRAC) {
        double tau = 1.0 - (double)s / N;
        if (tau >= sc->cooldown_frac) return 1.0;
        const double w = tau / sc->cooldown_frac;
        return w + (1.0 - w) * sc->floor;  // floor 0: w itself, bit for bit
    }
    if (s < sc->warmup) return (double)(s + 1) / sc->warmup;
    if (s < N - sc->warmdown) return 1.0;
    return (double)(N - s) / sc->warmdown;
}

double gm_momentum_at(double from, double to, int warmup, int cooldown, int N, int s) {
    if (s < warmup) {
        const double f = (double)s / warmup;
        return (1.0 - f) * from + f * to;
    }
    if (cooldown > 0 && s > N - cooldown) return to - (double)(s - (N - cooldown)) / cooldown * (to - from);
    return to;
}
