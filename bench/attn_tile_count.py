#!/usr/bin/env python3
"""How many tiles the attention kernels of impl/backend/cuda/attention_mma.cu walk on a mask: a
count, not a measurement. For the forward and dq kernels (items of 128 query rows, key tiles of 64)
and the dk/dv kernel (blocks of 128 keys, query tiles of 64), per warpgroup of 64 rows:
  block   the tiles of the rows' block (what each warpgroup walked up to 2026-11-28, and what the
          mma.sync kernels and the one-pass backward still walk);
  span    the tiles its own 64 rows see (the wgmma kernels' spans: fwd_wg_span and the like);
each with how many take the element mask (not tile_full, asked of the block's rows or of the
warpgroup's), and the longer walk of a block's two warpgroups, which bounds a block alone on its
SM (a tile with the element mask weighed --partial). The forward at head_dim 64 walks its first
warpgroup's last, fully masked, tile as before (FWD_TRAIL); that is not counted here.

Mask as backend/attn_mask.h: causal; a sliding window of --window blocks of --block tokens (0: none;
a query sees the keys from the start of the block window - 1 blocks before its own); documents with
--doc_len L > 0, EOT-opened, of exponential lengths of mean L drawn with --seed (the distribution of
bench/attention_gpu's documents, not its draw). Rows past T: a partial last item or block.

  attn_tile_count.py [--T=65536] [--window=14] [--block=128] [--doc_len=0] [--seed=1]
                     [--partial=1.33]

A flag out of range or unknown is one error line naming it, exit 2.
"""
import math
import random
import sys

ROWS, TILE, WG_ROWS = 128, 64, 64  # a block's rows, a tile's, a warpgroup's


def parse(argv):
    opts = {"T": 65536, "window": 14, "block": 128, "doc_len": 0, "seed": 1, "partial": 1.33}
    for arg in argv:
        key, eq, val = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if key not in opts or not eq:
            raise ValueError(f"{arg}: unknown flag (known: {', '.join('--' + k for k in opts)})")
        try:
            opts[key] = float(val) if key == "partial" else int(val)
        except ValueError:
            raise ValueError(f"--{key}: not a number: {val!r}") from None
    if opts["T"] < 1 or opts["block"] < 1 or opts["window"] < 0 or opts["doc_len"] < 0 or opts["partial"] < 1:
        raise ValueError("--T and --block must be >= 1, --window and --doc_len >= 0, --partial >= 1")
    return opts


def doc_starts(T, doc_len, seed):
    """The first token of each token's document (0 everywhere without documents)."""
    start, rng, first, nxt = [0] * T, random.Random(seed), 0, 0
    for t in range(T):
        if doc_len and t == nxt:
            first = t
            nxt += 1 + int(-math.log(1.0 - rng.random()) * (doc_len - 1))
        start[t] = first
    return start


def bounds(o):
    """lo[q]: query q's first key; hi[k]: one past key k's last query (attention_mma_mask.cuh's bounds)."""
    T, W, blk = o["T"], o["window"], o["block"]
    start = doc_starts(T, o["doc_len"], o["seed"])
    end, nxt = [T] * T, T
    for t in range(T - 1, -1, -1):
        end[t] = nxt
        if start[t] == t:
            nxt = t
    lo = [max(start[q], ((q // blk - W + 1) * blk) if W else 0, 0) for q in range(T)]
    hi = [min(end[k], ((k // blk + W) * blk) if W else T, T) for k in range(T)]
    return lo, hi


def query_rows(lo, T):
    """Forward and dq: per item, each warpgroup's tiles (their first keys): (its block's, those of
    them with the element mask, its span's, those of them with the element mask)."""
    out = []
    for q0 in range(0, T, ROWS):
        qlast = min(q0 + ROWS, T) - 1
        kbeg = lo[q0] // TILE * TILE
        tiles = range(kbeg, qlast + 1, TILE)
        walks = []
        for w in range(2):
            r0, rlast = q0 + WG_ROWS * w, min(q0 + WG_ROWS * w + WG_ROWS - 1, qlast)
            blk = [k0 for k0 in tiles if not (k0 + TILE - 1 <= q0 and lo[qlast] <= k0)]
            if r0 > qlast:
                walks.append((list(tiles), blk, [], []))
                continue
            row0 = r0 if r0 + WG_ROWS - 1 <= qlast else q0  # rows past T: the block's rule
            span = range(lo[r0] // TILE * TILE, rlast // TILE * TILE + 1, TILE)
            part = [k0 for k0 in span if not (k0 + TILE - 1 <= row0 and lo[rlast] <= k0)]
            walks.append((list(tiles), blk, list(span), part))
        out.append(walks)
    return out


def key_rows(hi, T):
    """dk/dv: per block of keys, each warpgroup's tiles (their first queries) as query_rows'."""
    out = []
    for k0 in range(0, T, ROWS):
        klast = min(k0 + ROWS, T) - 1
        tiles = range(k0, hi[klast], TILE)
        walks = []
        for w in range(2):
            kw = k0 + WG_ROWS * w
            blk = [qa for qa in tiles if not (k0 + ROWS - 1 <= qa and hi[k0] > min(qa + TILE, T) - 1)]
            if kw > klast:
                walks.append((list(tiles), blk, [], []))
                continue
            kl = min(kw + WG_ROWS - 1, klast)
            span = range(kw // TILE * TILE, hi[kl], TILE)
            part = [qa for qa in span if not (kw + WG_ROWS - 1 <= qa and hi[kw] > min(qa + TILE, T) - 1)]
            walks.append((list(tiles), blk, list(span), part))
        out.append(walks)
    return out


def summary(walks, partial):
    """Totals over the blocks: tiles and element-masked tiles walked (block, span), and the sum of
    each block's longer warpgroup walk (tiles weighed: 1, or `partial` with the element mask)."""
    tot = [0, 0, 0, 0]
    crit_block = crit_span = 0.0
    for ws in walks:
        n = [[len(x) for x in w] for w in ws]
        for w in n:
            tot = [a + b for a, b in zip(tot, w)]
        crit_block += max(w[0] - w[1] + partial * w[1] for w in n)
        crit_span += max(w[2] - w[3] + partial * w[3] for w in n)
    return tot, crit_block, crit_span


def report(o):
    lo, hi = bounds(o)
    T, lines = o["T"], []
    lines.append(f"T {T}, " + (f"window {o['window']} blocks of {o['block']}, " if o["window"] else "no window, ")
                 + (f"documents of mean {o['doc_len']} (seed {o['seed']})" if o["doc_len"] else "no documents")
                 + f"; a partially masked tile weighs {o['partial']:g}")
    for name, walks in (("forward, dq", query_rows(lo, T)), ("dk/dv", key_rows(hi, T))):
        (bt, bp, st, sp), cb, cs = summary(walks, o["partial"])
        lines.append(f"{name}: warpgroup-tiles {bt} -> {st} ({1 - st / bt:.1%} fewer), element-masked {bp} -> {sp} "
                     f"({1 - sp / bp if bp else 0:.0%} fewer); longer warpgroup's walk {cs / cb:.3f} of before")
    return "\n".join(lines)


def main(argv):
    try:
        opts = parse(argv)
    except ValueError as e:
        print(f"attn_tile_count.py: {e}", file=sys.stderr)
        return 2
    print(report(opts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
