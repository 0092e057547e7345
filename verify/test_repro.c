// The repro report's Python (bench/repro_stats.py, bench/speedrun_logs.py, bench/repro_report.py)
// against known answers: each test runs one check of a script in verify/ (stats_check.py: closed
// forms, a published t table, R's published t.test outputs, numerical integration, the exhaustive
// bootstrap; speedrun_log_check.py: log excerpts written here and bad input; repro_report_check.py:
// the table end to end on made-up runs whose final losses are published data sets).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

#define STATS(name) \
    Test(repro_stats, name) { th_py_check("verify/stats_check.py", #name); }
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
    Test(speedrun_logs, name) { th_py_check("verify/speedrun_log_check.py", #name); }
LOGS(modded_nanogpt)
LOGS(llmc)
LOGS(overlay_spec)
LOGS(bad_input)

#define REPORT(name) \
    Test(repro_report, name, .timeout = 120) { th_py_check("verify/repro_report_check.py", #name); }
REPORT(welch_in_table)
REPORT(tokens_in_table)
REPORT(acceptance_at_full)
REPORT(records_rendered)
REPORT(overlay)
REPORT(bad_input)
