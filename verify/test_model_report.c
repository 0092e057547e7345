// bench/model_report: the backend it times is the one named (--backend), stated in its header; the
// six presets' full-scale parameter counts match the records'; bad flags are one line and exit 1.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

Test(model_report, times_the_backend_named_and_matches_the_records_counts, .timeout = 300) {
    char cmd[4400], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' --reps=1 --backend=cpu", th_bin_path("bench/model_report"));
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "(backend cpu-"), "%s", out);
    cr_expect_eq(count(out, " | yes | "), 6, "six presets whose full count is the record's: %s", out);
    cr_expect_null(strstr(out, " | NO | "), "%s", out);
    free(out), free(err);
}

Test(model_report, bad_flags_are_refused_with_one_line, .timeout = 60) {
    th_expect_refused("bench/model_report", "--backend=tpu", "--backend: unknown backend 'tpu'", 1);
    th_expect_refused("bench/model_report", "--reps=0", "--reps", 1);
    th_expect_refused("bench/model_report", "--device=-1", "--device", 1);
    th_expect_refused("bench/model_report", "--colour=red", "--colour: unknown flag", 1);
}
