#!/usr/bin/env python3
"""The whole training step on a second backend against the CPU: every preset at the test scale.

  gpu_step_compare.py --build DIR [--backend cuda] [--ref cpu] [--presets "adamw ..."] [--steps N]
                      [--halt N] [--cases plain,accum,resume] [--out FILE] [--work DIR]

--ref names the CPU side: cpu (fp32 matmuls), or cpu-bf16mm (matmul operands rounded to bf16 as
the CUDA backend rounds them, so what is left between the two is the order of fp32 sums and the
GPU's transcendental functions), or cpu-bf16 (that with every activation and activation gradient
rounded to bf16 too: the twin of a CUDA backend that stores bf16 activations). For each preset, on
made-up test-scale shards (ids below 120, documents of 10 to 70 tokens):
  plain    N steps on the --ref backend and on the backend;
  accum    the same with --grad_accum=2 on both;
  resume   halted at step --halt on the backend and resumed on --ref to step N (and the reverse),
           each against the uninterrupted run of the backend it finished on.
--cases picks among them (default all three); resume without plain reuses the plain runs an earlier
call left in --work (a slow runtime can so spread the cases over several calls).
Every row gives the train losses' largest difference over the steps, the final validation
losses, and the checkpoints' differences from ckpt_diff (parameters and every optimizer state:
max |a - b| / max |a| and the normwise error; bitwise or not; the step, loader and Adam step-count
sections must be byte-equal). Programs inherit this environment (LD_LIBRARY_PATH, GM_CUDA_LIBS)
and working directory, so a CUDA runtime that needs files there finds them. Markdown on stdout or
--out; the figures are only what the runs printed.
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import time

PRESETS = "adamw muon-v1 muon-v2 untied value-embed softcap normuon"


def write_shard(path, n, seed):
    """A token shard (llm.c format) of n ids below 120, documents opened by id 0."""
    r = random.Random(seed)
    toks, left = [], 0
    for i in range(n):
        if left == 0:
            toks.append(0)
            left = 10 + r.randrange(60)
            continue
        left -= 1
        toks.append(1 + (r.randrange(119) if r.random() < 0.2 else (i * 7 + left % 5 * 3) % 119))
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
        f.write(struct.pack("<%dH" % n, *toks))


def run(cmd, ok=(0,)):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in ok:
        sys.exit("gpu_step_compare: error: %s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
    return p.stdout, time.time() - t0


def losses(out_dir):
    train, val = {}, None
    with open(os.path.join(out_dir, "log.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("event") == "train":
                train[r["step"]] = r["train_loss"]
            elif r.get("event") == "val":
                val = r["val_loss"]
    return train, val


def ckpt_rows(build, ref, other):
    """ckpt_diff's rows as dicts keyed by its header."""
    out, _ = run([os.path.join(build, "bench", "ckpt_diff"), "--ref=" + ref, "--other=" + other])
    rows = [l for l in out.splitlines() if l.startswith("| ") and not l.startswith("| section")]
    keys = ["section", "elements", "maxabs", "maxrel", "normwise", "nonfinite", "bitwise"]
    return [dict(zip(keys, [c.strip() for c in l.strip("|").split("|")])) for l in rows]


