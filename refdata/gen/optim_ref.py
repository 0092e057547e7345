#!/usr/bin/env python3
"""Reference optimizer trajectories for verify/test_optim_refdata.c, computed with PyTorch.

Adam and AdamW are torch.optim's own. Muon is written here independently of the C code, from the
records' description (momentum, Nesterov, orthogonalize, shape scale), in float32 with an fp32
Newton-Schulz (no bf16), so the C optimizer in its fp32 mode must match it.

Inputs are formulas both sides evaluate in double and round to float32:
    param  p0[j] = 0.5 * sin(1.3 * j + 0.7 * k)         (k = tensor index)
    grad   g_t[j] = 0.1 * cos(0.9 * j + 1.7 * k + 2.3 * t) + 0.01 * (t + 1)    (t = step, 0-based)
Each case writes refdata/optim/<case>.f32: the float32 little-endian concatenation of every tensor
after 3 steps. Run: /usr/bin/python3 refdata/gen/optim_ref.py refdata/optim
"""
import math
import os
import sys

import numpy as np
import torch

STEPS = 3
SHAPES = [(5, 7), (3,), (12, 8), (8, 12), (24, 8)]


def init(shape, k):
    n = int(np.prod(shape))
    j = np.arange(n, dtype=np.float64)
    return torch.tensor((0.5 * np.sin(1.3 * j + 0.7 * k)).astype(np.float32).reshape(shape))


def grad(shape, k, t):
    n = int(np.prod(shape))
    j = np.arange(n, dtype=np.float64)
    g = 0.1 * np.cos(0.9 * j + 1.7 * k + 2.3 * t) + 0.01 * (t + 1)
    return torch.tensor(g.astype(np.float32).reshape(shape))


def run_torch(opt_cls, kwargs, shapes, normalize_grad=False):
    params = [init(s, k).requires_grad_(True) for k, s in enumerate(shapes)]
    opt = opt_cls(params, **kwargs)
    for t in range(STEPS):
        for k, p in enumerate(params):
            g = grad(p.shape, k, t)
            if normalize_grad:
                g = g / (g.norm() + 1e-6)
            p.grad = g
        opt.step()
    return [p.detach() for p in params]


def newton_schulz(G, steps=5, eps=1e-7, dtype=torch.float32):
    """The speedrun's quintic on the wide orientation; dtype bf16 as the records run it on GPUs
    (bench/peers_model.py times both), fp32 for the reference trajectories."""
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = (G / (G.norm() + eps)).to(dtype)
    transposed = X.size(0) > X.size(1)
    if transposed:
        X = X.T
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * (A @ A)) @ X
    return (X.T if transposed else X).to(G.dtype)


def run_muon(first, lr, mu, nesterov, ema, scale_rule, split_qkv):
    """Muon on the matrices SHAPES[first:], tensor index k counted in SHAPES."""
    shapes = SHAPES[first:]
    params = [init(s, first + i) for i, s in enumerate(shapes)]
    bufs = [torch.zeros_like(p) for p in params]
    for t in range(STEPS):
        for i, p in enumerate(params):
            k = first + i
            g = grad(p.shape, k, t)
            if ema:
                bufs[i] = mu * bufs[i] + (1 - mu) * g
                u = (1 - mu) * g + mu * bufs[i] if nesterov else bufs[i]
            else:
                bufs[i] = mu * bufs[i] + g
                u = g + mu * bufs[i] if nesterov else bufs[i]
            blocks = u.chunk(3, dim=0) if split_qkv and u.size(0) == 3 * u.size(1) else [u]
            outs = []
            for blk in blocks:
                r, c = blk.shape
                if scale_rule == "sqrt_max":
                    s = math.sqrt(max(r, c))
                elif scale_rule == "aspect":
                    s = math.sqrt(max(1.0, r / c))
                else:
                    s = 1.0
                outs.append(s * newton_schulz(blk))
            params[i] = p - lr * torch.cat(outs, dim=0)
    return params


def save(out_dir, name, tensors):
    data = np.concatenate([t.numpy().astype("<f4").ravel() for t in tensors])
    path = os.path.join(out_dir, name + ".f32")
    tmp = path + ".tmp"
    data.tofile(tmp)
    os.replace(tmp, path)


def main():
    out = sys.argv[1]
    torch.set_num_threads(1)
    save(out, "adamw", run_torch(torch.optim.AdamW, dict(lr=0.0018, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), SHAPES, normalize_grad=True))
    save(out, "adam", run_torch(torch.optim.Adam, dict(lr=0.6, betas=(0.8, 0.95), eps=1e-8), SHAPES))
    save(out, "muon_sum_sqrtmax_qkv", run_muon(2, 0.00036 * 10, 0.95, True, False, "sqrt_max", True))
    save(out, "muon_ema_aspect", run_muon(2, 0.05, 0.9, True, True, "aspect", False))
    save(out, "muon_sum_plain", run_muon(2, 0.018, 0.95, False, False, "none", False))


if __name__ == "__main__":
    main()
