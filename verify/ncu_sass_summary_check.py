#!/usr/bin/env python3
"""Checks of bench/ncu_sass_summary.py on source pages written here in the shape ncu's CSV has (the
instructions and counts made up): the samples by kind and the top instructions, whatever the
columns' order, with ncu's lines before the header, thousands separators and gzip; and one error
line naming the file for each kind of bad input.

  ncu_sass_summary_check.py [NAME ...]   run the named checks (all by default)."""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pycheck  # noqa: E402

TOOL = os.path.join(HERE, "..", "bench", "ncu_sass_summary.py")

# 8 instructions, 10,000 samples: wgmma wait 5,000 (two), TMA wait 2,000, exp2 1,500, wgmma issue
# 1,000, shuffle 400, other 100, a branch none; the columns in another order than Address, Source,
# samples.
PAGE = '''==PROF== Connected to process 1
"Kernel Name","void attn_fwd_128<(int)1, (bool)1>(...)"
"Warp Stall Sampling (Not-issued Samples)","Source","Warp Stall Sampling (All Samples)","# Address","Instructions Executed"
"0","SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR8], R0 ;","2000","0x1800","10"
"0","HGMMA.64x64x16.F32.BF16 R88, gdesc[UR8], RZ, !UPT ;","1000","0x1980","10"
"0","WARPGROUP.DEPBAR.LE gsb0, 0x1 ;","3,000","0x1cc0","10"
"0","@!P1 BRA 0x79e0 ;","0","0x1810","10"
"0","MUFU.EX2 R90, R90 ;","1500","0x2eb0","10"
"0","@P0 WARPGROUP.DEPBAR.LE gsb0, 0x0 ;","2000","0x2640","10"
"0","SHFL.BFLY PT, R0, R1, 0x1, 0x1f ;","400","0x2a00","10"
"0","FMNMX R0, R0, R143, !PT ;","100","0x2b00","10"
'''


def run(*paths):
    p = subprocess.run([sys.executable, TOOL, *paths], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def in_dir(f):
    def wrapped():
        d = tempfile.mkdtemp()
        try:
            f(d)
        finally:
            shutil.rmtree(d)
    return wrapped


@in_dir
def check_kinds_and_top(d):
    path = os.path.join(d, "profile-sass-fwd.csv.gz")
    with gzip.open(path, "wt") as f:
        f.write(PAGE)
    rc, out, err = run(path)
    if rc != 0:
        raise AssertionError("exit %d: %s" % (rc, err))
    lines = out.splitlines()
    if lines[0] != "== %s: 8 instructions, 10000 samples" % path:
        raise AssertionError("first line: %r" % lines[0])
    want = ["     50.0%  wgmma wait", "     20.0%  mbarrier wait (TMA, stages)", "     15.0%  exp2 and other MUFU",
            "     10.0%  wgmma issue", "      4.0%  shuffle", "      1.0%  other"]
    got = lines[2:2 + len(want)]
    if got != want:
        raise AssertionError("kinds:\n%s" % "\n".join(got))
    top = lines[2 + len(want) + 1:]
    if len(top) != 8 or not top[0].startswith("     30.0%  0x1cc0  WARPGROUP.DEPBAR.LE") or "0x2b00" not in top[6]:
        raise AssertionError("top:\n%s" % "\n".join(top))


@in_dir
def check_bad_input(d):
    def page(name, text):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        return path
    good = page("good.csv", PAGE)
    cases = [
        (os.path.join(d, "missing.csv"), "missing.csv: cannot read it"),
        (page("notgz.csv.gz", PAGE), "notgz.csv.gz: cannot read it"),
        (page("noheader.csv", '"a","b"\n"1","2"\n'), "noheader.csv: no header naming Source"),
        (page("empty.csv", PAGE.split('"0","SYNCS')[0]), "empty.csv: a header but no instruction under it"),
        (page("nan.csv", PAGE.replace('"1500"', '"many"')), "nan.csv: 'many' in the Warp Stall Sampling"),
    ]
    for path, want in cases:
        rc, out, err = run(good, path)
        if rc != 1 or want not in err or len(err.splitlines()) != 1 or out:
            raise AssertionError("%s: exit %d, stdout %r, stderr %r (want one line with %r, nothing on stdout)"
                                 % (path, rc, out, err, want))


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
