"""llm.c's CPU trainer (karpathy/llm.c, train_gpt2.c) as a peer of bench/peers.py. Standard library
only; nothing of llm.c is kept in this repository: at bench time the user's checkout (LLMC_DIR) is
compiled into a temporary folder and run there.

prepare() copies LLMC_DIR/train_gpt2.c into the folder, rewrites its loop bound (`step <= 40`) to the
step count asked for and its validation batches (`val_num_batches = 5`) to 1, compiles it with the
flags llm.c's Makefile uses for train_gpt2 on Linux (FLAGS, plus -march=native where the compiler
takes it, as the Makefile checks), writes a randomly initialised GPT-2 124M checkpoint in llm.c's
format (gpt2_124M.bin) and links our token shards where train_gpt2.c opens its data (the shard format
is llm.c's, byte for byte; our ids < 4096 are valid GPT-2 ids). No tokenizer file: train_gpt2.c then
prints a warning and goes on. run() runs it there and returns each step's "took X ms".
"""
import array
import math
import os
import random
import re
import shutil
import subprocess

MAGIC, VERSION = 20240326, 3
GPT2_124M = {"maxT": 1024, "V": 50257, "Vp": 50304, "L": 12, "NH": 12, "C": 768}
FLAGS = ["-Ofast", "-Wno-unused-result", "-Wno-ignored-pragmas", "-Wno-unknown-attributes"]
OMP_FLAGS, LIBS = ["-fopenmp", "-DOMP"], ["-lm", "-lgomp"]
TRAIN_BIN = "dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
VAL_BIN = "dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
LOOP = re.compile(r"(for\s*\(\s*int\s+step\s*=\s*0\s*;\s*step\s*<=\s*)40(\s*;)")
VAL_BATCHES = re.compile(r"(int\s+val_num_batches\s*=\s*)5(\s*;)")
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


def rewrite(src, steps):
    """train_gpt2.c's text with steps + 1 training steps (0..steps) and one validation batch; raises
    Skip where the loop bound is not found, returns (text, [what was rewritten])."""
    out, n = LOOP.subn(lambda m: f"{m.group(1)}{steps}{m.group(2)}", src)
    if n != 1:
        raise Skip(f"train_gpt2.c's training loop `for (int step = 0; step <= 40; step++)` found {n} times, want 1")
    done = [f"`step <= 40` -> `step <= {steps}`"]
    out, n = VAL_BATCHES.subn(lambda m: f"{m.group(1)}1{m.group(2)}", out)
    if n == 1:
        done.append("`val_num_batches = 5` -> `1`")
    return out, done


def parse(stdout):
    """[(step, loss, seconds)] from train_gpt2's "step N: train loss X (took Y ms)" lines."""
    return [(int(s), float(loss), float(ms) / 1e3) for s, loss, ms in STEP_LINE.findall(stdout)]


def commit(llmc_dir):
    r = subprocess.run(["git", "-C", llmc_dir, "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"


def compiler_accepts(cc, flag):
    r = subprocess.run([cc, flag, "-x", "c", "-", "-o", os.devnull], input="int main(void) { return 0; }\n",
                       capture_output=True, text=True)
    return r.returncode == 0


def prepare(llmc_dir, work, steps, train_shard, val_shard, cc="gcc"):
    """Build llm.c's train_gpt2 in `work` for steps + 1 steps and lay out its inputs there; returns
    a dict describing it (exe, cmd, flags, rewrites, commit, compiler). Raises Skip."""
    if not llmc_dir:
        raise Skip("LLMC_DIR is not set (LLMC_DIR=/path/to/llm.c, a checkout of karpathy/llm.c)")
    src = os.path.join(llmc_dir, "train_gpt2.c")
    if not os.path.isfile(src):
        raise Skip(f"{src} not found")
    if shutil.which(cc) is None:
        raise Skip(f"no {cc} on PATH")
    text, rewrites = rewrite(open(src).read(), steps)
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "train_gpt2.c"), "w") as f:
        f.write(text)
    flags = FLAGS + [f for f in ["-march=native"] if compiler_accepts(cc, f)] + OMP_FLAGS
    cmd = [cc] + flags + ["-I", os.path.abspath(llmc_dir), "train_gpt2.c"] + LIBS + ["-o", "train_gpt2"]
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Skip(f"compiling train_gpt2.c failed: {last}")
    os.makedirs(os.path.join(work, os.path.dirname(TRAIN_BIN)), exist_ok=True)
    for link, shard in [(TRAIN_BIN, train_shard), (VAL_BIN, val_shard)]:
        os.symlink(os.path.abspath(shard), os.path.join(work, link))
    write_checkpoint(os.path.join(work, "gpt2_124M.bin"))
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {"exe": os.path.join(work, "train_gpt2"), "work": work, "flags": flags + LIBS, "rewrites": rewrites,
            "commit": commit(llmc_dir), "compiler": version, "train_shard": train_shard, "val_shard": val_shard}


def run(peer, steps):
    """One run of steps + 1 steps; returns the seconds of steps 1..steps (step 0 is the warm-up).
    Raises Skip on a failed run, missing step lines or a non-finite loss."""
    r = subprocess.run([peer["exe"]], cwd=peer["work"], capture_output=True, text=True)
    if r.returncode:
        last = ((r.stdout + r.stderr).strip().splitlines() or ["(no output)"])[-1]
        raise Skip(f"train_gpt2 exited with status {r.returncode}: {last}")
    rows = parse(r.stdout)
    if [s for s, _, _ in rows] != list(range(steps + 1)):
        raise Skip(f"train_gpt2 printed steps {[s for s, _, _ in rows]}, want 0..{steps}")
    bad = [(s, loss) for s, loss, _ in rows if not math.isfinite(loss)]
    if bad:
        raise Skip(f"train_gpt2's loss is not finite at step {bad[0][0]} ({bad[0][1]})")
    peer.setdefault("losses", []).extend(loss for _, loss, _ in rows)
    return [t for s, _, t in rows if s >= 1]
