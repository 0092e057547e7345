#!/usr/bin/env python3
"""Checks of bench/peers_llmc.py (llm.c as a peer of bench/peers.py) without llm.c: the checkpoint it
writes has the header and size llm.c's gpt2_build_from_checkpoint reads (256 int32, then float32
parameters), GPT-2 124M counts the 124,475,904 parameters llm.c prints for it, the step-line reader
on lines written here, and the peer runs the user's binary (LLMC_BIN) as it is, in a folder laid out
with our inputs (a stand-in script written here plays train_gpt2), or is skipped with one line.

  peers_llmc_check.py [NAME ...]   run the named checks (all by default)."""
import array
import os
import stat
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_llmc as pl  # noqa: E402
import pycheck  # noqa: E402


def check_checkpoint_124m():
    cfg = pl.GPT2_124M
    n = pl.num_parameters(cfg)
    assert n == 124475904, f"GPT-2 124M: {n} parameters, want 124475904"
    h = pl.header(cfg)
    assert len(h) == 256 and h[:8] == [20240326, 3, 1024, 50257, 12, 12, 768, 50304] and not any(h[8:]), h[:8]
    # wte is Vp x C; every layer 12 C^2 + 13 C; wpe maxT x C; the final norm 2 C
    assert n == 50304 * 768 + 1024 * 768 + 12 * (12 * 768 * 768 + 13 * 768) + 2 * 768


def check_checkpoint_file():
    cfg = {"maxT": 8, "V": 10, "Vp": 16, "L": 2, "NH": 2, "C": 4}
    n = pl.num_parameters(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.bin")
        pl.write_checkpoint(path, cfg)
        data = open(path, "rb").read()
    assert len(data) == 256 * 4 + 4 * n, f"{len(data)} bytes, want {256 * 4 + 4 * n}"
    h = array.array("i", data[:1024]).tolist()
    assert h == pl.header(cfg) and h[:8] == [20240326, 3, 8, 10, 2, 2, 4, 16], h[:8]
    x = array.array("f", data[1024:]).tolist()
    off = {}
    o = 0
    for name, size, _ in pl.param_tensors(cfg):
        off[name] = x[o:o + size]
        o += size
    C = cfg["C"]
    assert len(off["wte"]) == 16 * C and all(v == 0 for v in off["wte"][10 * C:]), "wte padding rows not zero"
    assert all(v == 1 for v in off["ln1w"] + off["ln2w"] + off["lnfw"]), "layer-norm weights not 1"
    assert all(v == 0 for v in off["qkvb"] + off["fcb"] + off["lnfb"]), "biases not 0"
    w = off["wte"][:10 * C] + off["wpe"] + off["qkvw"] + off["fcprojw"]
    assert all(0 < abs(v) < 0.2 for v in w), "matrices not small normal draws"


# A stand-in for the user's train_gpt2: checks that the inputs are where train_gpt2.c opens them
# (relative to its working folder), records its arguments, prints the step lines of its loop.
FAKE = """#!/bin/sh
for f in gpt2_124M.bin dev/data/tinyshakespeare/tiny_shakespeare_train.bin dev/data/tinyshakespeare/tiny_shakespeare_val.bin; do
  [ -s "$f" ] || { echo "missing $f" >&2; exit 3; }
done
echo "$#" > args.txt
echo "val loss 10.9"
for s in 0 1 2 3; do echo "step $s: train loss 10.5 (took 1${s}00.0 ms)"; done
"""


def fake_inputs(d):
    for name in ["train.bin", "val.bin"]:
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes(1024 + 8))
    exe = os.path.join(d, "train_gpt2")
    with open(exe, "w") as f:
        f.write(FAKE)
    os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR)
    return exe


def check_runs_the_given_binary():
    with tempfile.TemporaryDirectory() as d:
        exe = fake_inputs(d)
        work = os.path.join(d, "work")
        peer = pl.prepare(exe, work, os.path.join(d, "train.bin"), os.path.join(d, "val.bin"))
        times = pl.run(peer)
        assert times == [1.1, 1.2, 1.3], times
        assert peer["losses"] == [10.5] * 4, peer["losses"]
        assert open(os.path.join(work, "args.txt")).read() == "0\n", "train_gpt2 was given arguments"
        assert open(exe).read() == FAKE, "the user's binary was changed"
        names = sorted(os.listdir(work))
        assert not [n for n in names if n.endswith((".c", ".h"))], f"source files in the work folder: {names}"


def check_skipped_with_one_line():
    with tempfile.TemporaryDirectory() as d:
        fake_inputs(d)
        text = os.path.join(d, "not_a_program")
        open(text, "w").close()
        for exe, want in [("", "LLMC_BIN is not set"), (os.path.join(d, "missing"), "not found"),
                          (text, "not executable")]:
            try:
                pl.prepare(exe, os.path.join(d, "work"), os.path.join(d, "train.bin"), os.path.join(d, "val.bin"))
            except pl.Skip as e:
                assert want in str(e) and "\n" not in str(e), f"{exe!r}: {e}"
                continue
            raise AssertionError(f"no Skip for LLMC_BIN={exe!r}")


def check_parse():
    out = "val loss 10.9\nstep 0: train loss 10.969776 (took 12958.555260 ms)\nstep 1: train loss nan (took 5.5 ms)\n"
    rows = pl.parse(out)
    assert [s for s, _, _ in rows] == [0, 1], rows
    pycheck.near("step 0 seconds", rows[0][2], 12.95855526, 1e-12)
    pycheck.near("step 1 seconds", rows[1][2], 0.0055, 1e-15)
    assert rows[0][1] == 10.969776 and rows[1][1] != rows[1][1], rows


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
