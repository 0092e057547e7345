#!/usr/bin/env python3
"""PyTorch's GPU kernels at our step's shapes, on the GPU our kernels ran on: the peers of the GPU report
(ci/bundle/run_gpu_report.sh). Python standard library and torch only.

  peers_gpu.py --build DIR [--preset softcap] [--seq_len T] [--batch B] [--ours KERNELS.csv]
               [--out DIR] [--name peers-gpu]
  peers_gpu.py --build DIR --list-shapes [--preset P] [--scale S] [--seq_len T] [--batch B]

The shapes come from the model's configuration as DIR/train prints it (`train --preset=P --scale=S
--help`, full scale unless --scale says otherwise; --seq_len and --batch default to the preset's) and
from the calls impl/model/model.c makes with it; --list-shapes prints them, without torch, as
bench/kernels' CSV names them ("matmul_fwd,NxC @ OCxC^T,calls" per step, then "orthogonalize,M
matrices E elements"), so a test can hold the list against the calls the model really makes.

Parts, each on its own (a failure is one line in the report and the next part runs), the files
rewritten after each so a run stopped early keeps what it finished:
  gemm   cuBLAS through `a @ b`, bf16 operands, bf16 output (and fp32 output where torch.mm takes
         out_dtype), for each matmul call of the step: forward out = inp W^T, backward dinp = dout W and
         dW = dout^T inp; after >= 3 s of GEMMs (clocks: rates halve without it);
  sdpa   scaled_dot_product_attention, causal, B 1, the preset's heads, bf16, T = 4096 .. 65536, with the
         FlashAttention and the cuDNN backends (sdpa_kernel), forward and forward + backward;
  ns     the records' Newton-Schulz (zeropower_via_newtonschulz5 of 2025-01-04_SoftCap: quintic, 5 steps,
         bf16) on the preset's Muon matrices, one after another, eager and torch.compile'd;
  flex   FlexAttention (compiled) on the record's block mask: causal, documents, and a window of the
         preset's final size in blocks (refdata/records/PRESETS.md 7.2; impl/backend/attn_mask.h), with
         EOT-opened documents of exponential lengths of mean 700 and without documents (the mask
         bench/attention_gpu times by default); the first calls' time (compilation) apart.
Timing: per case one warm-up call, then 5 samples, each a run of back-to-back calls lasting >= 20 ms
between CUDA events; the median per call (min and max in the CSV). FLOPs: 2 m k n per GEMM; attention
4 HD flops per admitted (query, key) pair forward and 10 HD backward, per head (bench/attention_gpu's
count; causal: T (T + 1) / 2 pairs). --ours names bench/kernels' CSV of the same step on this GPU: its
matmul and orthogonalize rows go beside torch's. Writes OUT/NAME.md and OUT/NAME.csv.
Written in a session without a GPU or torch: its GPU parts have run only on verify/fake_torch.py's
stand-in (test_gpu_report_script.c), never with torch; every figure in a report comes from a run.
"""
import argparse
import collections
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time
import traceback

WARMUP_S = 3.0
SAMPLES = 5
SAMPLE_S = 0.02
SDPA_T = (4096, 8192, 16384, 32768, 65536)
FLEX_T = (65536, 16384)  # the record's length first
DOC_LEN = 700  # mean document length of the flex mask's documents (bench/kernels' --doc_len default)
NEEDED = ("n_layer", "d_model", "d_mlp", "vocab_padded", "n_head", "head_dim", "skip_attn_mask", "qkv_fused",
          "n_value_embeds",
          "matrix_opt", "muon_split_qkv", "seq_len", "batch", "attn_block", "window_start_tokens",
          "window_end_tokens")


def die(msg):
    sys.exit("peers_gpu: error: " + msg)


