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
// like an interrupted run, in a copy of the checkout ($T/c) with a dataset of two small shards of
// its own ($T/data: the stand-in's --help names their globs, as train's names the scale's). The
// stand-in answers --plan_memory=1 (repro.sh's check of every preset and flag) as train does: an
// error line for a preset other than adamw, softcap and normuon and for --bogus, else nothing.
#define STAND_IN \
    "set -e\n" \
    "mkdir \"$T/c\" \"$T/bin\" \"$T/data\"\n" \
    "printf 'abcd' > \"$T/data/train_000001.bin\"; printf 'wxyz' > \"$T/data/val_000000.bin\"\n" \
    "git -C \"$ROOT\" ls-files -z | (cd \"$ROOT\" && xargs -0 tar cf - --) | tar xf - -C \"$T/c\"\n" \
    "cat > \"$T/bin/train\" <<'EOS'\n" \
    "#!/bin/bash\n" \
    "for a; do case $a in --out_dir=*) d=${a#*=};; --preset=*) p=${a#*=};; --seed=*) s=${a#*=};; esac; done\n" \
    "case \" $* \" in *' --help '*)\n" \
    "  printf '  --train_data   glob of train shards (default %s)\\n  --val_data     glob of val shards (default %s)\\n' \\\n" \
    "    \"$T/data/train_*.bin\" \"$T/data/val_*.bin\"; exit 0;; esac\n" \
    "case \" $* \" in *' --plan_memory=1 '*)\n" \
    "  case \" adamw softcap normuon \" in *\" $p \"*) ;; *) echo \"train: error: --preset: unknown preset '$p'\" >&2; exit 1;; esac\n" \
    "  case \" $* \" in *' --bogus='*) echo 'train: error: --bogus: unknown flag (see --help)' >&2; exit 1;; esac; exit 0;; esac\n" \
    "echo \"$p $s ${*: -2}\" >> \"$T/calls\"\n" \
    "[ \"$(wc -l < \"$T/calls\")\" = \"${STOP_AT:-0}\" ] && { echo 'train: interrupted after 3 steps'; exit 130; }\n" \
    "mkdir -p \"$d\"\n" \
    "printf '{\"event\": \"start\", \"git_commit\": \"c0ffee\", \"config\": {\"preset\": \"%s\"}, \"hardware\": {\"cpu\": \"Test CPU\", \"cpu_threads\": 2, \"omp_threads\": 2}}\\n' \"$p\" > \"$d/log.jsonl\"\n" \
    "printf '{\"event\": \"val\", \"step\": 0, \"tokens\": 0, \"val_loss\": 8.3}\\n' >> \"$d/log.jsonl\"\n" \
    "printf '{\"event\": \"val\", \"step\": 6, \"tokens\": 6144, \"val_loss\": 7.%s}\\n' \"$s\" >> \"$d/log.jsonl\"\n" \
    "printf '{\"event\": \"end\", \"step\": 6, \"final_val_loss\": 7.%s, \"tokens_per_s\": 1000.0}\\n' \"$s\" >> \"$d/log.jsonl\"\n" \
    "echo 'train: done after 6 steps'\n" \
    "EOS\n" \
    "chmod +x \"$T/bin/train\"\n" \
    "cd \"$T/c\"\n" \
    "export T\n"

// Runs the script (after STAND_IN) in a fresh folder; *out and *err get what it printed.
static int run_repro_script(const char *script, char **dir, char **out, char **err) {
    if (getenv("GM_BUNDLE")) cr_skip_test("repro: the GPU-node bundle carries no git checkout");
    char prefix[9000];
    *dir = th_tmpdir();
    snprintf(prefix, sizeof prefix, "T='%s' ROOT='%s'", *dir, th_root_path(""));
    return th_run_script(*dir, prefix, script, out, err);
}

// The report goes to runs/repro-tiny/report/ (the committed sample in reports/repro/ is left alone)
// or to the REPORT folder; a repro interrupted at its third run continues, reusing the two runs
// that finished (same flags, same data, same train binary), and a third repro reuses all four. A
// variant LABEL=PRESET:FLAGS trains its preset with its flags into runs/.../LABEL; a bad variant
// stops the repro with one line before any run.
static const char *REPRO_SCRIPT =
    STAND_IN
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
    char *dir, *out, *err;
    int rc = run_repro_script(REPRO_SCRIPT, &dir, &out, &err);
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

