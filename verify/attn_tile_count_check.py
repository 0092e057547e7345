#!/usr/bin/env python3
"""Checks of bench/attn_tile_count.py: its figures on a case counted by hand; its spans and its
tiles without the element mask against the mask's rule pair by pair (backend/attn_mask.h's
gm_attn_allowed, written again here) on small masks with windows, documents and a partial last
block; and one error line, exit 2, for a bad flag.

  attn_tile_count_check.py [NAME ...]   run the named checks (all by default)."""
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pycheck  # noqa: E402

TOOL = os.path.join(HERE, "..", "bench", "attn_tile_count.py")
spec = importlib.util.spec_from_file_location("attn_tile_count", TOOL)
tc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc)


def run(*args):
    p = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


# T 256, plain causal: items of rows 0-127 and 128-255. Block walks: 2 key tiles (0, 64) for each
# warpgroup of the first, 4 for each of the second: 12; element-masked: the first item's 2, the
# second's 2 (0 and 64 lie below row 128 and every row sees them) each: 8. Spans: rows 0-63 one
# tile (0, masked), 64-127 two (0 full, 64 masked), 128-191 three (128 masked), 192-255 four (192
# masked): 10, 4 masked. Longer walks (masked 1.33): 2.66 + 4.66 = 7.32 before, 2.33 + 4.33 = 6.66.
# dk/dv mirrors it (keys 0-63 four query tiles, 64-127 three, 128-191 two, 192-255 one).
def check_by_hand():
    rc, out, err = run("--T=256", "--window=0", "--partial=1.33")
    if rc != 0:
        raise AssertionError(f"exit {rc}: {err}")
    want = "warpgroup-tiles 12 -> 10 (16.7% fewer), element-masked 8 -> 4 (50% fewer); longer warpgroup's walk 0.910"
    lines = out.splitlines()
    if len(lines) != 3 or not all(want in line for line in lines[1:]):
        raise AssertionError(f"want both kernels' lines to hold {want!r}, got:\n{out}")


def allowed(o, doc, q, k):
    """backend/attn_mask.h's gm_attn_allowed."""
    if k > q or doc[q] != doc[k]:
        return False
    return not (o["window"] > 0 and q // o["block"] - k // o["block"] >= o["window"])


# Each warpgroup's span against the rule: its tiles are exactly those with an allowed pair among
# its rows inside T, and a tile it walks without the element mask has every pair allowed.
def check_spans_against_the_rule():
    for T, window, block, doc_len, seed in [(300, 3, 64, 40, 1), (333, 2, 5, 25, 2), (260, 0, 128, 0, 1),
                                            (450, 1, 128, 90, 3), (200, 7, 32, 0, 1)]:
        o = {"T": T, "window": window, "block": block, "doc_len": doc_len, "seed": seed, "partial": 1.0}
        start = tc.doc_starts(T, doc_len, seed)
        doc = [sum(1 for s in range(t + 1) if start[s] == s) for t in range(T)]
        lo, hi = tc.bounds(o)
        case = f"T {T} window {window} block {block} docs {doc_len}"
        for side, walks in (("query", tc.query_rows(lo, T)), ("key", tc.key_rows(hi, T))):
            for blk, ws in enumerate(walks):
                for w, (_, _, span, part) in enumerate(ws):
                    r0 = blk * tc.ROWS + tc.WG_ROWS * w
                    rows = range(r0, min(r0 + tc.WG_ROWS, T))
                    pair = (lambda r, c: allowed(o, doc, r, c)) if side == "query" else \
                        (lambda r, c: allowed(o, doc, c, r))
                    seen = [t for t in range(0, T, tc.TILE)
                            if any(pair(r, c) for r in rows for c in range(t, min(t + tc.TILE, T)))]
                    if span != seen:
                        raise AssertionError(f"{case}: {side} rows {r0}..: span {span}, the rule sees {seen}")
                    # (a key past T is never seen; a query past T is padding, its P 0 in the backward)
                    cols = (lambda t: range(t, t + tc.TILE)) if side == "query" else \
                        (lambda t: range(t, min(t + tc.TILE, T)))
                    full = [t for t in seen if all(c < T and pair(r, c) for r in rows for c in cols(t))]
                    unmasked = [t for t in span if t not in part]
                    if not set(unmasked) <= set(full):
                        raise AssertionError(f"{case}: {side} rows {r0}..: tiles {unmasked} unmasked, the rule "
                                             f"allows every pair in {full} only")


def check_bad_flag():
    for args, name in [(["--bogus=1"], "--bogus=1"), (["--T=x"], "--T"), (["--window=-1"], "--window")]:
        rc, out, err = run(*args)
        if rc != 2 or out or len(err.splitlines()) != 1 or name not in err:
            raise AssertionError(f"{args}: want exit 2 and one line naming {name}, got {rc}: {err!r}")


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