def model_config(build, preset, scale):
    """The configuration fields of `train --preset --scale --help` ("--key  text (default V)")."""
    cmd = [os.path.join(build, "train"), "--preset=" + preset, "--scale=" + scale, "--help"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        die("%s: %s" % (cmd[0], e.strerror))
    if p.returncode != 0:
        die("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    cfg = dict(re.findall(r"^\s+--(\w+)\s.*\(default ([^()]*)\)$", p.stdout, re.M))
    missing = [k for k in NEEDED if k not in cfg]
    if missing:
        die("%s does not list %s" % (" ".join(cmd), ", ".join(missing)))
    num = {k: int(cfg[k]) for k in NEEDED if k != "matrix_opt"}
    num["matrix_opt"] = cfg["matrix_opt"]
    return num


def has_attn(cfg, layer):
    return not (cfg["skip_attn_mask"] >> layer) & 1


def matmuls(cfg, B, T):
    """{(kind, N, C, OC, res): calls per step} of model.c's training step: matmul_fwd(out, inp, W, N, C, OC,
    scale, res) is out (N, OC) = inp (N, C) W^T with W (OC, C), plus the residual res (N, OC) for the two
    output projections (res = 1); matmul_bwd the same call's dinp and dW. The head in one chunk of all N
    rows, as train's --head_rows=0 (auto) takes it where the memory plan fits (an 80 GB GPU at the
    record's shape, and the test scale)."""
    N, C, H, Vp = B * T, cfg["d_model"], cfg["d_mlp"], cfg["vocab_padded"]
    calls = collections.Counter()
    for kind in ("matmul_fwd", "matmul_bwd"):
        proj = int(kind == "matmul_fwd")
        for layer in range(cfg["n_layer"]):
            if has_attn(cfg, layer):
                if cfg["n_value_embeds"]:  # q, k, v one call (their rows of W adjacent; v a view the value mix reads)
                    calls[(kind, N, C, 3 * C, 0)] += 1
                else:  # q and k one call, v its own (attention reads it)
                    calls[(kind, N, C, 2 * C, 0)] += 1
                    calls[(kind, N, C, C, 0)] += 1
                calls[(kind, N, C, C, proj)] += 1  # c_proj
            calls[(kind, N, C, H, 0)] += 1  # MLP fc
            calls[(kind, N, H, C, proj)] += 1  # MLP proj
        calls[(kind, N, C, Vp, 0)] += 1  # the head
    return calls


def muon_matrices(cfg):
    """Shapes (rows, cols) of the matrices Muon orthogonalizes, in model order."""
    if cfg["matrix_opt"] != "muon":
        return []
    C, H, out = cfg["d_model"], cfg["d_mlp"], []
    for layer in range(cfg["n_layer"]):
        if has_attn(cfg, layer):
            fused = cfg["qkv_fused"] and not cfg["muon_split_qkv"]
            out += [(3 * C, C)] if fused else [(C, C)] * 3
            out.append((C, C))
        out += [(H, C), (C, H)]
    return out


def shape_name(N, C, OC, res):
    return "%dx%d @ %dx%d^T%s" % (N, C, OC, C, " +res" if res else "")


def list_shapes(cfg, B, T):
    for (kind, N, C, OC, res), n in sorted(matmuls(cfg, B, T).items()):
        print("%s,%s,%d" % (kind, shape_name(N, C, OC, res), n))
    mats = muon_matrices(cfg)
    if mats:
        print("orthogonalize,%d matrices %d elements" % (len(mats), sum(r * c for r, c in mats)))


def read_ours(path):
    """{(name, shape): median ms per call} of bench/kernels' CSV."""
    ours = {}
    if not path:
        return ours
    with open(path) as f:
        for line in f.read().splitlines()[1:]:
            cells = line.split(",")
            if len(cells) > 3 and ":" in cells[0]:
                ours[(cells[0].split(":", 1)[1], cells[1])] = float(cells[3])
    return ours


class Report:
    """The rows of every part; md and csv rewritten (atomically) after each part."""

    def __init__(self, out, name, head):
        self.md_path, self.csv_path = os.path.join(out, name + ".md"), os.path.join(out, name + ".csv")
        self.head, self.sections, self.rows, self.failures = head, [], [], []

    def row(self, part, what, shape, calls, ms, tflops, ours_ms=None, note=""):
        self.rows.append((part, what, shape, calls, ms, tflops, ours_ms, note))

    def write(self):
        md = list(self.head)
        for s in self.sections:
            md += [""] + s
        if self.failures:
            md += ["", "## Parts that failed", ""] + ["- %s" % f for f in self.failures]
        self._put(self.md_path, "\n".join(md) + "\n")
        lines = ["part,what,shape,calls,median_ms,min_ms,max_ms,tflops,ours_ms,note"]
        for part, what, shape, calls, ms, tf, ours, note in self.rows:
            lines.append("%s,%s,%s,%s,%.6g,%.6g,%.6g,%.4g,%s,%s" % (part, what, shape, calls, ms[0], ms[1], ms[2], tf,
                                                                   "" if ours is None else "%.6g" % ours, note))
        self._put(self.csv_path, "\n".join(lines) + "\n")

    @staticmethod
    def _put(path, text):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def timer(torch):
    def time_ms(fn):
        """(median, min, max) ms per call of fn."""
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        reps = max(1, math.ceil(SAMPLE_S / max(time.perf_counter() - t0, 1e-6)))
        ms = []
        for _ in range(SAMPLES):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(reps):
                fn()
            b.record()
            b.synchronize()
            ms.append(a.elapsed_time(b) / reps)
        return statistics.median(ms), min(ms), max(ms)
    return time_ms


def tflops(flops, ms):
    return flops / (ms * 1e9) if ms > 0 else 0.0


def part_gemm(torch, time_ms, rep, cfg, B, T, ours):
    calls = matmuls(cfg, B, T)
    # Each call's GEMMs as torch's a (m x k) @ b (k x n) (+ r, torch.addmm's epilogue, for a residual).
    gemms = {"matmul_fwd": lambda N, C, OC, res: [("out = inp W^T + res" if res else "out = inp W^T", N, C, OC)],
             "matmul_bwd": lambda N, C, OC, res: [("dinp = dout W", N, OC, C), ("dW = dout^T inp", OC, N, C)]}
    big = max(calls, key=lambda k: k[1] * k[2] * k[3])
    a = torch.randn(big[1], big[2], device="cuda", dtype=torch.bfloat16)
    b = torch.randn(big[2], big[3], device="cuda", dtype=torch.bfloat16)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < WARMUP_S:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()
        n += 20
    del a, b
    try:
        x = torch.ones(2, 2, device="cuda", dtype=torch.bfloat16)
        torch.mm(x, x, out_dtype=torch.float32)
        fp32_out = True
    except (TypeError, RuntimeError):
        fp32_out = False
    lines = ["## GEMMs: cuBLAS through torch (`a @ b`, bf16 operands), at the step's matmul calls",
             "",
             "After %.0f s of GEMMs (%d calls at %dx%dx%d). Each of our calls is one GEMM forward and two "
             "backward; `torch ms` is their sum (bf16 output%s). `ours ms`: bench/kernels' median for the call "
             "(--ours)." % (WARMUP_S, n, big[1], big[2], big[3],
                            "; fp32 output in its own column" if fp32_out else "; this torch.mm takes no out_dtype"),
             "",
             "| our call | shape | calls / step | torch GEMMs (m x k x n) | torch ms | TFLOP/s | torch ms, fp32 out "
             "| ours ms | ours / torch |",
             "|---|---|---|---|---|---|---|---|---|"]
    step = [0.0, 0.0, 0.0]  # ms per step: torch bf16 out, torch fp32 out, ours
    for key in sorted(calls):
        kind, N, C, OC, res = key
        shape = shape_name(N, C, OC, res)
        tot, tot32, flops, dims = 0.0, 0.0, 0.0, []
        for what, m, k, n in gemms[kind](N, C, OC, res):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            y = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
            r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16) if "+ res" in what else None
            ms = time_ms((lambda: torch.addmm(r, x, y)) if r is not None else (lambda: x @ y))
            rep.row("gemm", what, "%dx%dx%d" % (m, k, n), calls[key], ms, tflops(2.0 * m * k * n, ms[0]), note="bf16 out")
            tot += ms[0]
            if fp32_out:
                ms32 = time_ms(lambda: torch.mm(x, y, out_dtype=torch.float32))
                rep.row("gemm", what, "%dx%dx%d" % (m, k, n), calls[key], ms32, tflops(2.0 * m * k * n, ms32[0]),
                        note="fp32 out")
                tot32 += ms32[0]
            flops += 2.0 * m * k * n
            dims.append("%dx%dx%d" % (m, k, n))
            del x, y, r
        mine = ours.get((kind, shape))
        step[0] += calls[key] * tot
        step[1] += calls[key] * tot32
        step[2] += calls[key] * (mine or 0.0)
        lines.append("| %s | %s | %d | %s | %.4g | %.0f | %s | %s | %s |" % (
            kind, shape, calls[key], " + ".join(dims), tot, tflops(flops, tot), "%.4g" % tot32 if fp32_out else "",
            "%.4g" % mine if mine else "", "%.2f" % (mine / tot) if mine else ""))
    lines.append("| **per step** | | | | %.1f | | %s | %s | %s |" % (
        step[0], "%.1f" % step[1] if fp32_out else "", "%.1f" % step[2] if ours else "",
        "%.2f" % (step[2] / step[0]) if ours else ""))
    rep.sections.append(lines)


def part_sdpa(torch, time_ms, rep, cfg):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    H, D = cfg["n_head"], cfg["head_dim"]
    lines = ["## Attention: `scaled_dot_product_attention`, causal, B 1, %d heads of %d, bf16" % (H, D), "",
             "| backend | T | fwd ms | TFLOP/s | fwd + bwd ms | bwd ms | bwd TFLOP/s |", "|---|---|---|---|---|---|---|"]
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        for T in SDPA_T:
            try:
                q, k, v, dout = (torch.randn(1, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=i < 3)
                                 for i in range(4))
                pairs = H * T * (T + 1) / 2
                with sdpa_kernel(backend):
                    fwd = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                    both = time_ms(lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                                               (q, k, v), dout))
                bwd = [b - f for b, f in zip(both, fwd)]
                rep.row("sdpa", name + " fwd", "T=%d" % T, 1, fwd, tflops(4.0 * D * pairs, fwd[0]))
                rep.row("sdpa", name + " bwd", "T=%d" % T, 1, bwd, tflops(10.0 * D * pairs, bwd[0]),
                        note="fwd+bwd minus fwd")
                lines.append("| %s | %d | %.4g | %.0f | %.4g | %.4g | %.0f |" % (
                    name, T, fwd[0], tflops(4.0 * D * pairs, fwd[0]), both[0], bwd[0], tflops(10.0 * D * pairs, bwd[0])))
                del q, k, v, dout
            except Exception as e:  # one backend or length unsupported: the others still run
                rep.failures.append("sdpa %s T=%d: %s" % (name, T, one_line(e)))
    rep.sections.append(lines)


