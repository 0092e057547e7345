#!/usr/bin/python3
"""PyTorch reference for one preset at test scale: an independent implementation of the model
described in refdata/records/PRESETS.md, run in float64 with autograd.

usage: ref_model.py IN_DIR OUT_DIR
IN_DIR holds what build/dump_refmodel writes (meta.txt, params.txt, params.bin, tokens.bin).
OUT_DIR/ref.bin receives little-endian float32: the mean loss, the logits (N, Vp) before the
softcap, then the gradient of the loss for every tensor of params.txt, in that order, unpadded.
With a sliding window of w = window_blocks > 0 blocks, OUT_DIR/window_<v>.bin receives the loss and
the logits under the neighbouring windows v = w - 1 and w + 1, which the tests use to show that
the reference pins the window rule.
"""
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F


def read_meta(path):
    meta = {}
    for line in open(path):
        key, _, value = line.partition(" = ")
        meta[key.strip()] = value.strip()
    return meta


def rms(x, eps):
    # F.rms_norm without weight (PyTorch >= 2.4); written out for older versions
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def record16_inv_freq(hd, base):
    """Record #16's inv_freq buffer as its Rotary.__init__ computes it: fp32 (default dtype)."""
    return (1 / base) ** (torch.arange(0, hd, 2) / hd)


def rotary_tables(T, hd, base, truncated, bf16):
    half = hd // 2
    if bf16:  # record #16: the buffer is rounded to bf16 by model.bfloat16()
        freq = record16_inv_freq(hd, base).bfloat16().double()
    elif truncated:  # record #18: (1/base)^linspace(0, 1, hd/4), then hd/4 zero frequencies
        q = hd // 4
        freq = torch.cat([(1.0 / base) ** torch.linspace(0, 1, q, dtype=torch.float64),
                          torch.zeros(half - q, dtype=torch.float64)])
    else:
        freq = 1.0 / base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    theta = torch.outer(torch.arange(T, dtype=torch.float64), freq)  # (T, hd/2)
    return theta.cos(), theta.sin()


def rotate(x, cos, sin):  # x (B, T, H, hd), half-split pairs
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c + x2 * s, -x1 * s + x2 * c], dim=-1)


