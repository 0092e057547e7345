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
REPORT(variants)

// make repro itself (bench/repro.sh) with a stand-in train that writes a small log and can stop
// like an interrupted run: the report goes to runs/repro-tiny/report/ (the committed sample in
// reports/repro/ is left alone) or to the REPORT folder; a repro interrupted at its third run
// continues, reusing the two runs that finished (same flags, same train binary), and a third repro
// reuses all four. A variant LABEL=PRESET:FLAGS trains its preset with its flags into runs/.../LABEL;
// a bad variant stops the repro with one line before any run. The stand-in answers --plan_memory=1
// (repro.sh's check of every preset and flag) as train does: an error line for a preset other than
// adamw, softcap and normuon and for --bogus, else nothing.
static const char *REPRO_SCRIPT =
    "set -e\n"
    "mkdir \"$T/c\" \"$T/bin\"\n"
    "git -C \"$ROOT\" ls-files -z | (cd \"$ROOT\" && xargs -0 tar cf - --) | tar xf - -C \"$T/c\"\n"
    "cat > \"$T/bin/train\" <<'EOS'\n"
    "#!/bin/bash\n"
    "for a; do case $a in --out_dir=*) d=${a#*=};; --preset=*) p=${a#*=};; --seed=*) s=${a#*=};; esac; done\n"
    "case \" $* \" in *' --plan_memory=1 '*)\n"
    "  case \" adamw softcap normuon \" in *\" $p \"*) ;; *) echo \"train: error: --preset: unknown preset '$p'\" >&2; exit 1;; esac\n"
    "  case \" $* \" in *' --bogus='*) echo 'train: error: --bogus: unknown flag (see --help)' >&2; exit 1;; esac; exit 0;; esac\n"
    "echo \"$p $s ${*: -2}\" >> \"$T/calls\"\n"
    "[ \"$(wc -l < \"$T/calls\")\" = \"${STOP_AT:-0}\" ] && { echo 'train: interrupted after 3 steps'; exit 130; }\n"
    "mkdir -p \"$d\"\n"
    "printf '{\"event\": \"start\", \"git_commit\": \"c0ffee\", \"config\": {\"preset\": \"%s\"}, \"hardware\": {\"cpu\": \"Test CPU\", \"cpu_threads\": 2, \"omp_threads\": 2}}\\n' \"$p\" > \"$d/log.jsonl\"\n"
    "printf '{\"event\": \"val\", \"step\": 0, \"tokens\": 0, \"val_loss\": 8.3}\\n' >> \"$d/log.jsonl\"\n"
    "printf '{\"event\": \"val\", \"step\": 6, \"tokens\": 6144, \"val_loss\": 7.%s}\\n' \"$s\" >> \"$d/log.jsonl\"\n"
    "printf '{\"event\": \"end\", \"step\": 6, \"final_val_loss\": 7.%s, \"tokens_per_s\": 1000.0}\\n' \"$s\" >> \"$d/log.jsonl\"\n"
    "echo 'train: done after 6 steps'\n"
    "EOS\n"
    "chmod +x \"$T/bin/train\"\n"
    "cd \"$T/c\"\n"
    "export T\n"
    "echo '== interrupted'; STOP_AT=3 bash bench/repro.sh \"$T/bin\" 'adamw softcap' 2 6 tiny '' && exit 7 || echo \"exit $?\"\n"
    "echo '== continued'; bash bench/repro.sh \"$T/bin\" 'adamw softcap' 2 6 tiny ''\n"
    "echo \"calls $(wc -l < \"$T/calls\")\"\n"
    "test -s runs/repro-tiny/report/table.md && echo 'report in runs'\n"
    "grep -q 'The 2 runs trained by this invocation took .*; the other 2 were reused' runs/repro-tiny/report/README.md && echo 'reuse stated'\n"
    "cmp -s reports/repro/table.md \"$ROOT/reports/repro/table.md\" && echo 'sample untouched'\n"
    "echo '== named'; bash bench/repro.sh \"$T/bin\" 'adamw softcap' 2 6 tiny '' \"$T/rep\"\n"
    "echo \"calls $(wc -l < \"$T/calls\")\"\n"
    "test -s \"$T/rep/table.md\" && test -s \"$T/rep/curves.png\" && echo 'report in REPORT'\n"
    "echo '== variant'; bash bench/repro.sh \"$T/bin\" 'adamw softcap+x=softcap:--normuon=1,--muon_wd=0.5' 1 6 tiny '' \"$T/var\"\n"
    "tail -n 1 \"$T/calls\"; test -s runs/repro-tiny/softcap+x/seed1/log.jsonl && echo 'variant in its folder'\n"
    "grep -q '^| softcap+x | softcap | `--normuon=1 --muon_wd=0.5` |' \"$T/var/table.md\" && echo 'variant in the table'\n"
    "for bad in 'adamw x=nope:--a=1' 'adamw x=softcap:--bogus=1' 'adamw x=softcap' 'adamw normuon=softcap:--a=1'; do\n"
    "  bash bench/repro.sh \"$T/bin\" \"$bad\" 1 6 tiny '' \"$T/bad\" 2> \"$T/err\" && exit 8\n"
    "  echo \"bad $(wc -l < \"$T/err\") $(cat \"$T/err\")\"; test ! -e \"$T/bad\" || exit 9\n"
    "done\n"
    "echo \"calls $(wc -l < \"$T/calls\")\"\n";

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