def summary(rows):
    """(worst max-rel and normwise over the fp32 sections, bitwise of all of them, scalar sections equal:
    all but the configuration and the backend's name, which describe the runs compared)."""
    states = [r for r in rows if r["maxrel"]]
    scalars = [r for r in rows if not r["maxrel"]]
    worst_rel = max((float(r["maxrel"]) for r in states), default=0.0)
    worst_norm = max((float(r["normwise"]) for r in states), default=0.0)
    nonfinite = sum(int(r["nonfinite"]) for r in states)
    return worst_rel, worst_norm, all(r["bitwise"] == "yes" for r in states), all(
        r["bitwise"] == "yes" for r in scalars if r["section"] not in ("config", "backend")), nonfinite


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--ref", default="cpu")
    ap.add_argument("--presets", default=PRESETS)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--halt", type=int, default=2)
    ap.add_argument("--cases", default="plain,accum,resume")
    ap.add_argument("--out")
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    cases = a.cases.split(",")
    if not cases or any(c not in ("plain", "accum", "resume") for c in cases):
        sys.exit("gpu_step_compare: error: --cases: '%s' is not a comma-separated list of plain, accum, resume" % a.cases)
    if not 1 <= a.halt < a.steps:
        sys.exit("gpu_step_compare: error: --halt must be in [1, --steps)")
    work = os.path.abspath(a.work or os.path.join(a.build, "gpu_step_compare"))
    os.makedirs(work, exist_ok=True)
    write_shard(os.path.join(work, "train_000000.bin"), 6000, 1)
    write_shard(os.path.join(work, "val_000000.bin"), 2000, 2)
    train_bin = os.path.join(a.build, "train")
    common = ["--scale=test", "--steps=%d" % a.steps, "--val_every=%d" % a.steps, "--val_tokens=256",
              "--log_every=0", "--train_data=" + os.path.join(work, "train_*.bin"),
              "--val_data=" + os.path.join(work, "val_*.bin"), "--overwrite=1"]

    lines = ["| preset | case | max \\|Δ train loss\\| over steps | final val loss (%s / %s) | params max rel | "
             "states max rel | worst normwise | bitwise | step/loader/Adam t equal | seconds (%s) |" % (a.backend, a.ref, a.backend),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for preset in a.presets.split():
        d = lambda name: os.path.join(work, preset + "-" + name)

        def train(backend, name, *extra):
            # A run stopped by --halt_at exits as an interrupted one does (130).
            halts = any(x.startswith("--halt_at") for x in extra)
            _, secs = run([train_bin, "--preset=" + preset, "--backend=" + backend, "--out_dir=" + d(name)] + common +
                          list(extra), ok=(130,) if halts else (0,))
            return secs

        def row(case, ref_dir, other_dir, secs):
            lr, vr = losses(ref_dir)
            lo, vo = losses(other_dir)
            dl = max(abs(lo[s] - lr[s]) for s in lr if s in lo)
            rows = ckpt_rows(a.build, os.path.join(ref_dir, "ckpt.bin"), os.path.join(other_dir, "ckpt.bin"))
            rel, norm, bitwise, scal, nonfinite = summary(rows)
            prow = next(r for r in rows if r["section"] == "params")
            srel = max((float(r["maxrel"]) for r in rows if r["maxrel"] and r["section"] != "params"), default=0.0)
            lines.append("| %s | %s | %.3g | %.8f / %.8f | %s | %.3g | %.3g | %s | %s | %.0f |" % (
                preset, case, dl, vo, vr, prow["maxrel"], srel, norm, "yes" if bitwise else "no",
                "yes" if scal else "NO", secs))
            if nonfinite:
                lines.append("| %s | %s | %d non-finite values | | | | | | | |" % (preset, case, nonfinite))
            print(lines[-1], file=sys.stderr, flush=True)

        if "plain" in cases:
            train(a.ref, "cpu")
            row("plain %d steps" % a.steps, d("cpu"), d("gpu"), train(a.backend, "gpu"))
        if "accum" in cases:
            train(a.ref, "cpu-acc", "--grad_accum=2")
            row("--grad_accum=2", d("cpu-acc"), d("gpu-acc"), train(a.backend, "gpu-acc", "--grad_accum=2"))
        if "resume" not in cases:
            continue
        for name in ("cpu", "gpu"):
            if not os.path.exists(os.path.join(d(name), "ckpt.bin")):
                sys.exit("gpu_step_compare: error: --cases=resume needs the plain runs: %s has no ckpt.bin "
                         "(add plain to --cases)" % d(name))
        # Halted on one backend, resumed on the other; compared with the run that never left the latter.
        secs = train(a.backend, "gpu-half", "--halt_at=%d" % a.halt)
        secs += train(a.ref, "gpu-to-cpu", "--resume=" + os.path.join(d("gpu-half"), "ckpt.bin"))
        row("halted at %d on %s, resumed on %s" % (a.halt, a.backend, a.ref), d("cpu"), d("gpu-to-cpu"), secs)
        train(a.ref, "cpu-half", "--halt_at=%d" % a.halt)
        row("halted at %d on %s, resumed on %s" % (a.halt, a.ref, a.backend), d("gpu"), d("cpu-to-gpu"),
            train(a.backend, "cpu-to-gpu", "--resume=" + os.path.join(d("cpu-half"), "ckpt.bin")))
    text = "\n".join(lines) + "\n"
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
