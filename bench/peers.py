"""Peers side by side: our training step and Newton-Schulz against PyTorch eager on this CPU, and
our adamw step against llm.c's CPU trainer, timed interleaved in one run (round by round: ours, then
PyTorch, then llm.c), so machine load hits all.

  [LLMC_BIN=/path/to/train_gpt2] /usr/bin/python3 bench/peers.py BUILD OUT_DIR [--rounds=3] [--steps=4] [--batch=4] [--seq=64]

Step: build/train --scale=full at batch x seq tokens for the adamw and softcap presets (softcap
also with --ortho=gram-ns), steps+1 steps per round, the first discarded (warm-up), per-step wall
times from its log (step_s); PyTorch: bench/peers_model.py built from that same log's config,
steps+1 steps per round, the first discarded. Newton-Schulz: build/bench/ns_time (our default: the
quintic, 5 steps, bf16 emulated, one thread) against the speedrun's quintic in torch, bf16 (as the
records run it) and fp32, one thread, at Muon's matrix shapes. llm.c (optional): LLMC_BIN names
the train_gpt2 binary the user built from their own llm.c checkout (GPT-2 124M at its hard-coded
B = 4, T = 64, 40 + 1 steps); it runs unchanged, once, in the first round after our adamw, on a
random checkpoint and our shards, its step 0 discarded (bench/peers_llmc.py). Without LLMC_BIN, or at
other shapes, it is skipped with one line. Writes OUT_DIR/peers-<machine>.md.
"""
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import ctypes

import torch

import peers_llmc
import peers_model

NS_SHAPES = [(768, 768), (768, 3072), (3072, 768)]


def arg(name, default):
    for a in sys.argv[3:]:
        if a.startswith(f"--{name}="):
            return int(a.split("=", 1)[1])
    return default


def openblas():
    """The OpenBLAS this process mapped for torch (ctypes handle), or None. torch.set_num_threads
    sets torch's own pool only: Debian's torch calls OpenBLAS (pthreads build), whose thread count
    only openblas_set_num_threads changes (a 2048^3 sgemm ran at the 2-thread rate after
    torch.set_num_threads(1))."""
    for path in sorted({l.split()[-1] for l in open("/proc/self/maps") if "openblas" in l}):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_num_threads()
            return lib
        except (OSError, AttributeError):
            continue
    return None


def torch_threads(n, blas):
    """torch's pool and its OpenBLAS at n threads; returns how the report states it."""
    torch.set_num_threads(n)
    if not blas:
        return f"{n} intra-op, BLAS threads not set (no OpenBLAS found in the process)"
    blas.openblas_set_num_threads(n)
    return f"{n} intra-op, OpenBLAS {blas.openblas_get_num_threads()}"


def load():
    return os.getloadavg()[0]


def run_ours(build, preset, extra, steps, batch, seq, tmp):
    """steps + 1 training steps of build/train; returns (config, [seconds of steps 1..steps])."""
    out = os.path.join(tmp, "run")
    cmd = [f"{build}/train", f"--preset={preset}", "--scale=full", f"--batch={batch}", f"--seq_len={seq}",
           f"--steps={steps + 1}", "--val_every=0", f"--val_tokens={batch * seq}", "--ckpt_every=-1",
           "--train_data=data/gcide/train_*.bin", "--val_data=data/gcide/val_*.bin", "--comm=single",
           "--log_every=3600", f"--out_dir={out}", "--overwrite=1"] + extra
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        sys.exit(f"peers: {' '.join(cmd)} failed: {r.stderr.strip()}")
    config, times = None, []
    for line in open(os.path.join(out, "log.jsonl")):
        rec = json.loads(line)
        if rec.get("event") == "start":
            config = rec["config"]
        elif rec.get("event") == "train" and rec["step"] >= 1:
            times.append(rec["step_s"])
    return config, times


