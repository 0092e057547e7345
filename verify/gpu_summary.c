// The last line of every run of the suites (release, fp64 and sanitizer builds alike):
//   GPU tests: N ran (F failed), S skipped: <why>
// so that a run whose GPU tests did not run says so, and why: the build has no CUDA (and why:
// nvcc not found, or a build that is CPU only by design), no driver, no GPU, or none selected.
// Printed in the runner process after every test's own process has ended; tests left out by
// --filter (disabled) are not counted.
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/device.h"

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
    size_t ran = 0, failed = 0, skipped = 0;
    for (struct criterion_suite_stats *s = stats->suites; s; s = s->next) {
        if (strncmp(s->suite->name, "cuda_", 5) != 0) continue;
        for (struct criterion_test_stats *t = s->tests; t; t = t->next) {
            if (t->test->data && t->test->data->disabled) continue;
            if (t->test_status == CR_STATUS_SKIPPED) {
                skipped++;
            } else {
                ran++;
                failed += t->test_status == CR_STATUS_FAILED || t->crashed || t->timed_out;
            }
        }
    }
    char why[256] = "";
    if (skipped || !ran) {
        // A device present: the skipped tests give their own reasons, or none was selected.
        if (gm_cuda_device_count(why, sizeof why) > 0)
            snprintf(why, sizeof why, "%s", skipped ? "see the skipped tests" : "none selected (--filter)");
    }
    // A run sized down for a slow runtime says so: its tests did not check every case.
    const char *cap = getenv("GM_GPU_TEST_MAX_WORK");
    printf("GPU tests: %zu ran (%zu failed), %zu skipped%s%s%s%s%s\n", ran, failed, skipped, why[0] ? ": " : "", why,
           cap && *cap && ran ? "; cases above GM_GPU_TEST_MAX_WORK=" : "", cap && *cap && ran ? cap : "",
           cap && *cap && ran ? " left out (their info lines name them)" : "");
    fflush(stdout);
}
