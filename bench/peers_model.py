"""The training step of a preset in plain PyTorch eager (fp32, CPU), for bench/peers.py: the same
model and optimizers as build/train runs, built from the configuration build/train prints (the
"config" object of the first line of its log.jsonl), so the shapes cannot drift from the C model.

Written for this repository from refdata/records/PRESETS.md (the records' architecture); it is a
timing peer, not a numerical reference (refdata/gen/ref_model.py is that). What it leaves out is
what does not cost time at the benchmark's shapes: initialisation values (random N(0, 0.02)) and
the sliding attention window (at T <= 128 every window of >= 1 block admits the whole causal
document, so only the causal and document masks are built).
"""
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

# The speedrun's Newton-Schulz quintic, as refdata/gen/optim_ref.py writes it (dtype: bf16 as the
# records run it, or fp32).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "refdata", "gen"))
from optim_ref import newton_schulz  # noqa: E402


def rms(x, eps):
    # F.rms_norm (PyTorch >= 2.4) without weight, written out for Debian's 1.13
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rotary_tables(T, hd, base, truncated):
    half = hd // 2
    if truncated:  # record #18: hd/4 frequencies (1/base)^linspace(0, 1), then zeros
        q = hd // 4
        freq = torch.cat([(1.0 / base) ** torch.linspace(0, 1, q), torch.zeros(half - q)])
    else:
        freq = 1.0 / base ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    theta = torch.outer(torch.arange(T, dtype=torch.float32), freq)  # (T, hd/2)
    return theta.cos()[None, :, None, :], theta.sin()[None, :, None, :]


def rotate(x, cos, sin):  # x (B, T, H, hd), half-split pairs
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos + x2 * sin, -x1 * sin + x2 * cos], dim=-1)


def linear(i, o):
    m = nn.Linear(i, o, bias=False)
    nn.init.normal_(m.weight, std=0.02)
    return m


