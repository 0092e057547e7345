#!/usr/bin/env python3
"""End-to-end checks of bench/repro_report.py on runs made up here, whose final losses are published
data sets with published test results, so the figures in table.md have known answers:

- adamw and muon-v1 finish at 5 + (Student's sleep data, drug 2 and drug 1) / 10: Welch's t-test is
  unchanged by the shift and scale, so "muon-v1 lower" has R's p = 0.07939 / 2 (not significant at
  0.01, significant at 0.05);
- muon-v2 finishes at 3.28 + (the paired differences) / 100: the acceptance test "mean < 3.28" is
  R's paired test, t = -4.0621, p = 0.002833 / 2;
- the mean curves cross adamw's final loss at token counts computed by hand;
- the published records' table gives record #18's acceptance p as its README does (p=0.0001);
- an overlaid modded-nanogpt log lands in overlay.dat at step x tokens per step;
- a bad overlay stops the report with one line naming the file, before anything is written;
- variants (LABEL=PRESET:FLAGS) without adamw: the first preset is the baseline, each variant is
  compared with its preset both ways (lower shown, higher shown, neither), on the same data sets.

  repro_report_check.py [NAME ...]   run the named checks (all by default)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pycheck  # noqa: E402
from pycheck import near  # noqa: E402
from stats_check import SLEEP1, SLEEP2  # noqa: E402

REPORT = os.path.join(HERE, "..", "bench", "repro_report.py")
TOKENS = [0, 1000, 2000, 3000, 4000]


def write_run(root, preset, seed, curve):
    d = os.path.join(root, preset, "seed%d" % seed)
    os.makedirs(d)
    with open(os.path.join(d, "log.jsonl"), "w") as f:
        f.write(json.dumps({"event": "start", "git_commit": "c0ffee", "config": {"preset": preset},
                            "hardware": {"cpu": "Test CPU", "cpu_threads": 2, "omp_threads": 2}}) + "\n")
        for i, (tok, loss) in enumerate(zip(TOKENS, curve)):
            f.write(json.dumps({"event": "val", "step": i * 10, "tokens": tok, "val_loss": loss}) + "\n")
        f.write(json.dumps({"event": "end", "step": 40, "final_val_loss": curve[-1], "tokens_per_s": 1000.0 + seed}) + "\n")


def make_runs(root):
    for i, (a, b) in enumerate(zip(SLEEP2, SLEEP1)):
        write_run(root, "adamw", i + 1, [9.0, 7.0, 6.0, 5.6, 5.0 + a / 10])
        write_run(root, "muon-v1", i + 1, [9.0, 6.5, 5.8, 5.4, 5.0 + b / 10])
        write_run(root, "muon-v2", i + 1, [9.0, 6.0, 5.0, 4.0, 3.28 + (b - a) / 100])


def report(root, out, *extra):
    cmd = [sys.executable, REPORT, "--runs", root, "--out", out, "--presets", "adamw muon-v1 muon-v2",
           "--resamples", "2000"] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True)


def table_of(root, out, *extra):
    """Run the report; its table.md (fails the check when the report fails)."""
    res = report(root, out, *extra)
    if res.returncode:
        raise AssertionError(res.stderr)
    with open(os.path.join(out, "table.md")) as f:
        return f.read()


class Runs:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="gm_reportcheck_")
        self.runs = os.path.join(self.dir, "runs")
        make_runs(self.runs)
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir)


def row(table, first):
    for line in table.splitlines():
        if line.startswith("| %s |" % first):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError("no row '%s' in:\n%s" % (first, table))


def section(table, title):
    start = table.index("## " + title)
    end = table.find("\n## ", start + 1)
    return table[start:end if end > 0 else len(table)]


def p_of(cell):
    m = re.search(r"p = ([0-9.e-]+)", cell)
    if not m:
        raise AssertionError("no p in '%s'" % cell)
    return float(m.group(1))


def check_welch_in_table():
    with Runs() as r:
        out = os.path.join(r.dir, "rep")
        table = table_of(r.runs, out, "--scale", "tiny")
        cells = row(section(table, "Final validation loss"), "muon-v1")
        if cells[1] != "10":
            raise AssertionError("seed count %s, want 10" % cells[1])
        # Both comparisons of muon-v1 are with adamw: p = 0.07939 / 2, printed to three decimals.
        for c in cells[4:6]:
            near("muon-v1 vs adamw p", p_of(c), 0.0397, 0.0005)
            if "(n.s.)" not in c:
                raise AssertionError("p = 0.040 must be marked not significant at 0.01: %s" % c)
        if "muon-v1 is not shown lower than adamw at α = 0.01 (one-sided Welch t = -1.86, df = 17.8" not in table:
            raise AssertionError("missing note for muon-v1 vs adamw:\n%s" % table)
        table = table_of(r.runs, out, "--scale", "tiny", "--alpha", "0.05")
        if "(n.s.)" in row(section(table, "Final validation loss"), "muon-v1")[4]:
            raise AssertionError("p = 0.040 is significant at 0.05")
        if "## Not significant" in table and "muon-v1 is not shown lower than adamw" in table:
            raise AssertionError("a note for a significant difference")


def check_tokens_in_table():
    with Runs() as r:
        table = section(table_of(r.runs, os.path.join(r.dir, "rep"), "--scale", "tiny"), "Tokens to reach")
        # Target 5 + mean(SLEEP2)/10 = 5.233. muon-v2's mean curve falls from 6.0 at 1000 to 5.0 at
        # 2000 tokens: it crosses at 1000 + 1000 (6 - 5.233) / (6 - 5) = 1767; muon-v1's from 5.4 at
        # 3000 to 5 + mean(SLEEP1) / 10 = 5.075 at 4000: 3000 + 1000 (5.4 - 5.233) / 0.325 = 3513.8;
        # adamw reaches it at its end.
        if "| tokens to 5.2330 |" not in table:
            raise AssertionError("target 5.2330 not in the header:\n%s" % table)
        for preset, want in (("adamw", 4000), ("muon-v1", 3514), ("muon-v2", 1767)):
            got = int(row(table, preset)[1])
            if abs(got - want) > 1:
                raise AssertionError("%s: tokens %d, want %d" % (preset, got, want))
        # muon-v2 always needs fewer tokens than muon-v1: bootstrap p below 1 / resamples; muon-v1 fails
        # to reach the target in the draws where adamw's resampled final loss is low.
        if row(table, "muon-v2")[4] != "< 0.0005":
            raise AssertionError("muon-v2 vs muon-v1: %s" % row(table, "muon-v2")[4])
        if "adamw > muon-v1: not separable (p = " not in table or "muon-v1 > muon-v2: shown, p < 0.0005." not in table:
            raise AssertionError("the ordering line:\n%s" % table)
        # muon-v2 needs 2000 - 100 m tokens, m the resampled mean of SLEEP2: its 99% interval is
        # about 1767 -+ 100 z_0.995 sd(m), sd(m) = the population sd of SLEEP2 / sqrt(10) (normal
        # approximation of the bootstrap distribution, to within 50 tokens).
        lo, hi = [int(x) for x in row(table, "muon-v2")[2].split(" – ")]
        m = sum(SLEEP2) / 10
        half = 100 * 2.5758 * (sum((x - m) ** 2 for x in SLEEP2) / 10) ** 0.5 / 10 ** 0.5
        near("muon-v2 interval low", lo, 1767 - half, 50)
        near("muon-v2 interval high", hi, 1767 + half, 50)


def check_acceptance_at_full():
    with Runs() as r:
        table = None
        for scale in ("small", "full"):
            table = table_of(r.runs, os.path.join(r.dir, "rep"), "--scale", scale)
            if (scale == "full") != ("## The speedrun's acceptance test" in table):
                raise AssertionError("acceptance test at scale %s: %s" % (scale, scale == "full"))
        cells = row(section(table, "The speedrun's acceptance test"), "muon-v2")
        if cells[1] != "10" or cells[4] != "-4.06":
            raise AssertionError("muon-v2 acceptance row %s" % cells)
        near("acceptance p", float(cells[5]), 0.0014165, 0.0005)


def check_records_rendered():
    with Runs() as r:
        table = section(table_of(r.runs, os.path.join(r.dir, "rep"), "--scale", "tiny"), "The published records")
        softcap = row(table, "softcap")
        # Record #18's README: 80 runs, scipy's one-sided p for mean < 3.28 printed as p=0.0001.
        if softcap[1] != "#18" or softcap[7] != "80" or round(float(softcap[9]), 4) != 0.0001:
            raise AssertionError("softcap record row %s" % softcap)
        # Record #43's README: 10 runs, mean 3.2784, sd 0.0013, scipy's one-sided p printed as p=0.0018
        # (0.00177 from the csv's mean and sd; the table shows p >= 0.001 with 3 decimals).
        normuon = row(table, "normuon")
        if normuon[1] != "#43" or normuon[7] != "10" or normuon[9] != "%.3f" % 0.0018:
            raise AssertionError("normuon record row %s" % normuon)
        if row(table, "muon-v2")[7] != "1" or row(table, "muon-v2")[9] != "-":
            raise AssertionError("a single published run has no spread or p: %s" % row(table, "muon-v2"))


MODDED_EXCERPT = """step:0/40 val_loss:9.5000 train_time:0ms step_avg:nanms
step:1/40 train_time:100ms step_avg:nanms
step:20/40 val_loss:5.9000 train_time:2000ms step_avg:100.00ms
step:40/40 val_loss:5.1000 train_time:4000ms step_avg:100.00ms
"""


def check_overlay():
    with Runs() as r:
        log = os.path.join(r.dir, "torch.txt")
        with open(log, "w") as f:
            f.write(MODDED_EXCERPT)
        out = os.path.join(r.dir, "rep")
        table = table_of(r.runs, out, "--scale", "tiny", "--overlay", "pytorch=%s@100" % log)
        dat = [line for line in open(os.path.join(out, "overlay.dat")) if line[0].isdigit()]
        if dat != ["0 9.500000\n", "2000 5.900000\n", "4000 5.100000\n"]:
            raise AssertionError("overlay.dat %s" % dat)
        if open(os.path.join(out, "overlay.labels")).read() != "pytorch\n":
            raise AssertionError("overlay.labels")
        cells = row(section(table, "Overlaid PyTorch logs"), "pytorch")
        # Crosses 5.233 between 2000 (5.9) and 4000 (5.1): 2000 + 2000 (5.9 - 5.233) / 0.8 = 3667.5.
        if cells[1] != "modded-nanogpt" or cells[5] != "40/40" or cells[7] != "5.1000" or cells[8] != "4.0 s" \
                or abs(float(cells[9]) - 3667.5) > 1:
            raise AssertionError("overlay row %s" % cells)
        # Without --overlay, a later report removes the stale overlay files.
        report(r.runs, out, "--scale", "tiny")
        if os.path.exists(os.path.join(out, "overlay.dat")):
            raise AssertionError("stale overlay.dat kept")


VARIANTS = "softcap normuon softcap+lower=softcap:--a=1,--b=2 softcap+higher=softcap:--c=3"


def check_variants():
    """softcap ends at 5 + SLEEP2 / 10 and normuon at 5 + SLEEP1 / 10 (muon-v1 vs adamw above: lower at
    p = 0.0397, so neither direction at 0.01); softcap+lower and softcap+higher end 1.158 below and 0.842
    above softcap's mean, far outside its spread (Welch t = -13.6 and 9.92, df 17.8)."""
    with Runs() as r:
        runs = os.path.join(r.dir, "variants")
        for i, (a, b) in enumerate(zip(SLEEP2, SLEEP1)):
            write_run(runs, "softcap", i + 1, [9.0, 7.0, 6.0, 5.6, 5.0 + a / 10])
            write_run(runs, "normuon", i + 1, [9.0, 6.5, 5.8, 5.4, 5.0 + b / 10])
            write_run(runs, "softcap+lower", i + 1, [9.0, 6.0, 5.0, 4.5, 4.0 + b / 10])
            write_run(runs, "softcap+higher", i + 1, [9.0, 7.5, 6.5, 6.2, 6.0 + b / 10])
        out = os.path.join(r.dir, "rep")
        res = subprocess.run([sys.executable, REPORT, "--runs", runs, "--out", out, "--presets", VARIANTS, "--resamples", "2000",
                              "--scale", "small"], capture_output=True, text=True)
        if res.returncode:
            raise AssertionError(res.stderr)
        table = open(os.path.join(out, "table.md")).read()
        if row(table, "softcap+lower")[1:] != ["softcap", "`--a=1 --b=2`"] or row(table, "softcap+higher")[2] != "`--c=3`":
            raise AssertionError("the variants' flags:\n%s" % table)
        loss = section(table, "Final validation loss")
        if "| vs softcap: Δ, p |" not in loss:
            raise AssertionError("softcap (the first preset) is not the baseline:\n%s" % loss)
        near("normuon vs softcap p", p_of(row(loss, "normuon")[4]), 0.0397, 0.0005)
        if "| tokens to 5.2330 |" not in section(table, "Tokens to reach softcap's final loss"):
            raise AssertionError("target is not softcap's final loss:\n%s" % table)
        sep = section(table, "Separable from the one it changes?")
        want = {"normuon": ("softcap", "-0.1580", "not separable (p = 0.040 and 0.960)", "not separable"),
                "softcap+lower": ("softcap", "-1.1580", "lower (p = ", "fewer tokens (p < 0.0005)"),
                "softcap+higher": ("softcap", "+0.8420", "**higher** (p = ", "**more tokens** (p < 0.0005)")}
        for label, (q, delta, loss_v, tok_v) in want.items():
            cells = row(sep, label)
            if cells[1] != q or cells[3] != delta or not cells[4].startswith(loss_v) or not cells[5].startswith(tok_v):
                raise AssertionError("%s: %s" % (label, cells))
        if "softcap > normuon: not separable" not in table or "softcap > softcap+" in table:
            raise AssertionError("the records' ordering names a variant, or lacks normuon:\n%s" % table)
        bad = subprocess.run([sys.executable, REPORT, "--runs", runs, "--out", out + "2", "--presets", "softcap x=softcap",
                              "--scale", "small"], capture_output=True, text=True)
        if bad.returncode == 0 or "--presets: 'x=softcap' is not LABEL=PRESET:FLAG" not in bad.stderr or os.path.exists(out + "2"):
            raise AssertionError("a variant without flags: rc %d, %r" % (bad.returncode, bad.stderr))


