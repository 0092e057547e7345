#!/usr/bin/env python3
"""Checks of bench/peers_llmc.py (llm.c as a peer of bench/peers.py) without llm.c: the checkpoint it
writes has the header and size llm.c's gpt2_build_from_checkpoint reads (256 int32, then float32
parameters), GPT-2 124M counts the 124,475,904 parameters llm.c prints for it, the loop rewrite and
the step-line reader on lines written here.

  peers_llmc_check.py [NAME ...]   run the named checks (all by default)."""
import array
import os
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


def check_rewrite():
    src = "int val_num_batches = 5;\n    for (int step = 0; step <= 40; step++) {\n"
    out, done = pl.rewrite(src, 3)
    assert out == "int val_num_batches = 1;\n    for (int step = 0; step <= 3; step++) {\n", out
    assert len(done) == 2, done
    for bad in ["for (int step = 0; step < 40; step++) {", src + src]:
        try:
            pl.rewrite(bad, 3)
        except pl.Skip:
            continue
        raise AssertionError(f"no Skip for {bad!r}")


def check_parse():
    out = "val loss 10.9\nstep 0: train loss 10.969776 (took 12958.555260 ms)\nstep 1: train loss nan (took 5.5 ms)\n"
    rows = pl.parse(out)
    assert [s for s, _, _ in rows] == [0, 1], rows
    pycheck.near("step 0 seconds", rows[0][2], 12.95855526, 1e-12)
    pycheck.near("step 1 seconds", rows[1][2], 0.0055, 1e-15)
    assert rows[0][1] == 10.969776 and rows[1][1] != rows[1][1], rows


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