def zeropower_via_newtonschulz5(G, steps=5, eps=1e-7):
    """records/2025-01-04_SoftCap (NS-3, refdata/records/PRESETS.md 2.5)."""
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.bfloat16()
    X /= X.norm() + eps
    if G.size(0) > G.size(1):
        X = X.T
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(0) > G.size(1):
        X = X.T
    return X


def part_ns(torch, time_ms, rep, cfg, ours):
    mats = muon_matrices(cfg)
    if not mats:
        rep.sections.append(["## Newton-Schulz", "", "The preset has no Muon matrices."])
        return
    Gs = [torch.randn(r, c, device="cuda") for r, c in mats]
    counts = collections.Counter(mats)
    what = ", ".join("%d of %dx%d" % (n, r, c) for (r, c), n in counts.items())
    mine = next((ms for (name, shape), ms in ours.items() if name == "orthogonalize"), None)
    lines = ["## Newton-Schulz: the records' quintic (5 steps, bf16), one matrix after another", "",
             "%d matrices: %s. `ours`: bench/kernels' orthogonalize row (all of them, batched)." % (len(mats), what), "",
             "| variant | ms for all | compile s | ours ms |", "|---|---|---|---|"]
    eager = time_ms(lambda: [zeropower_via_newtonschulz5(G) for G in Gs])
    rep.row("ns", "eager", "%d matrices" % len(mats), 1, eager, 0.0, mine)
    lines.append("| eager | %.4g | | %s |" % (eager[0], "%.4g" % mine if mine else ""))
    rep.sections.append(lines)  # filed now and grown below: the eager row survives a compilation that fails
    rep.write()
    ns = torch.compile(zeropower_via_newtonschulz5)
    t0 = time.perf_counter()
    for G in Gs:
        ns(G)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    comp = time_ms(lambda: [ns(G) for G in Gs])
    rep.row("ns", "torch.compile", "%d matrices" % len(mats), 1, comp, 0.0, mine, note="compile %.1f s" % compile_s)
    lines.append("| torch.compile | %.4g | %.1f | %s |" % (comp[0], compile_s, "%.4g" % mine if mine else ""))


