#!/usr/bin/env python3
"""Checks of bench/speedrun_logs.py on log excerpts written here in the two formats (the numbers are
made up; no real log's text): the validation points read, the lines skipped, and one clear error
naming the file for every kind of bad input.

  speedrun_log_check.py [NAME ...]   run the named checks (all by default)."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pycheck  # noqa: E402
import speedrun_logs as sl  # noqa: E402

# A modded-nanogpt log: the training script printed first (its format strings must not be read as
# data), a separator, then validation lines among training lines of both generations (with and
# without train_loss), step_avg "nan" on the first lines, and a trailer.
MODDED = """import os
import torch
def log(step, val_loss, t):
    print0(f'step:{step}/{train_steps} val_loss:{val_loss:.4f} train_time:{t:.0f}ms step_avg:{t/(step+1):.2f}ms')
=====================================================================================
Running pytorch 2.x
step:0/300 val_loss:10.8123 train_time:0ms step_avg:nanms
step:1/300 train_time:2211ms step_avg:nanms
step:2/300 train_loss:9.8765 train_time:2402ms step_avg:nanms
step:100/300 val_loss:5.4321 train_time:21500ms step_avg:215.00ms
step:101/300 train_time:21700ms step_avg:214.85ms
step:200/300 val_loss:4.2000 train_time:43010ms step_avg:215.05ms
step:300/300 val_loss:3.9876 train_time:64555.5ms step_avg:215.18ms
peak memory consumption: 12345 MiB
"""

# An llm.c log: validation (tel), training (trl) and evaluation lines interleaved.
LLMC = """s:0 tel:10.9750
s:0 trl:10.9700
s:1 trl:10.8000
s:64 trl:6.9000
s:64 tel:6.8500
s:64 eval:0.2600
s:128 tel:5.5000
"""


class Folder:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="gm_logcheck_")
        return self

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def __exit__(self, *exc):
        shutil.rmtree(self.dir)


def check_modded_nanogpt():
    with Folder() as d:
        log = sl.read_log(d.write("run.txt", MODDED), tokens_per_step=2048)
    want = [(0, 0, 10.8123, 0.0), (100, 204800, 5.4321, 21500.0), (200, 409600, 4.2, 43010.0),
            (300, 614400, 3.9876, 64555.5)]
    if log["format"] != "modded-nanogpt" or log["points"] != want or log["total_steps"] != 300 or log["last_step"] != 300:
        raise AssertionError("read %s" % log)


def check_llmc():
    with Folder() as d:
        log = sl.read_log(d.write("main.log", LLMC))
    tps = sl.RECORD_TOKENS_PER_STEP
    want = [(0, 0, 10.975, None), (64, 64 * tps, 6.85, None), (128, 128 * tps, 5.5, None)]
    if log["format"] != "llm.c" or log["points"] != want or log["total_steps"] is not None:
        raise AssertionError("read %s" % log)
    if tps != 2 ** 19:
        raise AssertionError("the records' tokens per step is 2^19, not %d" % tps)


def check_overlay_spec():
    cases = {"torch=runs/a.txt": ("torch", "runs/a.txt", 2 ** 19), "mine=/x/y@z/log.txt@4096": ("mine", "/x/y@z/log.txt", 4096)}
    for spec, want in cases.items():
        if sl.parse_overlay(spec) != want:
            raise AssertionError("%s -> %s, want %s" % (spec, sl.parse_overlay(spec), want))
    for spec in ("nolabel", "=a.txt", "x=", "x=a.txt@", "x=a.txt@0", "x=a.txt@12k"):
        try:
            sl.parse_overlay(spec)
        except sl.LogError as e:
            if "--overlay" not in str(e) or spec not in str(e):
                raise AssertionError("%s: message does not name the flag and the value: %s" % (spec, e))
            continue
        raise AssertionError("%s: accepted" % spec)


def refused(d, name, text, words):
    path = d.write(name, text) if text is not None else os.path.join(d.dir, name)
    try:
        sl.read_log(path)
    except sl.LogError as e:
        msg = str(e)
        if not msg.startswith(path) or "\n" in msg or not all(w in msg for w in words):
            raise AssertionError("%s: want one line starting with the path and naming %s, got: %s" % (name, words, msg))
        return
    raise AssertionError("%s: accepted" % name)


def check_bad_input():
    with Folder() as d:
        refused(d, "missing.txt", None, ["cannot read"])
        refused(d, "empty.txt", "", ["no validation lines"])
        refused(d, "code_only.txt", MODDED.split("=====")[0], ["no validation lines"])
        refused(d, "bad_loss.txt", "step:0/10 val_loss:4.1x train_time:5ms\n", [":1:", "malformed"])
        refused(d, "bad_time.txt", "step:0/10 val_loss:4.1 train_time:5s\n", [":1:", "malformed"])
        refused(d, "bad_tel.txt", "s:0 tel:10.9\ns:5 tel:\n", [":2:", "malformed"])
        refused(d, "nan.txt", "step:0/10 val_loss:nan train_time:0ms\n", [":1:", "nan"])
        refused(d, "two_runs.txt", MODDED + MODDED, [":%d:" % (MODDED.count("\n") + 7), "step 0 after step 300"])
        refused(d, "mixed.txt", "s:0 tel:10.9\nstep:5/10 val_loss:4.0 train_time:1ms\n", [":2:", "modded-nanogpt line in a llm.c log"])
    try:
        sl.read_log("whatever.txt", tokens_per_step=0)
    except sl.LogError as e:
        if "tokens per step" not in str(e):
            raise AssertionError(str(e))
    else:
        raise AssertionError("tokens per step 0: accepted")


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
