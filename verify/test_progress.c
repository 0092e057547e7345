// The progress line and its estimate of the time left (train/progress.h): the estimate counts
// the remaining steps at the measured step time and the remaining validations at the measured
// validation time. The first estimate once divided the elapsed time, step-0 validation included,
// by the steps run ("ETA 4 min 23 s" for a run that took 58 s).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "train/progress.h"

Test(progress, the_first_eta_does_not_count_the_step_0_validation_again) {
    gm_progress p;
    gm_progress_init(&p, 100, 50);
    gm_progress_val(&p, 10.0);  // step 0's validation: as long as 10 steps
    gm_progress_step(&p, 1.0);
    // 99 steps of 1 s, and the validations before steps 50 and 100 of 10 s each.
    cr_assert_float_eq(gm_progress_eta(&p, 1), 99.0 + 20.0, 1e-9);
    gm_progress_step(&p, 3.0);  // the mean step is 2 s now
    cr_assert_float_eq(gm_progress_eta(&p, 2), 98 * 2.0 + 20.0, 1e-9);
    cr_assert_float_eq(gm_progress_eta(&p, 50), 50 * 2.0 + 10.0, 1e-9, "the validation at 50 runs before step 50");
    cr_assert_float_eq(gm_progress_eta(&p, 100), 0.0, 1e-9);
}

Test(progress, validations_counted_at_their_steps_and_at_the_end) {
    gm_progress p;
    gm_progress_init(&p, 10, 4);  // validations before steps 0, 4, 8 and at the end, 10
    gm_progress_val(&p, 5.0);
    gm_progress_step(&p, 1.0);
    cr_assert_float_eq(gm_progress_eta(&p, 1), 9.0 + 3 * 5.0, 1e-9);
    cr_assert_float_eq(gm_progress_eta(&p, 9), 1.0 + 5.0, 1e-9);
    gm_progress_init(&p, 10, 0);  // only at the end, not yet timed: counted 0
    gm_progress_step(&p, 2.0);
    cr_assert_float_eq(gm_progress_eta(&p, 1), 18.0, 1e-9);
    gm_progress_val(&p, 7.0);
    cr_assert_float_eq(gm_progress_eta(&p, 1), 18.0 + 7.0, 1e-9);
}

Test(progress, durations_and_the_line) {
    char buf[64];
    const struct {
        double s;
        const char *want;
    } cases[] = {{0.4, "0 s"}, {42, "42 s"}, {59.6, "1 min 00 s"}, {185, "3 min 05 s"}, {7620, "2 h 07 min"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gm_format_duration(cases[i].s, buf, sizeof buf);
        cr_expect_str_eq(buf, cases[i].want, "%g s", cases[i].s);
    }
    gm_progress p;
    gm_progress_init(&p, 6, 3);
    gm_progress_val(&p, 4.0);
    gm_progress_step(&p, 2.0);
    gm_progress_step(&p, 2.0);
    gm_progress_step(&p, 2.0);
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    gm_progress_print(f, &p, 2, 4.12345, 0.5, 3, 2048.4, 10.2);
    fclose(f);
    // 3 steps of 2 s and the end's validation of 4 s left.
    cr_assert_str_eq(line, "step 3/6 [##########..........] | loss 4.1235 | lr x0.500 | window 3 | 2048 tok/s | 10 s elapsed, ETA 10 s\n");
    free(line);
}