def check_bad_input():
    with Runs() as r:
        out = os.path.join(r.dir, "rep")
        bad = os.path.join(r.dir, "empty.txt")
        open(bad, "w").close()
        cases = [(["--overlay", "x=%s" % bad], bad), (["--overlay", "x=%s" % os.path.join(r.dir, "nope.txt")], "nope.txt"),
                 (["--overlay", "noequals"], "--overlay"), (["--alpha", "0.7"], "--alpha")]
        for extra, name in cases:
            res = report(r.runs, out, "--scale", "tiny", *extra)
            lines = res.stderr.strip().splitlines()
            if res.returncode == 0 or len(lines) != 1 or name not in lines[0]:
                raise AssertionError("%s: rc %d, stderr %r" % (extra, res.returncode, res.stderr))
            if os.path.exists(out):
                raise AssertionError("%s: the report folder was written" % extra)
        os.remove(os.path.join(r.runs, "muon-v1", "seed3", "log.jsonl"))
        with open(os.path.join(r.runs, "muon-v1", "seed3", "log.jsonl"), "w") as f:
            f.write('{"event": "start"}\n')
        res = report(r.runs, out, "--scale", "tiny")
        if res.returncode == 0 or "seed3/log.jsonl: run did not finish" not in res.stderr or os.path.exists(out):
            raise AssertionError("unfinished run: rc %d, %r" % (res.returncode, res.stderr))


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