// A variant's flags change the training only: a flag the repro sets for every run (--seed=5 once
// trained identical runs reported as seeds; --preset=adamw trained adamw under a softcap label;
// --scale=small wrote a tiny report from small runs), one that trains nothing (--help passed the
// check and ended in a bare make error; --out_dir= and --plan_memory=1 failed after the run), a
// piece of a value cut at its comma (once told "needs train flags after the colon") and a word
// that is a pattern (PRESETS='*' named the checkout's files) each stop the repro with one line
// naming the word and the flag, before any run and before the report's folder exists.
static const char *VARIANT_FLAGS_SCRIPT =
    STAND_IN
    "for bad in 'sv=softcap:--seed=5' 'pv=softcap:--preset=adamw' 'scv=softcap:--scale=small' 'v=softcap:--help' \\\n"
    "           'v=softcap:--out_dir=' 'v=softcap:--plan_memory=1' 'v=softcap:--val-tokens=4096' \\\n"
    "           'v=softcap:--normuon=1,--gram_restarts=2,4' 'v=softcap:-h' '*'; do\n"
    "  bash bench/repro.sh \"$T/bin\" \"adamw $bad\" 1 6 tiny '' \"$T/bad\" 2> \"$T/err\" && echo \"accepted $bad\"\n"
    "  echo \"bad $(wc -l < \"$T/err\") $(cat \"$T/err\")\"; test ! -e \"$T/bad\" || echo \"report folder made for $bad\"\n"
    "done\n"
    "test -e \"$T/calls\" && echo \"trained $(wc -l < \"$T/calls\")\"; true\n";

