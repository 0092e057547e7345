#include "train/progress.h"

#include <math.h>

void gm_progress_init(gm_progress *p, int steps, int val_every) { *p = (gm_progress){.steps = steps, .val_every = val_every}; }

void gm_progress_step(gm_progress *p, double seconds) { p->steps_run++, p->step_s += seconds; }

void gm_progress_val(gm_progress *p, double seconds) { p->vals_run++, p->val_s += seconds; }

// Validations run before steps from .. to (inclusive): every val_every steps, and at the end.
static int vals_between(const gm_progress *p, int from, int to) {
    if (from > to) return 0;
    int n = p->val_every > 0 ? to / p->val_every - (from - 1) / p->val_every : 0;
    if (to == p->steps && (p->val_every <= 0 || p->steps % p->val_every)) n++;
    return n;
}

double gm_progress_eta(const gm_progress *p, int next) {
    double step = p->steps_run ? p->step_s / p->steps_run : 0, val = p->vals_run ? p->val_s / p->vals_run : 0;
    return (p->steps - next) * step + vals_between(p, next + 1, p->steps) * val;
}

void gm_format_duration(double seconds, char *buf, size_t len) {
    long n = lround(seconds);
    if (n < 60) snprintf(buf, len, "%ld s", n);
    else if (n < 3600) snprintf(buf, len, "%ld min %02ld s", n / 60, n % 60);
    else snprintf(buf, len, "%ld h %02ld min", n / 3600, n / 60 % 60);
}

void gm_progress_print(FILE *f, const gm_progress *p, int s, double loss, double lr_mult, int window, double tok_per_s,
                       double elapsed) {
    char bar[21], el[32], eta[32];
    int filled = (int)(20.0 * (s + 1) / p->steps);
    for (int i = 0; i < 20; i++) bar[i] = i < filled ? '#' : '.';
    bar[20] = '\0';
    gm_format_duration(elapsed, el, sizeof el);
    gm_format_duration(gm_progress_eta(p, s + 1), eta, sizeof eta);
    fprintf(f, "step %d/%d [%s] | loss %.4f | lr x%.3f | window %d | %.0f tok/s | %s elapsed, ETA %s\n", s + 1, p->steps, bar, loss,
            lr_mult, window, tok_per_s, el, eta);
}
