#!/usr/bin/env python3
"""Turn the repro runs' JSON-lines logs into reports/repro/: table.md (validation loss mean and std
per preset at every validation point, tokens to reach the adamw preset's final loss), curves.dat
(mean and std per preset and token count, for gnuplot) and README.md (what, how, where).
Only figures read from the logs appear; nothing is typed in by hand."""
import argparse
import glob
import json
import math
import os
import platform
import subprocess


def read_log(path):
    start, vals, end = None, [], None
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            ev = rec.get("event")
            if ev == "start":
                start = rec
            elif ev == "val":
                vals.append((rec["tokens"], rec["val_loss"]))
            elif ev in ("end", "interrupted"):
                end = rec
    return start, vals, end


def mean_std(xs):
    m = sum(xs) / len(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, s


def tokens_to_reach(curve, target):
    """First token count where the (mean) val loss is <= target, linearly interpolated; None if never."""
    prev = None
    for tok, loss in curve:
        if loss <= target:
            if prev is None:
                return tok
            t0, l0 = prev
            return t0 + (tok - t0) * (l0 - target) / (l0 - loss) if l0 != loss else tok
        prev = (tok, loss)
    return None


def main():
    ap = argparse.ArgumentParser()
    for k in ("runs", "out", "budget", "scale", "seeds", "elapsed", "presets"):
        ap.add_argument("--" + k, required=True)
    a = ap.parse_args()
    presets = a.presets.split()
    curves, rows, hw, commit, speed = {}, [], None, None, {}
    for p in presets:
        logs = sorted(glob.glob(os.path.join(a.runs, p, "seed*", "log.jsonl")))
        if not logs:
            raise SystemExit("repro_report: no logs for preset %s under %s" % (p, a.runs))
        per_seed = []
        for path in logs:
            start, vals, end = read_log(path)
            if end is None:
                raise SystemExit("repro_report: %s: run did not finish" % path)
            hw, commit = start["hardware"], start["git_commit"]
            per_seed.append(vals)
            speed.setdefault(p, []).append(end["tokens_per_s"])
        points = sorted({t for vals in per_seed for t, _ in vals})
        curve = []
        for t in points:
            xs = [l for vals in per_seed for tt, l in vals if tt == t]
            if len(xs) == len(per_seed):
                curve.append((t, *mean_std(xs)))
        curves[p] = curve
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "curves.dat"), "w") as f:
        for p in presets:
            f.write("# %s: tokens mean std\n" % p)
            for t, m, s in curves[p]:
                f.write("%d %.6f %.6f\n" % (t, m, s))
            f.write("\n\n")
    with open(os.path.join(a.out, "curves.presets"), "w") as f:
        f.write(" ".join(presets) + "\n")
    base = curves.get("adamw")
    target = base[-1][1] if base else None
    base_tokens = tokens_to_reach([(t, m) for t, m, _ in base], target) if base else None
    points = [t for t, _, _ in curves[presets[0]]]
    marks = sorted({points[len(points) // 3], points[2 * len(points) // 3], points[-1]})
    lines = ["| preset | " + " | ".join("val loss @ %d tok" % t for t in marks) + " | tokens to adamw's final loss | fraction of adamw | tokens/s |",
             "|---|" + "---|" * (len(marks) + 3)]
    for p in presets:
        c = {t: (m, s) for t, m, s in curves[p]}
        cells = ["%.4f ± %.4f" % c[t] if t in c else "-" for t in marks]
        reach = tokens_to_reach([(t, m) for t, m, _ in curves[p]], target) if target is not None else None
        frac = "%.2f" % (reach / base_tokens) if reach and base_tokens else "not reached"
        sp = "%.0f" % (sum(speed[p]) / len(speed[p]))
        lines.append("| %s | %s | %s | %s | %s |" % (p, " | ".join(cells), "%.0f" % reach if reach else "not reached", frac, sp))
    table = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write("# Validation loss, %s scale, %s steps, %s seeds (mean ± std over seeds)\n\n" % (a.scale, a.budget, a.seeds))
        f.write(table)
        if target is not None:
            f.write("\nTarget for the token columns: the adamw preset's final mean val loss, %.4f.\n" % target)
    cpu = hw["cpu"] if hw else platform.processor()
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("""# reports/repro — the presets' validation loss, reproduced

Made by `make repro SEEDS=%s BUDGET=%s SCALE=%s` (bench/repro.sh) on %s (%s hardware threads),
commit %s, in %s s. Every run trains one preset on the same data (the embedded GCIDE corpus at tiny scale) for
the same number of optimizer steps, so every preset sees the same tokens; seeds change only the initialization.

- `table.md`: validation loss (mean ± std over the seeds) at a third, two thirds and the end of the budget;
  tokens each preset needs to reach the adamw preset's final loss (linear interpolation between validations)
  and that count as a fraction of adamw's; training tokens/s on this machine (timed steps).
- `curves.png`: validation loss versus training tokens, mean over the seeds with a band of ± one std.
- `curves.dat`: the numbers behind the plot.
- `../../refdata/speedrun_records.csv`: the speedrun's own published figures for each record (time, tokens,
  val loss on FineWeb at full scale) with the file each figure comes from, to set these tiny-scale runs beside.

Tiny-scale runs show the optimizers' behaviour on a small model and a small corpus; they are not the
records' 124M-parameter FineWeb runs, whose figures are in the CSV.

%s""" % (a.seeds, a.budget, a.scale, cpu, hw.get("cpu_threads") if hw else "?", commit, a.elapsed, table))


if __name__ == "__main__":
    main()
