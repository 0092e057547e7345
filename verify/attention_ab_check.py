#!/usr/bin/env python3
"""Checks of bench/attention_ab.py: its table on bench CSVs written by hand (ratios, the naive
kernels' control range, the forms one side lacks, both commits named from the .md beside each;
with --again, this build's two runs averaged and their ratio as a second control);
a row whose admitted pairs differ refused; and one error line, exit 2, nothing written, for a bad
flag, a missing file or a malformed CSV.

  attention_ab_check.py [NAME ...]   run the named checks (all by default)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pycheck  # noqa: E402

TOOL = os.path.join(HERE, "..", "bench", "attention_ab.py")
HEAD = "impl,pass,B,T,NH,HD,block,window,docs,pairs,flops,median_ms,min_ms,max_ms,tflops,out_rel_diff\n"


def bench_files(folder, name, commit, rows):
    """name.csv (rows: (impl, pass, T, pairs, median ms)) and name.md as bench/attention_gpu writes them."""
    with open(os.path.join(folder, name + ".csv"), "w") as f:
        f.write(HEAD)
        for impl, pas, T, pairs, ms in rows:
            f.write(f"{impl},{pas},1,{T},6,128,128,14,1,{pairs},1e9,{ms},{ms},{ms},1.0,0.002\n")
    with open(os.path.join(folder, name + ".md"), "w") as f:
        f.write(f"# GPU attention\n\n- Machine: `stand-in`.\n- Commit: `{commit}`. Command: `attention_gpu`.\n")
    return os.path.join(folder, name + ".csv")


def run(*args):
    p = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


# The baseline's wgmma forward took 2.0 and 4.0 ms at T 1024 and 2048, this build's 1.6 and 2.5:
# base / ours 1.250 and 1.600; the naive kernels 10.0 -> 10.1 and 20.0 -> 19.9: control 0.990 to
# 1.005; wgmma1 (this build only) and mma32 (the baseline only) listed, not compared.
def check_by_hand():
    with tempfile.TemporaryDirectory() as d:
        ours = bench_files(d, "ours", "new", [("wgmma", "fwd", 1024, 100, 1.6), ("wgmma", "fwd", 2048, 300, 2.5),
                                              ("naive", "fwd", 1024, 100, 10.1), ("naive", "fwd", 2048, 300, 19.9),
                                              ("wgmma1", "bwd", 1024, 100, 3.0)])
        base = bench_files(d, "base", "old", [("wgmma", "fwd", 1024, 100, 2.0), ("wgmma", "fwd", 2048, 300, 4.0),
                                              ("naive", "fwd", 1024, 100, 10.0), ("naive", "fwd", 2048, 300, 20.0),
                                              ("mma32", "fwd", 1024, 100, 1.0)])
        out = os.path.join(d, "ab.md")
        rc, stdout, err = run(f"--ours={ours}", f"--baseline={base}", f"--out={out}")
        if rc != 0:
            raise AssertionError(f"exit {rc}: {err}")
        text = open(out).read()
        for want in ["- This build: `new`.", "- Baseline: `old`.", "- Machine: `stand-in`.",
                     "base / ours 0.990 to 1.005 over 2 rows.", "## wgmma fwd\n",
                     "| 1024 | 2 | 1.6 | 1.250 |\n| 2048 | 4 | 2.5 | 1.600 |\n",
                     "Not compared (one side only): mma32 fwd (the baseline), wgmma1 bwd (this build)."]:
            if want not in text:
                raise AssertionError(f"no {want!r} in:\n{text}")
        if "## naive" in text or stdout.strip() != out:
            raise AssertionError(f"the naive kernels are the control, not a table; stdout the file:\n{stdout}{text}")


# --again: this build's wgmma forward 1.5 then 1.7 ms at T 1024 (geometric mean 1.597, against the
# baseline's 2.0: 1.252; 1st / 2nd 0.882), 2.5 twice at 2048; the naive kernels the same twice:
# this build's control 0.882 to 1.000 over 4 rows. An --again without one of the first run's rows,
# or with other pairs, is refused (one line naming it, nothing written).
def check_again():
    with tempfile.TemporaryDirectory() as d:
        first = [("wgmma", "fwd", 1024, 100, 1.5), ("wgmma", "fwd", 2048, 300, 2.5),
                 ("naive", "fwd", 1024, 100, 10.1), ("naive", "fwd", 2048, 300, 19.9)]
        ours = bench_files(d, "ours", "new", first)
        again = bench_files(d, "again", "new", [("wgmma", "fwd", 1024, 100, 1.7)] + first[1:])
        base = bench_files(d, "base", "old", [("wgmma", "fwd", 1024, 100, 2.0), ("wgmma", "fwd", 2048, 300, 4.0),
                                              ("naive", "fwd", 1024, 100, 10.0), ("naive", "fwd", 2048, 300, 20.0)])
        out = os.path.join(d, "ab.md")
        rc, stdout, err = run(f"--ours={ours}", f"--baseline={base}", f"--again={again}", f"--out={out}")
        if rc != 0:
            raise AssertionError(f"exit {rc}: {err}")
        text = open(out).read()
        for want in ["1st / 2nd 0.882 to 1.000 over 4 rows.", "| T | baseline ms | ours ms | base / ours | 1st / 2nd |",
                     "| 1024 | 2 | 1.597 | 1.252 | 0.882 |\n| 2048 | 4 | 2.5 | 1.600 | 1.000 |\n"]:
            if want not in text:
                raise AssertionError(f"no {want!r} in:\n{text}")
        os.remove(out)
        short = bench_files(d, "short", "new", first[1:])
        other = bench_files(d, "other", "new", [("wgmma", "fwd", 1024, 101, 1.5)] + first[1:])
        for bad in (short, other):
            rc, stdout, err = run(f"--ours={ours}", f"--baseline={base}", f"--again={bad}", f"--out={out}")
            if rc != 2 or stdout or len(err.splitlines()) != 1 or bad not in err or os.path.exists(out):
                raise AssertionError(f"{bad}: want exit 2, one line naming it, nothing written; got {rc}: {err!r}")


def check_other_masks_refused():
    with tempfile.TemporaryDirectory() as d:
        ours = bench_files(d, "ours", "new", [("wgmma", "fwd", 1024, 100, 1.6)])
        base = bench_files(d, "base", "old", [("wgmma", "fwd", 1024, 101, 2.0)])
        out = os.path.join(d, "ab.md")
        rc, stdout, err = run(f"--ours={ours}", f"--baseline={base}", f"--out={out}")
        if rc != 2 or stdout or len(err.splitlines()) != 1 or "not the same mask" not in err or os.path.exists(out):
            raise AssertionError(f"want exit 2, one line, no file; got {rc}: {err!r}")


def check_bad_input():
    with tempfile.TemporaryDirectory() as d:
        good = bench_files(d, "good", "x", [("wgmma", "fwd", 1024, 100, 1.0)])
        bad = os.path.join(d, "bad.csv")
        with open(bad, "w") as f:
            f.write(HEAD + "wgmma,fwd,1,x,6,128,128,14,1,100,1e9,1,1,1,1,0\n")
        out = os.path.join(d, "ab.md")
        cases = [([f"--ours={good}", f"--baseline={good}", "--bogus=1"], "--bogus=1"),
                 ([f"--ours={good}", f"--out={out}"], "--baseline="),
                 ([f"--ours={good}", f"--baseline={d}/none.csv", f"--out={out}"], "none.csv"),
                 ([f"--ours={bad}", f"--baseline={good}", f"--out={out}"], "bad.csv: line 2"),
                 ([f"--ours={good}", f"--baseline={good}", f"--out={d}/no/ab.md"], "no/ab.md")]
        for args, name in cases:
            rc, stdout, err = run(*args)
            if rc != 2 or stdout or len(err.splitlines()) != 1 or name not in err or os.path.exists(out):
                raise AssertionError(f"{args}: want exit 2, one line naming {name}, nothing written; got {rc}: {err!r}")


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
