#include "optim/schedule.h"

#include <math.h>

double gm_lr_mult(const gm_lr_schedule *sc, int s) {
    const int N = sc->steps;
    if (sc->kind == GM_LR_COOLDOWN_FRAC) {
        double tau = 1.0 - (double)s / N;
        return tau >= sc->cooldown_frac ? 1.0 : tau / sc->cooldown_frac;
    }
    if (s < sc->warmup) return (double)(s + 1) / sc->warmup;
    if (s < N - sc->warmdown) return 1.0;
    return (double)(N - s) / sc->warmdown;
}

double gm_momentum_at(double from, double to, int warmup_steps, int s) {
    if (warmup_steps <= 0) return to;
    double f = fmin((double)s / warmup_steps, 1.0);
    return (1.0 - f) * from + f * to;
}