def documents(T, mean, seed):
    """Doc ids (inclusive count of EOTs) and each token's document start, for EOT-opened documents of
    lengths 1 + floor(Exp * (mean - 1)) (bench/attention_gpu's --doc_len rule, another RNG)."""
    r, doc, start, d, s, nxt = random.Random(seed), [], [], 0, 0, 0
    for t in range(T):
        if t == nxt:
            d, s = d + 1, t
            nxt += 1 + int(r.expovariate(1.0) * (mean - 1))
        doc.append(d)
        start.append(s)
    return doc, start


def admitted_pairs(T, block, window, start):
    """(query, key) pairs of impl/backend/attn_mask.h's rule: k <= q, same document, q/block - k/block < window."""
    total = 0
    for q in range(T):
        lo = start[q]
        if window > 0:
            lo = max(lo, (q // block - window + 1) * block)
        total += q - lo + 1
    return total


def part_flex(torch, time_ms, rep, cfg):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    H, D, blk = cfg["n_head"], cfg["head_dim"], cfg["attn_block"] or 128  # 128: bench/attention_gpu's default
    window = (cfg["window_end_tokens"] // blk) if cfg["window_start_tokens"] else 0
    rule = "k <= q, same document" + (", q/%d - k/%d < %d (the preset's final window)" % (blk, blk, window)
                                      if window > 0 else " (the preset has no window)")
    flex = torch.compile(flex_attention)
    # One mask function for every case, reading the documents of the case at hand: a new function
    # (a closure per case) would make torch.compile trace and compile again.
    cur = {}

    def mask_mod(b, h, q, k):
        inside = (q >= k) & (cur["doc"][q] == cur["doc"][k])
        return inside & (q // blk - k // blk < window) if window > 0 else inside
    lines = ["## FlexAttention (torch.compile'd) on the record's block mask", "",
             "B 1, %d heads of %d, bf16; %s; blocks of %d; documents EOT-opened, exponential lengths of mean %d, or "
             "none. TFLOP/s over the admitted pairs. `first call s`: the first forward, and the first forward + "
             "backward, each with its compilation." % (H, D, rule, blk, DOC_LEN), "",
             "| documents | T | pairs / head | mask build s | first call s (fwd, fwd+bwd) | fwd ms | TFLOP/s | bwd ms "
             "| TFLOP/s |", "|---|---|---|---|---|---|---|---|---|"]
    rep.sections.append(lines)
    for T in FLEX_T:
        for docs in (True, False):
            label = "mean %d" % DOC_LEN if docs else "none"
            try:
                doc, start = documents(T, DOC_LEN, 1) if docs else ([0] * T, [0] * T)
                pairs = H * admitted_pairs(T, blk, window, start)
                cur["doc"] = torch.tensor(doc, device="cuda", dtype=torch.int32)
                t0 = time.perf_counter()
                try:  # compiled, so the T x T mask is never made whole
                    bm = create_block_mask(mask_mod, None, None, T, T, device="cuda", BLOCK_SIZE=blk, _compile=True)
                except TypeError:  # a torch without that switch
                    bm = create_block_mask(mask_mod, None, None, T, T, device="cuda", BLOCK_SIZE=blk)
                torch.cuda.synchronize()
                build_s = time.perf_counter() - t0
                q, k, v, dout = (torch.randn(1, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=i < 3)
                                 for i in range(4))
                first = []
                for f in (lambda: flex(q, k, v, block_mask=bm),
                          lambda: torch.autograd.grad(flex(q, k, v, block_mask=bm), (q, k, v), dout)):
                    t0 = time.perf_counter()
                    f()
                    torch.cuda.synchronize()
                    first.append(time.perf_counter() - t0)
                fwd = time_ms(lambda: flex(q, k, v, block_mask=bm))
                both = time_ms(lambda: torch.autograd.grad(flex(q, k, v, block_mask=bm), (q, k, v), dout))
                bwd = [b - f for b, f in zip(both, fwd)]
                note = "docs %s; first calls %.1f s / %.1f s" % (label, first[0], first[1])
                rep.row("flex", "fwd", "T=%d" % T, 1, fwd, tflops(4.0 * D * pairs, fwd[0]), note=note)
                rep.row("flex", "bwd", "T=%d" % T, 1, bwd, tflops(10.0 * D * pairs, bwd[0]), note=note)
                lines.append("| %s | %d | %.4g | %.1f | %.1f, %.1f | %.4g | %.0f | %.4g | %.0f |" % (
                    label, T, pairs / H, build_s, first[0], first[1], fwd[0], tflops(4.0 * D * pairs, fwd[0]), bwd[0],
                    tflops(10.0 * D * pairs, bwd[0])))
                del q, k, v, dout, bm
            except Exception as e:
                rep.failures.append("flex T=%d docs %s: %s" % (T, label, one_line(e)))
            rep.write()


def one_line(e):
    return ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="folder of the train program")
    ap.add_argument("--preset", default="softcap")
    ap.add_argument("--scale", default="full")
    ap.add_argument("--seq_len", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--list-shapes", action="store_true")
    ap.add_argument("--ours")
    ap.add_argument("--out", default=".")
    ap.add_argument("--name", default="peers-gpu")
    a = ap.parse_args()
    cfg = model_config(a.build, a.preset, a.scale)
    B, T = a.batch or cfg["batch"], a.seq_len or cfg["seq_len"]
    if B < 1 or T < 1:
        die("--batch and --seq_len must be positive")
    if a.list_shapes:
        list_shapes(cfg, B, T)
        return
    ours = read_ours(a.ours) if a.ours and os.path.exists(a.ours) else {}
    import torch
    if not torch.cuda.is_available():
        die("torch %s sees no CUDA device" % torch.__version__)
    time_ms = timer(torch)
    gpu = torch.cuda.get_device_name(0)
    head = ["# PyTorch on this GPU at our step's shapes (bench/peers_gpu.py)", "",
            "- GPU: %s. torch %s, CUDA %s, cuDNN %s." % (gpu, torch.__version__, torch.version.cuda,
                                                         torch.backends.cudnn.version()),
            "- Shapes: preset %s, scale %s, B %d, T %d (model from `%s --help`)." % (
                a.preset, a.scale, B, T, os.path.join(a.build, "train")),
            "- Command: `%s`; %s UTC." % (" ".join(sys.argv), time.strftime("%Y-%m-%d %H:%M", time.gmtime())),
            "- Method: per case one warm-up call, then %d samples, each a run of back-to-back calls lasting >= %.0f ms "
            "between CUDA events; the median per call (min and max in the CSV)." % (SAMPLES, SAMPLE_S * 1e3)]
    rep = Report(a.out, a.name, head)
    rep.write()
    parts = (("gemm", lambda: part_gemm(torch, time_ms, rep, cfg, B, T, ours)),
             ("sdpa", lambda: part_sdpa(torch, time_ms, rep, cfg)),
             ("ns", lambda: part_ns(torch, time_ms, rep, cfg, ours)),
             ("flex", lambda: part_flex(torch, time_ms, rep, cfg)))
    for name, run in parts:
        t0 = time.perf_counter()
        try:
            run()
        except Exception as e:  # the next part still runs
            rep.failures.append("%s: %s" % (name, one_line(e)))
            traceback.print_exc()
        print("peers_gpu: %s done in %.1f s" % (name, time.perf_counter() - t0), file=sys.stderr, flush=True)
        rep.write()
    if rep.failures:
        sys.exit("peers_gpu: %d case(s) failed (the report's last section)" % len(rep.failures))


if __name__ == "__main__":
    main()