Test(repro_run, report_outside_the_samples_and_interrupted_repro_continues, .timeout = 240) {
    if (getenv("GM_BUNDLE")) cr_skip_test("repro: the GPU-node bundle carries no git checkout");
    char *dir = th_tmpdir(), prefix[9000], *out, *err;
    snprintf(prefix, sizeof prefix, "T='%s' ROOT='%s'", dir, th_root_path(""));
    int rc = th_run_script(dir, prefix, REPRO_SCRIPT, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    const char *cont = strstr(out, "== continued"), *named = strstr(out, "== named");
    cr_assert(cont && named, "%s%s", out, err);
    cr_expect_eq(count(out, "reused"), 2 + 4 + 1, "runs reused (2 after the interruption, then all 4, then adamw beside the variant): %s", out);
    cr_expect(strstr(cont, "calls 5\n"), "the continued repro trained more than the 2 unfinished runs: %s", out);
    cr_expect(strstr(named, "calls 5\n"), "the third repro trained again: %s", out);
    cr_expect(strstr(out, "report in runs"), "no report in runs/repro-tiny/report: %s%s", out, err);
    cr_expect(strstr(out, "reuse stated"), "the report's README counts the reused runs' time as this repro's: %s", out);
    cr_expect(strstr(out, "sample untouched"), "reports/repro/table.md was rewritten: %s", out);
    cr_expect(strstr(out, "report in REPORT"), "no report in the REPORT folder: %s%s", out, err);
    const char *var = strstr(out, "== variant");
    cr_assert(var, "%s%s", out, err);
    cr_expect(strstr(var, "\nsoftcap 1 --normuon=1 --muon_wd=0.5\n"), "the variant's flags did not reach train: %s", var);
    cr_expect(strstr(var, "variant in its folder") && strstr(var, "variant in the table"), "%s%s", var, err);
    const char *want[] = {"bad 1 repro: PRESETS: 'x=nope:--a=1': --preset: unknown preset 'nope'",
                          "bad 1 repro: PRESETS: 'x=softcap:--bogus=1': --bogus: unknown flag",
                          "bad 1 repro: PRESETS: variant 'x=softcap' needs train flags after the colon",
                          "bad 1 repro: PRESETS: variant label 'normuon' must be"};
    for (int i = 0; i < 4; i++) cr_expect(strstr(var, want[i]), "no '%s' in: %s", want[i], var);
    cr_expect(strstr(var, "calls 6\n"), "a bad variant trained something (6 calls: 5 before, adamw reused, the variant): %s", var);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
