"""llm.c's CPU trainer (karpathy/llm.c, train_gpt2) as a peer of bench/peers.py. Standard library
only. Nothing of llm.c is kept, built or changed here: the user builds train_gpt2 from their own
checkout of llm.c, as it is, and names the binary with LLMC_BIN; we only give it its inputs and read
what it prints.

prepare() lays out a work folder the way train_gpt2 opens its files (relative to its working
folder): a randomly initialised GPT-2 124M checkpoint in llm.c's format (gpt2_124M.bin) and our token
shards linked as its tiny_shakespeare files (the shard format is llm.c's, byte for byte; our ids <
4096 are valid GPT-2 ids). No tokenizer file: train_gpt2 then prints a warning and goes on. run()
runs the binary there with no arguments (its B = 4, T = 64 and its 40 + 1 steps are fixed in its
source) and returns each step's "took X ms".
"""
import array
import math
import os
import random
import re
import subprocess

MAGIC, VERSION = 20240326, 3
GPT2_124M = {"maxT": 1024, "V": 50257, "Vp": 50304, "L": 12, "NH": 12, "C": 768}
CHECKPOINT = "gpt2_124M.bin"
TRAIN_BIN = "dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
VAL_BIN = "dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
STEP_LINE = re.compile(r"^step (\d+): train loss (\S+) \(took ([0-9.]+) ms\)$", re.M)


class Skip(Exception):
    """llm.c cannot run here; the message says why (one line)."""


def param_tensors(cfg):
    """llm.c's parameter tensors in checkpoint order: (name, size, init), init one of 'normal',
    'ones', 'zeros'; wte is ('wte', Vp * C) with its rows V..Vp-1 (padding) zero."""
    C, L, maxT, Vp = cfg["C"], cfg["L"], cfg["maxT"], cfg["Vp"]
    return [("wte", Vp * C, "normal"), ("wpe", maxT * C, "normal"),
            ("ln1w", L * C, "ones"), ("ln1b", L * C, "zeros"),
            ("qkvw", L * 3 * C * C, "normal"), ("qkvb", L * 3 * C, "zeros"),
            ("attprojw", L * C * C, "normal"), ("attprojb", L * C, "zeros"),
            ("ln2w", L * C, "ones"), ("ln2b", L * C, "zeros"),
            ("fcw", L * 4 * C * C, "normal"), ("fcb", L * 4 * C, "zeros"),
            ("fcprojw", L * C * 4 * C, "normal"), ("fcprojb", L * C, "zeros"),
            ("lnfw", C, "ones"), ("lnfb", C, "zeros")]


def num_parameters(cfg):
    return sum(n for _, n, _ in param_tensors(cfg))


def header(cfg):
    """The 256 int32 of the checkpoint header: magic, version, maxT, V, L, NH, C, Vp, then zeros."""
    h = [MAGIC, VERSION, cfg["maxT"], cfg["V"], cfg["L"], cfg["NH"], cfg["C"], cfg["Vp"]]
    return h + [0] * (256 - len(h))


def write_checkpoint(path, cfg=GPT2_124M, std=0.02, seed=0):
    """A random GPT-2 checkpoint in llm.c's format: layer-norm weights 1, biases 0, matrices and
    embeddings N(0, std) (one block of 2^20 + 7 draws repeated, so that 124M values take a second;
    a step's speed does not depend on them), wte's padding rows zero. Little-endian float32."""
    rng = random.Random(seed)
    block = array.array("f", (rng.gauss(0.0, std) for _ in range((1 << 20) + 7))).tobytes()
    ones, zeros = array.array("f", [1.0] * 4096).tobytes(), bytes(4 * 4096)

    def fill(f, pattern, n):  # n float32 from the repeated byte pattern
        nbytes = 4 * n
        while nbytes:
            k = min(nbytes, len(pattern))
            f.write(pattern[:k])
            nbytes -= k

    with open(path + ".tmp", "wb") as f:
        f.write(array.array("i", header(cfg)).tobytes())
        for name, n, init in param_tensors(cfg):
            if name == "wte":
                fill(f, block, cfg["V"] * cfg["C"])
                fill(f, zeros, (cfg["Vp"] - cfg["V"]) * cfg["C"])
            else:
                fill(f, {"normal": block, "ones": ones, "zeros": zeros}[init], n)
    os.replace(path + ".tmp", path)


def parse(stdout):
    """[(step, loss, seconds)] from train_gpt2's "step N: train loss X (took Y ms)" lines."""
    return [(int(s), float(loss), float(ms) / 1e3) for s, loss, ms in STEP_LINE.findall(stdout)]


def prepare(exe, work, train_shard, val_shard):
    """The work folder for the user's train_gpt2 `exe` (LLMC_BIN): its checkpoint and our shards where
    it opens them. Returns a dict describing the peer (exe, work, shards). Raises Skip."""
    if not exe:
        raise Skip("LLMC_BIN is not set (LLMC_BIN=/path/to/train_gpt2: llm.c's CPU trainer, built by you "
                   "from your checkout of karpathy/llm.c with its own Makefile)")
    if not os.path.isfile(exe):
        raise Skip(f"LLMC_BIN={exe}: not found")
    if not os.access(exe, os.X_OK):
        raise Skip(f"LLMC_BIN={exe}: not executable")
    os.makedirs(os.path.join(work, os.path.dirname(TRAIN_BIN)), exist_ok=True)
    for link, shard in [(TRAIN_BIN, train_shard), (VAL_BIN, val_shard)]:
        os.symlink(os.path.abspath(shard), os.path.join(work, link))
    write_checkpoint(os.path.join(work, CHECKPOINT))
    return {"exe": os.path.abspath(exe), "work": work, "train_shard": train_shard, "val_shard": val_shard}


def run(peer):
    """One run of the binary as it is; returns the seconds of its steps 1..N (step 0 is the
    warm-up). Raises Skip on a failed run, missing or out-of-order step lines or a non-finite loss."""
    r = subprocess.run([peer["exe"]], cwd=peer["work"], capture_output=True, text=True)
    if r.returncode:
        last = ((r.stdout + r.stderr).strip().splitlines() or ["(no output)"])[-1]
        raise Skip(f"train_gpt2 exited with status {r.returncode}: {last}")
    rows = parse(r.stdout)
    steps = [s for s, _, _ in rows]
    if len(steps) < 2 or steps != list(range(len(steps))):
        raise Skip(f"train_gpt2 printed steps {steps}, want 0, 1, 2, ...")
    bad = [(s, loss) for s, loss, _ in rows if not math.isfinite(loss)]
    if bad:
        raise Skip(f"train_gpt2's loss is not finite at step {bad[0][0]} ({bad[0][1]})")
    peer.setdefault("losses", []).extend(loss for _, loss, _ in rows)
    return [t for s, _, t in rows if s >= 1]