def run_torch(model, opts, c, steps, batch, seq, gen):
    ids = torch.randint(0, c["vocab"], (batch, seq + 1), generator=gen)
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    times = []
    for s in range(steps + 1):
        t0 = time.perf_counter()
        peers_model.train_step(model, opts, x, y, c["adam_normalize_grad"])
        if s >= 1:
            times.append(time.perf_counter() - t0)
    return times


def ns_ours(build, rows, cols, reps):
    r = subprocess.run([f"{build}/bench/ns_time", f"--rows={rows}", f"--cols={cols}", f"--reps={reps}"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["seconds"]


def ns_torch(G, dtype, reps, warmup=True):
    if warmup:
        peers_model.newton_schulz(G, dtype=dtype)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        peers_model.newton_schulz(G, dtype=dtype)
        times.append(time.perf_counter() - t0)
    return times


def med(x):
    return statistics.median(x)


def write_llmc(f, peer, skip, t, ours, torch_t, torch_threads_text, threads):
    f.write("## llm.c's CPU trainer, GPT-2 124M, batch 4 x 64 tokens\n\n")
    if skip or not t:
        f.write(f"llm.c skipped: {skip or 'no steps timed'}.\n\n")
        return
    omp = os.environ.get("OMP_NUM_THREADS")
    f.write(f"karpathy/llm.c's `train_gpt2` as the user built it (`LLMC_BIN={peer['exe']}`), run unchanged with "
            f"no arguments (its validation before steps 0, 10, 20, ... and its sampling at step 20 run outside the "
            f"timed part of a step). Its source fixes B = 4, T = 64, the shapes of our step above. Inputs: a random GPT-2 124M "
            f"checkpoint in llm.c's format (12 layers, 12 heads, 768 channels, vocab 50257 padded to 50304, "
            f"{peers_llmc.num_parameters(peers_llmc.GPT2_124M):,} parameters; N(0, 0.02), layer norms 1 and 0) "
            f"and our shards `{peer['train_shard']}`, `{peer['val_shard']}` as its tiny_shakespeare files (same "
            f"format; no tokenizer file). Time: its printed `took X ms` per step (batch, forward, zero grad, "
            f"backward, AdamW update), one run of {len(t)} + 1 steps in the first round, step 0 discarded. Its "
            f"losses ran {peer['losses'][0]:.3f} .. {peer['losses'][-1]:.3f} (finite).\n\n")
    f.write("| trainer | threads | s per step (min) | / ours adamw |\n|---|---|---|---|\n")
    f.write(f"| ours adamw | {threads} OpenMP, BLAS 1 each | {med(ours):.3f} ({min(ours):.3f}) | 1.00 |\n")
    f.write(f"| llm.c train_gpt2 | {omp or threads} OpenMP{'' if omp else ' (OMP_NUM_THREADS unset)'} "
            f"| {med(t):.3f} ({min(t):.3f}) | {med(t) / med(ours):.2f} |\n")
    if torch_t:
        f.write(f"| PyTorch adamw | {torch_threads_text} | {med(torch_t):.3f} ({min(torch_t):.3f}) | "
                f"{med(torch_t) / med(ours):.2f} |\n")
    ratio = med(t) / med(ours)
    f.write(f"\nTarget: our adamw step at least 3x faster than llm.c's CPU step at equal shapes. Measured in this "
            f"run: llm.c / ours = {ratio:.2f} (medians), {'met' if ratio >= 3 else 'not met'}.\n\n")
    print(f"peers: llm.c / ours adamw = {ratio:.2f} (target >= 3)"
          + (f", PyTorch / ours adamw = {med(torch_t) / med(ours):.2f}" if torch_t else ""), file=sys.stderr)


def main():
    build, out_dir = sys.argv[1], sys.argv[2]
    rounds, steps, batch, seq = arg("rounds", 3), arg("steps", 4), arg("batch", 4), arg("seq", 64)
    if not glob.glob("data/gcide/train_*.bin"):
        sys.exit("peers: data/gcide is missing (make data)")
    threads = os.cpu_count()
    slug = json.loads(subprocess.run([f"{build}/bench/ns_time", "--reps=1", "--rows=8", "--cols=8"],
                                     capture_output=True, text=True, check=True).stdout)["machine"]
    load0 = load()
    gen = torch.Generator().manual_seed(0)
    variants = [("adamw", "adamw", []), ("softcap", "softcap", []), ("softcap gram-ns", "softcap", ["--ortho=gram-ns"])]
    ours = {v[0]: [] for v in variants}
    theirs = {"adamw": [], "softcap": []}
    models = {}
    llmc, llmc_times, llmc_skip = None, [], None
    llmc_bin = os.environ.get("LLMC_BIN", "")
    blas = openblas()
    step_threads = ns_threads = ""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            if (batch, seq) != (4, 64):
                raise peers_llmc.Skip(f"train_gpt2 runs B = 4, T = 64 only (fixed in its source), this run --batch={batch} --seq={seq}")
            llmc = peers_llmc.prepare(llmc_bin, os.path.join(tmp, "llmc"),
                                      sorted(glob.glob("data/gcide/train_*.bin"))[0],
                                      sorted(glob.glob("data/gcide/val_*.bin"))[0])
        except peers_llmc.Skip as e:
            llmc_skip = str(e)
            print(f"peers: llm.c skipped: {llmc_skip}", file=sys.stderr, flush=True)
        for r in range(rounds):
            for name, preset, extra in variants:
                print(f"peers: round {r + 1}/{rounds}: ours {name}", file=sys.stderr, flush=True)
                config, t = run_ours(build, preset, extra, steps, batch, seq, tmp)
                ours[name] += t
                if preset in theirs and not extra:
                    if preset not in models:
                        torch.manual_seed(0)
                        m = peers_model.GPT(config)
                        models[preset] = (m, peers_model.optimizers(m, config), config)
                    m, opts, c = models[preset]
                    step_threads = torch_threads(threads, blas)
                    print(f"peers: round {r + 1}/{rounds}: torch {name}", file=sys.stderr, flush=True)
                    theirs[preset] += run_torch(m, opts, c, steps, batch, seq, gen)
                if name == "adamw" and llmc and r == 0:  # its 40 + 1 steps are many of ours: once
                    print(f"peers: round {r + 1}/{rounds}: llm.c train_gpt2", file=sys.stderr, flush=True)
                    try:
                        llmc_times += peers_llmc.run(llmc)
                    except peers_llmc.Skip as e:
                        llmc, llmc_times, llmc_skip = None, [], f"round {r + 1}: {e}"
                        print(f"peers: llm.c skipped: {llmc_skip}", file=sys.stderr, flush=True)
        models.clear()
        ns = {s: {"ours": [], "torch bf16": [], "torch fp32": []} for s in NS_SHAPES}
        ns_threads = torch_threads(1, blas)
        for r in range(rounds):
            for rows, cols in NS_SHAPES:
                print(f"peers: round {r + 1}/{rounds}: NS {rows}x{cols}", file=sys.stderr, flush=True)
                G = torch.randn(rows, cols, generator=gen)
                ns[(rows, cols)]["ours"] += ns_ours(build, rows, cols, 3)
                if r == 0:  # one call: bf16 matmuls take PyTorch tens of seconds on a CPU without bf16 units
                    ns[(rows, cols)]["torch bf16"] += ns_torch(G, torch.bfloat16, 1, warmup=False)
                ns[(rows, cols)]["torch fp32"] += ns_torch(G, torch.float32, 3)
    load1 = load()

    path = os.path.join(out_dir, f"peers-{slug}.md")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(path + ".tmp", "w") as f:
        f.write(f"# Peers side by side: our CPU training step and Newton-Schulz vs PyTorch eager and llm.c\n\n")
        f.write(f"- Machine: {cpu}, {threads} hardware threads. Commit `{commit}`. PyTorch {torch.__version__} "
                f"(Debian python3-torch, /usr/bin/python3).\n")
        f.write(f"- Command: `OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')} "
                f"LLMC_BIN={llmc_bin or '(unset)'} /usr/bin/python3 "
                f"bench/peers.py {build} {out_dir} --rounds={rounds} --steps={steps} --batch={batch} --seq={seq}` "
                f"(`make bench`, section `section_peers`).\n")
        f.write(f"- 1-minute load average {load0:.2f} at the start, {load1:.2f} at the end, on {threads} hardware "
                f"threads: above that, other work shared the CPU and inflated both sides alike (the runs "
                f"alternate round by round).\n")
        f.write(f"- Method: {rounds} rounds; each round runs our step ({steps} + 1 steps of `{build}/train "
                f"--scale=full --batch={batch} --seq_len={seq}`, per-step wall time from its log) then the same "
                f"step in PyTorch ({steps} + 1 steps), in the first round after adamw's also llm.c's `train_gpt2` (its "
                f"own 40 + 1 steps, section below); the first step of each is a warm-up, not counted. Medians over all counted "
                f"steps.\n\n")
        f.write("## Training step, GPT-2 124M shapes, batch %d x %d tokens\n\n" % (batch, seq))
        f.write("| preset | ours: threads | ours: s per step (min) | PyTorch: threads | PyTorch: s per step (min) "
                "| PyTorch / ours |\n|---|---|---|---|---|---|\n")
        for name, preset, _ in variants:
            o = ours[name]
            if theirs.get(preset) and name == preset:
                p = theirs[preset]
                f.write(f"| {name} | {threads} OpenMP, BLAS 1 each | {med(o):.3f} ({min(o):.3f}) | {step_threads} "
                        f"| {med(p):.3f} ({min(p):.3f}) | {med(p) / med(o):.2f} |\n")
            else:
                f.write(f"| {name} | {threads} OpenMP, BLAS 1 each | {med(o):.3f} ({min(o):.3f}) | | | |\n")
        a, s, g = med(ours["adamw"]), med(ours["softcap"]), med(ours["softcap gram-ns"])
        f.write(f"\nOurs: softcap / adamw = {s / a:.2f}, softcap with gram-ns / adamw = {g / a:.2f}, softcap with "
                f"gram-ns / softcap = {g / s:.2f}. PyTorch's softcap step runs Muon with its Newton-Schulz in fp32 "
                f"(bf16 matmuls on this CPU are far slower, table below); ours emulates the records' bf16 in fp32 "
                f"arithmetic.\n\n")
        write_llmc(f, llmc, llmc_skip, llmc_times, ours["adamw"], theirs["adamw"], step_threads, threads)
        f.write("## Newton-Schulz, one matrix, one thread\n\n")
        f.write("The speedrun's quintic, 5 steps. Ours: `build/bench/ns_time` (fp32 OpenBLAS, bf16 emulated as "
                "trained), 3 calls per round after a warm-up. PyTorch (" + ns_threads + "; `torch.set_num_threads` "
                "alone leaves Debian's OpenBLAS on every core): the records' formulation in fp32 (3 calls per round after a warm-up) and in bf16 as on GPUs (one call in the "
                "first round only: bf16 matmuls have no hardware support here and take seconds to minutes). "
                "Median (min) ms.\n\n")
        f.write("| shape | ours (bf16 emulated) | PyTorch bf16 | PyTorch fp32 | PyTorch fp32 / ours | PyTorch bf16 / ours |\n"
                "|---|---|---|---|---|---|\n")
        for shape in NS_SHAPES:
            d = ns[shape]
            o, b, p = d["ours"], d["torch bf16"], d["torch fp32"]
            f.write(f"| {shape[0]}x{shape[1]} | {1e3 * med(o):.1f} ({1e3 * min(o):.1f}) | {1e3 * med(b):.1f} "
                    f"({1e3 * min(b):.1f}) | {1e3 * med(p):.1f} ({1e3 * min(p):.1f}) | {med(p) / med(o):.2f} | "
                    f"{med(b) / med(o):.2f} |\n")
    os.replace(path + ".tmp", path)
    print(f"peers: wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