Test(repro_run, variant_flags_that_overrule_the_repro_are_refused, .timeout = 120) {
    char *dir, *out, *err;
    int rc = run_repro_script(VARIANT_FLAGS_SCRIPT, &dir, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    cr_expect(!strstr(out, "accepted") && !strstr(out, "report folder made") && !strstr(out, "trained"), "%s", out);
    const char *want[] = {
        "bad 1 repro: PRESETS: 'sv=softcap:--seed=5': --seed is not a variant's flag: SEEDS= sets the seeds\n",
        "bad 1 repro: PRESETS: 'pv=softcap:--preset=adamw': --preset is not a variant's flag: the variant's preset is the name before the colon\n",
        "bad 1 repro: PRESETS: 'scv=softcap:--scale=small': --scale is not a variant's flag: SCALE= sets it for every run\n",
        "bad 1 repro: PRESETS: 'v=softcap:--help': --help is not a variant's flag: it trains nothing\n",
        "bad 1 repro: PRESETS: 'v=softcap:--out_dir=': --out_dir is not a variant's flag: the repro places every run\n",
        "bad 1 repro: PRESETS: 'v=softcap:--plan_memory=1': --plan_memory is not a variant's flag: it trains nothing\n",
        "bad 1 repro: PRESETS: 'v=softcap:--val-tokens=4096': --val-tokens is not a variant's flag: every run is validated alike\n",
        "bad 1 repro: PRESETS: 'v=softcap:--normuon=1,--gram_restarts=2,4': '4' is not a train flag --flag=value (commas separate "
        "a variant's flags, so no value can hold one)\n",
        "bad 1 repro: PRESETS: 'v=softcap:-h': '-h' is not a train flag --flag=value\n",
        "bad 1 repro: PRESETS: '*': --preset: unknown preset '*'\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_expect(strstr(out, want[i]), "no '%s' in: %s", want[i], out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// A finished run is reused only on the same data: after its shards change (one rewritten with
// other bytes of the same size, then one added that sorts first) the repro trains it again and
// says why in one line; on unchanged data it is reused.
static const char *DATA_SCRIPT =
    STAND_IN
    "bash bench/repro.sh \"$T/bin\" adamw 1 6 tiny '' \"$T/rep\" > /dev/null\n"
    "echo '== same'; bash bench/repro.sh \"$T/bin\" adamw 1 6 tiny '' \"$T/rep\" | grep -E '^(repro|==)'\n"
    "printf 'wxyZ' > \"$T/data/val_000000.bin\"\n"
    "echo '== rewritten'; bash bench/repro.sh \"$T/bin\" adamw 1 6 tiny '' \"$T/rep\" | grep -E '^(repro:|== repro run)'\n"
    "printf 'ab' > \"$T/data/train_000000.bin\"\n"
    "echo '== added'; bash bench/repro.sh \"$T/bin\" adamw 1 6 tiny '' \"$T/rep\" | grep -E '^(repro:|== repro run)'\n"
    "echo '== again'; bash bench/repro.sh \"$T/bin\" adamw 1 6 tiny '' \"$T/rep\" | grep -E '^(repro:|== repro run)'\n"
    "echo \"calls $(wc -l < \"$T/calls\")\"\n";

Test(repro_run, a_run_on_other_data_is_trained_again, .timeout = 120) {
    char *dir, *out, *err;
    int rc = run_repro_script(DATA_SCRIPT, &dir, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    const char *same = strstr(out, "== same"), *rewritten = strstr(out, "== rewritten"), *added = strstr(out, "== added"),
               *again = strstr(out, "== again");
    cr_assert(same && rewritten && added && again, "%s%s", out, err);
    cr_expect(strstr(same, "adamw seed 1: reused") && strstr(same, "reused") < rewritten, "%s", out);
    const char *why = "repro: adamw seed 1 finished before with other data: the shards' fingerprint was ";
    cr_expect(strstr(rewritten, why) && strstr(rewritten, why) < added, "the run on the rewritten shard was not trained again: %s", out);
    cr_expect(strstr(added, why) && strstr(added, why) < again, "the run before the added shard was not trained again: %s", out);
    cr_expect(strstr(again, "adamw seed 1: reused"), "%s", out);
    cr_expect(strstr(out, "calls 3\n"), "%s", out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// The REPORT folder is checked before the first run: a path with a space and both quotes gets
// the whole report (once gnuplot's shell commands split it, after all the runs); a data folder, a
// new folder inside one, a folder holding other files (the checkout itself) and a file are refused
// with one line, creating nothing; a read-only folder (a read-only tmpfs, where this machine
// allows the mount) is refused, once a Python traceback after all the training.
static const char *REPORT_SCRIPT =
    STAND_IN
    "q=\"$T/a b'c\\\"d\"\n"
    "bash bench/repro.sh \"$T/bin\" adamw 2 6 tiny '' \"$q\" > /dev/null 2> \"$T/err\" && echo 'quoted ok'\n"
    "cat \"$T/err\"; head -c 8 \"$q/curves.png\" | od -An -tx1 | tr -d ' \\n'; echo; test -s \"$q/table.md\" && echo 'quoted table'\n"
    "for rep in \"$T/data\" \"$T/data/rep\" \"$T/c\" \"$T/c/README.md\"; do\n"
    "  bash bench/repro.sh \"$T/bin\" adamw 1 6 tiny '' \"$rep\" 2> \"$T/err\" && echo \"accepted $rep\"\n"
    "  echo \"refused $(wc -l < \"$T/err\") $(cat \"$T/err\")\"\n"
    "done\n"
    "echo \"data $(ls \"$T/data\" | tr '\\n' ' ')\"; cmp -s \"$ROOT/README.md\" README.md && echo 'checkout untouched'\n"
    "mkdir \"$T/ro\"\n"
    "for u in 'unshare --mount --propagation private' 'unshare --user --map-root-user --mount --propagation private'; do\n"
    "  $u true 2> /dev/null || continue\n"
    "  $u bash -c 'mount -t tmpfs -o ro none \"$T/ro\" && bash bench/repro.sh \"$T/bin\" adamw 1 6 tiny \"\" \"$T/ro\"' 2> \"$T/err\" && rc=0 || rc=$?\n"
    "  echo \"read-only $rc $(cat \"$T/err\")\"; break\n"
    "done\n"
    "echo \"calls $(wc -l < \"$T/calls\")\"\n";

Test(repro_run, the_report_folder_is_checked_before_any_run, .timeout = 120) {
    char *dir, *out, *err, want[9000];
    int rc = run_repro_script(REPORT_SCRIPT, &dir, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    cr_expect(strstr(out, "quoted ok\n89504e470d0a1a0a\nquoted table\n"), "the report in a folder named with a space and quotes: %s", out);
    snprintf(want, sizeof want,
             "refused 1 repro: REPORT: '%s/data' holds files but no report (no table.md): name a new or empty folder, or a report's\n"
             "refused 1 repro: REPORT: '%s/data/rep' is inside %s/data, the folder of the runs' shards\n"
             "refused 1 repro: REPORT: '%s/c' holds files but no report (no table.md)",
             dir, dir, dir, dir);
    cr_expect(strstr(out, want), "no '%s' in: %s", want, out);
    snprintf(want, sizeof want, "refused 1 repro: REPORT: '%s/c/README.md' exists and is not a folder\n", dir);
    cr_expect(strstr(out, want), "no '%s' in: %s", want, out);
    cr_expect(strstr(out, "data train_000001.bin val_000000.bin \n") && strstr(out, "checkout untouched"), "%s", out);
    const char *ro = strstr(out, "read-only ");
    if (ro) {
        snprintf(want, sizeof want, "read-only 2 repro: REPORT: '%s/ro': cannot write in it\n", dir);
        cr_expect(strstr(ro, want), "no '%s' in: %s", want, out);
    }
    cr_expect(strstr(out, "calls 2\n"), "a refused REPORT trained something (2 calls: the quoted folder's runs): %s", out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
    if (!ro) cr_log_warn("repro_run: the read-only REPORT case needs a tmpfs mount in a private mount namespace (unshare), not allowed here: not run");
}