class Block(nn.Module):
    def __init__(self, c, layer):
        super().__init__()
        C, H = c["d_model"], c["d_mlp"]
        self.c, self.layer = c, layer
        self.has_attn = not (c["skip_attn_mask"] >> layer) & 1
        if self.has_attn:
            if c["qkv_fused"]:
                self.c_attn = linear(C, 3 * C)
            else:
                self.c_q, self.c_k, self.c_v = linear(C, C), linear(C, C), linear(C, C)
            self.c_proj = linear(C, C)
            if c["n_value_embeds"]:
                self.attn_lambdas = nn.Parameter(torch.tensor([0.5, 0.5]))
        self.c_fc, self.mlp_proj = linear(C, H), linear(H, C)
        if c["x0_lambdas"]:
            self.lambdas = nn.Parameter(torch.tensor([1.0, 0.0]))

    def attention(self, h, ve, cos, sin, mask):
        c = self.c
        B, T, C = h.shape
        NH, HD = c["n_head"], c["head_dim"]
        if c["qkv_fused"]:
            q, k, v = self.c_attn(h).split(C, dim=-1)
        else:
            q, k, v = self.c_q(h), self.c_k(h), self.c_v(h)
        q, k, v = (t.view(B, T, NH, HD) for t in (q, k, v))
        if c["n_value_embeds"]:
            v = self.attn_lambdas[0] * v + (self.attn_lambdas[1] * ve.view(B, T, NH, HD) if ve is not None else 0)
        if c["qk_norm"]:
            q, k = rms(q, c["norm_eps"]), rms(k, c["norm_eps"])
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, NH, T, HD)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        y = s.masked_fill(~mask[:, None], float("-inf")).softmax(-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    def forward(self, x, x0, ve, cos, sin, mask):
        c = self.c
        if c["x0_lambdas"]:
            x = self.lambdas[0] * x + self.lambdas[1] * x0
        if self.has_attn:
            branch = 1.0 / math.sqrt(2 * c["n_layer"]) if c["branch_scale_depth"] else 1.0
            x = x + branch * self.attention(rms(x, c["norm_eps"]), ve, cos, sin, mask)
        a = self.c_fc(rms(x, c["norm_eps"]))
        a = F.gelu(a) if c["mlp_act"] == "gelu" else F.relu(a).square()
        return x + self.mlp_proj(a)


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        Vp, C, L = c["vocab_padded"], c["d_model"], c["n_layer"]
        self.lm_head = linear(C, Vp)
        if not c["tied_head"]:
            self.embed = nn.Embedding(Vp, C)
        self.value_embeds = nn.ModuleList([nn.Embedding(Vp, C) for _ in range(c["n_value_embeds"])])
        self.blocks = nn.ModuleList([Block(c, l) for l in range(L)])
        if c["unet_skips"]:
            self.skip_weights = nn.Parameter(torch.ones(L // 2))

    def ve_index(self, l):  # which value-embedding table layer l mixes in (None: none)
        n, L = self.c["n_value_embeds"], self.c["n_layer"]
        if n == 0:
            return None
        if l < n:
            return l
        if l >= L - n:
            return L - 1 - l if self.c["ve_pattern"] == "unet" else l - (L - n)
        return None

    def forward(self, ids, targets):
        c = self.c
        B, T = ids.shape
        eps = c["norm_eps"]
        wte = self.lm_head.weight if c["tied_head"] else self.embed.weight
        x = F.embedding(ids, wte)
        if c["embed_norm"]:
            x = rms(x, eps)
        x0 = x
        ves = [e(ids) for e in self.value_embeds]
        cos, sin = rotary_tables(T, c["head_dim"], c["rotary_base"], c["rotary_half_truncated"])
        causal = torch.ones(T, T, dtype=torch.bool).tril()[None]
        if c["doc_mask"]:
            doc = torch.cumsum((ids == c["eot"]).long(), dim=1)
            mask = causal & (doc[:, :, None] == doc[:, None, :])
        else:
            mask = causal.expand(B, T, T)

        def run(l, x):
            j = self.ve_index(l)
            return self.blocks[l](x, x0, ves[j] if j is not None else None, cos, sin, mask)

        L = c["n_layer"]
        if c["unet_skips"]:
            stack = []
            for l in range(L // 2):
                x = run(l, x)
                stack.append(x)
            for i in range(L // 2):
                x = run(L // 2 + i, x + self.skip_weights[i] * stack.pop())
        else:
            for l in range(L):
                x = run(l, x)
        logits = self.lm_head(rms(x, eps))
        cap = c["softcap"]
        if cap > 0:
            logits = cap * torch.tanh(logits / cap)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class Muon(torch.optim.Optimizer):
    """Muon as build/train runs the preset: momentum (sum or EMA, Nesterov), Newton-Schulz, the
    preset's shape scale, p -= lr * scale * O."""

    def __init__(self, params, c, ns_dtype):
        super().__init__(params, dict(lr=c["lr_matrix"]))
        self.c, self.ns_dtype = c, ns_dtype

    @torch.no_grad()
    def step(self):
        c = self.c
        mu, ema = c["muon_momentum"], c["muon_momentum_form"] == "ema"
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                buf = self.state[p].setdefault("buf", torch.zeros_like(p))
                if ema:
                    buf.lerp_(g, 1 - mu)
                    u = g.lerp(buf, mu) if c["muon_nesterov"] else buf
                else:
                    buf.mul_(mu).add_(g)
                    u = g.add(buf, alpha=mu) if c["muon_nesterov"] else buf
                rows, cols = p.shape
                scale = {"none": 1.0, "sqrt-max": math.sqrt(max(rows, cols)),
                         "aspect": math.sqrt(max(1.0, rows / cols))}[c["muon_scale"]]
                p.add_(newton_schulz(u, c["ns_steps"], dtype=self.ns_dtype), alpha=-group["lr"] * scale)


def optimizers(model, c, ns_dtype=torch.float32):
    """The preset's split: block matrices to Muon (or AdamW for the adamw preset), the rest Adam."""
    mats = [p for n, p in model.named_parameters() if n.startswith("blocks.") and p.ndim == 2]
    rest = [p for n, p in model.named_parameters() if not (n.startswith("blocks.") and p.ndim == 2)]
    betas = (c["adam_beta1"], c["adam_beta2"])
    if c["matrix_opt"] == "adam":
        return [torch.optim.AdamW(mats + rest, lr=c["lr_matrix"], betas=betas, eps=c["adam_eps"],
                                  weight_decay=c["weight_decay"])]
    return [torch.optim.Adam(rest, lr=c["lr_scalar"], betas=betas, eps=c["adam_eps"]), Muon(mats, c, ns_dtype)]


def train_step(model, opts, ids, targets, normalize_grad):
    for o in opts:
        o.zero_grad(set_to_none=True)
    loss = model(ids, targets)
    loss.backward()
    if normalize_grad:  # the AdamW baseline: g / (||g|| + 1e-6) per tensor
        with torch.no_grad():
            for p in model.parameters():
                p.grad.div_(p.grad.norm() + 1e-6)
    for o in opts:
        o.step()
    return loss.item()
