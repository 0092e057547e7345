// The repro report's Python (bench/repro_stats.py, bench/speedrun_logs.py, bench/repro_report.py)
// against known answers: each test runs one check of a script in verify/ (stats_check.py: closed
// forms, a published t table, R's published t.test outputs, numerical integration, the exhaustive
// bootstrap; speedrun_log_check.py: log excerpts written here and bad input; repro_report_check.py:
// the table end to end on made-up runs whose final losses are published data sets).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

// Runs `python3 verify/<script> <check>`; the check prints "ok <check>" or its mismatch on stderr.
static void py_check(const char *script, const char *check) {
    char cmd[4400], want[128];
    snprintf(cmd, sizeof cmd, "python3 '%s' %s", th_root_path(script), check);
    char *out, *err;
    int rc = th_run(cmd, &out, &err);
    snprintf(want, sizeof want, "ok %s\n", check);
    cr_expect_eq(rc, 0, "%s %s failed (exit %d): %s", script, check, rc, err);
    cr_expect_str_eq(out, want, "%s %s: %s", script, check, err);
    free(out);
    free(err);
}

#define STATS(name) \
    Test(repro_stats, name) { py_check("verify/stats_check.py", #name); }
STATS(betainc_closed_forms)
STATS(t_cdf_closed_forms)
STATS(t_cdf_integration)
STATS(t_table)
STATS(welch_published)
STATS(one_sample_published)
STATS(mean_sd)
STATS(tokens_to_reach)
STATS(quantile)
STATS(bootstrap_exhaustive)
STATS(bootstrap_deterministic)

#define LOGS(name) \
    Test(speedrun_logs, name) { py_check("verify/speedrun_log_check.py", #name); }
LOGS(modded_nanogpt)
LOGS(llmc)
LOGS(overlay_spec)
LOGS(bad_input)

#define REPORT(name) \
    Test(repro_report, name, .timeout = 120) { py_check("verify/repro_report_check.py", #name); }
REPORT(welch_in_table)
REPORT(tokens_in_table)
REPORT(acceptance_at_full)
REPORT(records_rendered)
REPORT(overlay)
REPORT(bad_input)
