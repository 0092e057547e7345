// The progress line a run prints, and its estimate of the time left. The estimate counts what is
// still to come at the rates measured so far: the remaining steps at the mean wall time of the
// steps run, plus the remaining validations at the mean time of the validations run. Elapsed time
// divided by steps would count the step-0 validation (often many steps long) as if every step
// took a share of it again.
#ifndef GM_TRAIN_PROGRESS_H
#define GM_TRAIN_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    int steps, val_every;  // the run's (val_every 0: validation at the end only)
    int steps_run;         // steps run by this process (a resumed run counts from its start)
    double step_s;         // their wall time
    int vals_run;
    double val_s;
} gm_progress;

void gm_progress_init(gm_progress *p, int steps, int val_every);
void gm_progress_step(gm_progress *p, double seconds);  // one step done, in `seconds` of wall time
void gm_progress_val(gm_progress *p, double seconds);   // one validation done
// Seconds left when steps next .. steps-1 and the validations before steps next+1 .. steps are
// still to run (a validation not yet timed counts 0).
double gm_progress_eta(const gm_progress *p, int next);
// "42 s", "3 min 05 s", "2 h 07 min".
void gm_format_duration(double seconds, char *buf, size_t len);
// "step 3/6 [##########..........] | loss 4.1234 | lr x1.000 | window 3 | 2048 tok/s | 5 s elapsed,
// ETA 8 s" after step s (0-based) ran.
void gm_progress_print(FILE *f, const gm_progress *p, int s, double loss, double lr_mult, int window, double tok_per_s,
                       double elapsed);

#endif