def allowed_mask(ids, eot, block, window):  # (B, T, T) bool, the token-level rule
    B, T = ids.shape
    doc = torch.cumsum((ids == eot).long(), dim=1)
    qi = torch.arange(T)[:, None]
    ki = torch.arange(T)[None, :]
    m = (ki <= qi)[None].expand(B, T, T).clone()
    m &= doc[:, :, None] == doc[:, None, :]
    if window > 0:
        m &= ((qi // block) - (ki // block) < window)[None]
    return m


def main():
    in_dir, out_dir = sys.argv[1], sys.argv[2]
    meta = read_meta(f"{in_dir}/meta.txt")
    I = lambda k: int(meta[k])
    Fl = lambda k: float(meta[k])
    B, T, C, L = I("batch"), I("seq_len"), I("d_model"), I("n_layer")
    NH, HD, Vp = I("n_head"), I("head_dim"), I("vocab_padded")
    eps = Fl("norm_eps")

    raw = np.fromfile(f"{in_dir}/params.bin", dtype=np.float32)
    names, P = [], {}
    for line in open(f"{in_dir}/params.txt"):
        name, rows, cols, off = line.split()
        rows, cols, off = int(rows), int(cols), int(off)
        t = torch.tensor(raw[off:off + rows * cols].astype(np.float64)).reshape(rows, cols) if cols > 1 else \
            torch.tensor(raw[off:off + rows].astype(np.float64))
        t.requires_grad_(True)
        names.append(name)
        P[name] = t
    tok = torch.tensor(np.fromfile(f"{in_dir}/tokens.bin", dtype=np.int32).astype(np.int64))
    ids, tgt = tok[:-1].reshape(B, T), tok[1:].reshape(B, T)

    def forward(window):  # (loss, logits before the softcap) under a window of `window` blocks
        tied = I("tied_head") == 1
        wte = P["lm_head"] if tied else P["embed"]
        head = P["lm_head"]
        x = F.embedding(ids, wte)
        if I("embed_norm"):
            x = rms(x, eps)
        x0 = x
        n_ve = I("n_value_embeds")
        ves = [F.embedding(ids, P[f"value_embeds.{j}"]) for j in range(n_ve)]

        def ve_index(l):
            if n_ve == 0:
                return None
            if l < n_ve:
                return l
            if l >= L - n_ve:
                return L - 1 - l if meta["ve_pattern"] == "unet" else l - (L - n_ve)
            return None

        # the presets' exact positions; eager-bf16's tables are checked by rotary_eager_ref.py's
        assert meta["rotary_positions"] == "exact", "ref_model.py implements rotary_positions = exact only"
        cos, sin = rotary_tables(T, HD, Fl("rotary_base"), I("rotary_half_truncated") == 1, I("rotary_bf16") == 1)
        mask = allowed_mask(ids, I("eot"), I("attn_block"), window) if I("doc_mask") else allowed_mask(ids, -1, 1, 0)
        branch = 1.0 / math.sqrt(2 * L) if I("branch_scale_depth") else 1.0
        skip_attn = I("skip_attn_mask")

        def attention(l, h):
            pre = f"h.{l}.attn."
            if pre + "c_attn" in P:
                q, k, v = (h @ P[pre + "c_attn"].t()).split(C, dim=-1)
            else:
                q, k, v = h @ P[pre + "c_q"].t(), h @ P[pre + "c_k"].t(), h @ P[pre + "c_v"].t()
            q, k, v = (t.reshape(B, T, NH, HD) for t in (q, k, v))
            if n_ve:
                lam = P[pre + "lambdas"]
                j = ve_index(l)
                v = lam[0] * v + (lam[1] * ves[j].reshape(B, T, NH, HD) if j is not None else 0)
            if I("qk_norm"):
                q, k = rms(q, eps), rms(k, eps)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(HD)
            s = s.masked_fill(~mask[:, None], float("-inf"))
            y = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v).reshape(B, T, C)
            return y @ P[pre + "c_proj"].t()

        def mlp(l, h):
            a = h @ P[f"h.{l}.mlp.c_fc"].t()
            a = F.gelu(a) if meta["mlp_act"] == "gelu" else F.relu(a).square()
            return a @ P[f"h.{l}.mlp.c_proj"].t()

        def block(l, x):
            if I("x0_lambdas"):
                lam = P[f"h.{l}.lambdas"]
                x = lam[0] * x + lam[1] * x0
            if not (skip_attn >> l) & 1:
                x = x + branch * attention(l, rms(x, eps))
            return x + mlp(l, rms(x, eps))

        if I("unet_skips"):
            stack = []
            for l in range(L // 2):
                x = block(l, x)
                stack.append(x)
            for i in range(L // 2):
                x = x + P["skip_weights"][i] * stack.pop()
                x = block(L // 2 + i, x)
        else:
            for l in range(L):
                x = block(l, x)
        x = rms(x, eps)
        logits = x @ head.t()  # (B, T, Vp)
        cap = Fl("softcap")
        z = cap * torch.tanh(logits / cap) if cap > 0 else logits
        loss = F.cross_entropy(z.reshape(-1, Vp), tgt.reshape(-1))
        return loss, logits

    window = I("window_blocks")
    loss, logits = forward(window)
    loss.backward()
    parts = [np.array([loss.item()]), logits.detach().reshape(-1).numpy()]
    parts += [P[n].grad.reshape(-1).numpy() for n in names]
    np.concatenate(parts).astype("<f4").tofile(f"{out_dir}/ref.bin")
    print(f"{meta['preset']}: loss {loss.item():.6f}, {sum(p.size for p in parts)} values")
    if window > 0:
        with torch.no_grad():
            for v in (window - 1, window + 1):
                loss_v, logits_v = forward(v)
                np.concatenate([[loss_v.item()], logits_v.reshape(-1).numpy()]).astype("<f4").tofile(
                    f"{out_dir}/window_{v}.bin")
                diff = (logits_v - logits).norm() / logits.norm()
                print(f"{meta['preset']}: window {v} instead of {window}: loss {loss_v.item():.6f}, "
                      f"logits differ by {diff.item():.2e} relative")


if __name__ == "__main__":
    main()
