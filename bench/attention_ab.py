#!/usr/bin/env python3
"""This build's attention bench against a baseline commit's, timed in the same job on the same GPU
(the GPU report's attention-ab stage: a bundle made with `make bundle BASELINE=REV` carries the
baseline's bench/attention_gpu). Why: a change is judged by a ratio measured side by side, where
two runs on two nodes differ by the node as well (their clocks, their neighbours).

  attention_ab.py --ours=CSV --baseline=CSV [--again=CSV] --out=MD

--again: this build's bench run once more, after the baseline's, with the same flags: this build's
time a row is then the geometric mean of its two runs, which bracket the baseline's in time, so that
a drift of the GPU's speed across the three (its clocks, its temperature) cancels to first order; and
the two runs' ratio, the same code timed twice, is a control for every form.

The CSVs are bench/attention_gpu's (one row a form, pass and length; the .md beside each names its
commit, command and machine). Rows are matched on the form (impl), the pass and the shape and mask
(B, T, NH, HD, block, window, docs); the forms only one side has are listed, not compared. A matched
row whose admitted pairs differ is refused (the two did not time the same mask). Writes MD: for
each form and pass, the baseline's and this build's median time a call and their ratio (baseline
over ours: above 1, faster now) by length, then the range of the ratios of the naive kernels, the
control where their code is the same at both commits (attention_naive.cu), which says how far the
measurement itself moves between the two runs.

A missing or malformed file, or a bad flag, is one error line naming it, exit 2, nothing written;
so is an --again that does not hold this build's rows (the same forms, lengths and pairs).
"""
import csv
import math
import os
import sys

KEY = ("impl", "pass", "B", "T", "NH", "HD", "block", "window", "docs")


def parse(argv):
    opts = {"ours": None, "baseline": None, "again": "", "out": None}
    for arg in argv:
        key, eq, val = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if key not in opts or not eq or not val:
            raise ValueError(f"{arg}: unknown flag or no value (known: {', '.join('--' + k + '=' for k in opts)})")
        opts[key] = val
    for key, val in opts.items():
        if val is None:
            raise ValueError(f"--{key}= is missing")
    return opts


def read_rows(path):
    """{key: (pairs, median ms)} of one bench CSV."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    if not rows or any(col not in rows[0] for col in KEY + ("pairs", "median_ms")):
        raise ValueError(f"{path}: not an attention_gpu CSV (columns {', '.join(KEY)}, pairs, median_ms)")
    table = {}
    for n, row in enumerate(rows, 2):
        try:
            key = tuple(row[c] if c in ("impl", "pass") else int(row[c]) for c in KEY)
            table[key] = (int(row["pairs"]), float(row["median_ms"]))
        except (TypeError, ValueError):
            raise ValueError(f"{path}: line {n}: not a number where one belongs") from None
    return table


def md_fact(csv_path, label):
    """The `label` line of the bench's .md beside the CSV (its commit, its machine), or 'unknown'."""
    md = os.path.splitext(csv_path)[0] + ".md"
    try:
        with open(md) as f:
            for line in f:
                if line.startswith(f"- {label}: "):
                    return line[len(label) + 4:].strip()
    except OSError:
        pass
    return "unknown"


def merge_again(ours, again, path):
    """This build's rows with each time the geometric mean of its two runs, and {(impl, pass, T):
    first / second}; an --again whose rows are not the first run's (forms, lengths, pairs) refused."""
    if set(again) != set(ours) or any(again[k][0] != ours[k][0] for k in ours):
        raise ValueError(f"{path}: not this build's rows again (the same forms, lengths and pairs as --ours)")
    merged = {k: (ours[k][0], math.sqrt(ours[k][1] * again[k][1])) for k in ours}
    return merged, {(k[0], k[1], k[3]): ours[k][1] / again[k][1] for k in ours}


def compare(ours, base):
    """The matched rows by (impl, pass): [(T, base ms, ours ms)], and the forms of one side only."""
    by_form, only = {}, set()
    for key in sorted(set(ours) | set(base), key=lambda k: (k[0], k[1], k[3])):
        if key not in ours or key not in base:
            only.add((key[0], key[1], "this build" if key in ours else "the baseline"))
            continue
        if ours[key][0] != base[key][0]:
            raise ValueError(f"{key[0]} {key[1]} at T {key[3]}: {ours[key][0]} pairs here, {base[key][0]} in the "
                             "baseline: not the same mask")
        by_form.setdefault((key[0], key[1]), []).append((key[3], base[key][1], ours[key][1]))
    return by_form, sorted(only)


def write(opts, by_form, only, twice):
    lines = [
        "# Attention against a baseline commit, timed in the same job",
        "",
        f"- This build: {md_fact(opts['ours'], 'Commit')}",
        f"- Baseline: {md_fact(opts['baseline'], 'Commit')}",
        f"- Machine: {md_fact(opts['ours'], 'Machine')}",
        "- Each side's median ms a call (bench/attention_gpu's); `base / ours`: the baseline's time over this "
        "build's (above 1: faster now)."
        + (" This build's time: the geometric mean of its runs before and after the baseline's; `1st / 2nd`: "
           "their ratio." if twice else ""),
        "",
    ]
    if twice:
        r = list(twice.values())
        lines += [f"Control, this build run twice (the same code, before and after the baseline): 1st / 2nd "
                  f"{min(r):.3f} to {max(r):.3f} over {len(r)} rows.", ""]
    control = [b / o for (impl, _), rows in by_form.items() if impl == "naive" for _, b, o in rows]
    if control:
        lines += [f"Control, the naive kernels (their code the same at both commits): base / ours "
                  f"{min(control):.3f} to {max(control):.3f} over {len(control)} rows.", ""]
    for (impl, pas), rows in sorted(by_form.items()):
        if impl == "naive":
            continue
        extra = (" 1st / 2nd |", "---|") if twice else ("", "")
        lines += [f"## {impl} {pas}", "", "| T | baseline ms | ours ms | base / ours |" + extra[0],
                  "|---|---|---|---|" + extra[1]]
        lines += [f"| {T} | {b:.4g} | {o:.4g} | {b / o:.3f} |" + (f" {twice[impl, pas, T]:.3f} |" if twice else "")
                  for T, b, o in rows]
        lines.append("")
    if only:
        lines += ["Not compared (one side only): " + ", ".join(f"{i} {p} ({side})" for i, p, side in
                                                                sorted(set(only))) + ".", ""]
    text = "\n".join(lines)
    tmp = opts["out"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, opts["out"])


def main(argv):
    try:
        opts = parse(argv)
        ours, twice = read_rows(opts["ours"]), {}
        if opts["again"]:
            ours, twice = merge_again(ours, read_rows(opts["again"]), opts["again"])
        by_form, only = compare(ours, read_rows(opts["baseline"]))
        if not by_form:
            raise ValueError(f"{opts['ours']} and {opts['baseline']}: no row in common")
        write(opts, by_form, only, twice)
    except ValueError as e:
        print(f"attention_ab.py: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"attention_ab.py: {opts['out']}: {e.strerror}", file=sys.stderr)
        return 2
    print(opts["out"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
