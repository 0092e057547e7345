#!/usr/bin/env python3
"""Reference trajectories of record #43's Muon (KellerJordan/modded-nanogpt,
records/track_1_short/2025-11-10_CautiousWD: Polar Express, NorMuon, cautious weight decay) for
verify/both/test_normuon_refdata.c, in float64 with torch, written here from the record's formulas
(not from our C code, not copied from the record):

  momentum (lerp form)  buf <- buf + (1 - mu) (g - buf);  u <- g + mu (buf - g)
  orthogonalize         polar express: X = u / (||u||_F * 1.02 + 1e-6) on the wide orientation, five
                        (a, b, c) triples X <- a X + (b A + c A^2) X, A = X X^T (the record's bf16 is
                        left out: this is the exact-arithmetic recipe); or the speedrun quintic
                        (3.4445, -4.7750, 2.0315) x 5 on X = u / (||u||_F + 1e-7)
  NorMuon               n0 = ||V||_F; m = mean of V^2 along the line axis (one value per row when
                        rows > cols, else per column, in (out, in) terms); v2 <- v2 + (1 - beta2)(m - v2);
                        V <- V / sqrt(max(v2, 1e-10)); V <- V * n0 / max(||V||_F, 1e-10)
  update                eff_lr = lr * sqrt(max(1, rows / cols)), eff_wd = lr * wd;
                        mask = (V * p >= 0) (cautious) or 1; V <- V + eff_wd * mask * p; p <- p - eff_lr V
  without NorMuon and weight decay (the polar_express case: softcap's Muon with the record's
  orthogonalizer): p <- p - lr * sqrt(max(1, rows / cols)) * O.

Inputs are formulas the C test evaluates too (k = tensor index, t = step, 0-based):
  shapes  (8, 8) square, (32, 8) tall, (8, 32) wide   ((out, in) = (rows, cols))
  param   p0[j]  = 0.5 sin(1.3 j + 0.7 k)
  grad    g_t[j] = 0.1 cos(0.9 j + 1.7 k + 2.3 t) + 0.01 (t + 1), except row 3 of the tall matrix,
          which is 0 at every step (a neuron without gradient: its update is exactly 0, the case
          where the cautious mask's ">= 0" decays and "> 0" would not)
  lr      0.05 times [1.0, 0.8, 0.55, 0.3][t] (a schedule), momentum 0.85 -> 0.95 over 3 steps
          (mu_t = (1 - f) 0.85 + f 0.95, f = min(t / 3, 1)), beta2 0.95, weight_decay 1.2
Each case writes refdata/normuon/<case>.f64: little-endian float64, the parameters after 4 steps
(tensor after tensor), then the momentum buffers, then (NorMuon cases) the second moments
(tensor after tensor, one per line). The cases named *_neg_* change one rule slightly (beta2 0.94,
the other axis, the mask's test "> 0" or "<= 0", eff_wd times the shape scale, Polar Express's
safety factor 1.0): the test proves its tolerance tells them from the record's.
Run: /usr/bin/python3 refdata/gen/normuon_ref.py refdata/normuon
"""
import math
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

SHAPES = [(8, 8), (32, 8), (8, 32)]
ZERO_ROW = (1, 3)  # (tensor, row) whose gradient is 0
STEPS = 4
LR, LR_MULT = 0.05, [1.0, 0.8, 0.55, 0.3]
MU_FROM, MU, MU_WARMUP = 0.85, 0.95, 3
WD = 1.2

QUINTIC = dict(triples=[(3.4445, -4.7750, 2.0315)] * 5, safety=1.0, eps=1e-7)
POLAR = dict(triples=[(8.156554524902461, -22.48329292557795, 15.878769915207462),
                      (4.042929935166739, -2.808917465908714, 0.5000178451051316),
                      (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
                      (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
                      (2.3465413258596377, -1.7097828382687081, 0.42323551169305323)],
             safety=1.02, eps=1e-6)


def param0(k):
    r, c = SHAPES[k]
    j = np.arange(r * c, dtype=np.float64)
    return torch.tensor(0.5 * np.sin(1.3 * j + 0.7 * k)).reshape(r, c)


def grad(k, t):
    r, c = SHAPES[k]
    j = np.arange(r * c, dtype=np.float64)
    g = torch.tensor(0.1 * np.cos(0.9 * j + 1.7 * k + 2.3 * t) + 0.01 * (t + 1)).reshape(r, c)
    if k == ZERO_ROW[0]:
        g[ZERO_ROW[1]] = 0
    return g


def orthogonalize(G, ns):
    tall = G.size(0) > G.size(1)
    X = G.T if tall else G
    X = X / (X.norm() * ns["safety"] + ns["eps"])
    for a, b, c in ns["triples"]:
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X.T if tall else X


def run(ns, normuon, wd, cautious, beta2=0.95, flip_axis=False, mask_rule=">=", wd_scaled=False):
    params = [param0(k) for k in range(len(SHAPES))]
    bufs = [torch.zeros_like(p) for p in params]
    v2s = [None] * len(SHAPES)
    for t in range(STEPS):
        f = min(t / MU_WARMUP, 1.0)
        mu = (1 - f) * MU_FROM + f * MU
        lr = LR * LR_MULT[t]
        for k, p in enumerate(params):
            g = grad(k, t)
            bufs[k] = torch.lerp(bufs[k], g, 1 - mu)
            u = torch.lerp(g, bufs[k], mu)
            V = orthogonalize(u, ns)
            rows, cols = p.shape
            scale = math.sqrt(max(1.0, rows / cols))
            if normuon:
                per_row = (rows > cols) != flip_axis
                n0 = V.norm()
                m = (V * V).mean(dim=1 if per_row else 0, keepdim=True)
                if v2s[k] is None:
                    v2s[k] = torch.zeros_like(m)
                v2s[k] = v2s[k] + (1 - beta2) * (m - v2s[k])
                V = V / v2s[k].clamp_min(1e-10).sqrt()
                V = V * (n0 / V.norm().clamp_min(1e-10))
            eff_lr, eff_wd = lr * scale, lr * wd * (scale if wd_scaled else 1.0)
            prod = V * p
            mask = {">=": prod >= 0, ">": prod > 0, "<=": prod <= 0}[mask_rule] if cautious else torch.ones_like(p, dtype=torch.bool)
            V = V + eff_wd * mask.to(p.dtype) * p
            params[k] = p - eff_lr * V
    out = [x.flatten() for x in params] + [x.flatten() for x in bufs]
    if normuon:
        out += [x.flatten() for x in v2s]
    return torch.cat(out)


REC43 = dict(ns=POLAR, normuon=True, wd=WD, cautious=True)
CASES = {
    "rec43": REC43,
    "normuon": dict(ns=QUINTIC, normuon=True, wd=0.0, cautious=False),
    "cautious_wd": dict(ns=QUINTIC, normuon=False, wd=WD, cautious=True),
    "plain_wd": dict(ns=QUINTIC, normuon=False, wd=WD, cautious=False),
    "polar_express": dict(ns=POLAR, normuon=False, wd=0.0, cautious=False),
    "rec43_neg_beta2": dict(REC43, beta2=0.94),
    "rec43_neg_axis": dict(REC43, flip_axis=True),
    "rec43_neg_mask_gt": dict(REC43, mask_rule=">"),
    "rec43_neg_mask_le": dict(REC43, mask_rule="<="),
    "rec43_neg_wd_scaled": dict(REC43, wd_scaled=True),
    "polar_express_neg_safety": dict(ns=dict(POLAR, safety=1.0), normuon=False, wd=0.0, cautious=False),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "refdata/normuon"
    os.makedirs(out, exist_ok=True)
    for name, kw in CASES.items():
        v = run(**kw).numpy().astype("<f8")
        v.tofile(os.path.join(out, name + ".f64"))
    print(f"normuon_ref: wrote {len(CASES)} cases to {out}/ (torch {torch.__version__})")


if __name__ == "__main__":
    main()
