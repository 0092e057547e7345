#!/usr/bin/env python3
"""Turn the repro runs' JSON-lines logs into a report folder:

- table.md: per preset the final validation loss (mean ± sd over seeds) with one-sided Welch t-tests
  against the previous record's preset (a variant: against its preset) and against the baseline
  (adamw, or the first preset named when adamw is not among them); "tokens to reach the baseline's
  final loss" with a percentile bootstrap interval and a bootstrap test of the records' ordering; each
  preset and variant against the one it changes, in both directions; the loss at a third and two
  thirds of the budget; at full scale the speedrun's acceptance test (mean < 3.28); the published
  records (refdata/speedrun_records.csv); the overlaid PyTorch logs, if any.
- curves.dat / curves.presets (our curves), overlay.dat / overlay.labels (the overlaid logs), for
  bench/repro_curves.gp.
- README.md: how, where and when it was made, and the table.

A word of --presets is a preset or a variant LABEL=PRESET:FLAG[,FLAG...] (bench/repro.sh): the
preset trained with those flags, its runs under <runs>/LABEL/.

Only figures read from the logs appear; nothing is typed in by hand. Python standard library only."""
import argparse
import csv
import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import repro_stats as st  # noqa: E402
import speedrun_logs  # noqa: E402

# The records in the order they were set: each preset is compared with the one before it.
RECORD_ORDER = ["adamw", "muon-v1", "muon-v2", "untied", "value-embed", "softcap", "normuon"]
ACCEPT_LOSS = 3.28  # the speedrun's bar: mean final val loss below it at p < 0.01


def fail(msg):
    raise SystemExit("repro_report: " + msg)


def read_run(path):
    start, vals, end = None, [], None
    with open(path) as f:
        for no, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
            except ValueError:
                fail("%s:%d: not a JSON line" % (path, no))
            ev = rec.get("event")
            if ev == "start":
                start = rec
            elif ev == "val":
                vals.append((rec["tokens"], rec["val_loss"]))
            elif ev in ("end", "interrupted"):
                end = rec
    if start is None or end is None or end.get("event") != "end":
        fail("%s: run did not finish" % path)
    if not vals:
        fail("%s: no validation records" % path)
    return start, vals, end


def read_runs(runs_dir, presets, seeds):
    """{preset: [(start, curve, end) per seed]} from <runs_dir>/<preset>/seed<k>/log.jsonl, k = 1..seeds
    (every seed<k> folder when seeds is None); a preset's seeds must share their validation points."""
    out = {}
    for p in presets:
        if seeds is None:
            logs = sorted(glob.glob(os.path.join(runs_dir, p, "seed*", "log.jsonl")))
        else:
            logs = [os.path.join(runs_dir, p, "seed%d" % k, "log.jsonl") for k in range(1, seeds + 1)]
            for path in logs:
                if not os.path.exists(path):
                    fail("%s: no such log" % path)
        if not logs:
            fail("no logs for preset %s under %s" % (p, runs_dir))
        out[p] = [read_run(path) for path in logs]
        points = [t for t, _ in out[p][0][1]]
        for path, (_, curve, _) in zip(logs, out[p]):
            if [t for t, _ in curve] != points:
                fail("%s: validation points differ from %s's" % (path, logs[0]))
    return out


def fmt_p(p):
    return "%.2g" % p if p < 0.001 else "%.3f" % p


def fmt_boot_p(x, resamples):
    """A bootstrap p: "0.007", or "< 0.0001" when no replicate counted (below 1 / resamples)."""
    return "< %g" % (1.0 / resamples) if x == 0 else fmt_p(x)


def p_phrase(shown):
    """"p = 0.007" or "p < 0.0001" of a p as fmt_p or fmt_boot_p show it."""
    return "p " + (shown if shown.startswith("<") else "= " + shown)


def fmt_tokens(x):
    return "not reached" if x is None or math.isinf(x) else "%.0f" % x


def parse_presets(words):
    """(labels, {variant label: (preset, flags)}) of --presets' words; labels in the order given."""
    labels, variants = [], {}
    for w in words:
        label = w
        if "=" in w:
            label, rest = w.split("=", 1)
            preset, _, flags = rest.partition(":")
            if not label or not preset or not flags:
                fail("--presets: '%s' is not LABEL=PRESET:FLAG[,FLAG...]" % w)
            variants[label] = (preset, flags.split(","))
        if label in labels:
            fail("--presets: '%s' named twice" % label)
        labels.append(label)
    return labels, variants


def previous_record(p, presets, variants):
    """The label p is compared with: a variant's preset, else the record before p among presets."""
    if p in variants:
        return variants[p][0] if variants[p][0] in presets else None
    earlier = [q for q in RECORD_ORDER[:RECORD_ORDER.index(p)] if q in presets] if p in RECORD_ORDER else []
    return earlier[-1] if earlier else None


def loss_table(presets, variants, base, finals, budgets, alpha, notes):
    lines = ["| preset | seeds | tokens | final val loss (mean ± sd) | vs previous record%s: Δ, p | vs %s: Δ, p |" % (
             " (variant: its preset)" if variants else "", base), "|---|---|---|---|---|---|"]
    for p in presets:
        m, s = st.mean_sd(finals[p])
        cells, compared = [], set()
        for q in (previous_record(p, presets, variants), base if p != base else None):
            if q is None:
                cells.append("-")
                continue
            res = st.welch_less(finals[p], finals[q])
            delta = m - st.mean_sd(finals[q])[0]
            if res is None:
                cells.append("%+.4f, n/a (one seed)" % delta)
                continue
            t, df, pv = res
            cells.append("%+.4f, p = %s%s" % (delta, fmt_p(pv), "" if pv < alpha else " (n.s.)"))
            if pv >= alpha and q not in compared:
                rev = 1.0 - pv
                notes.append("final loss: %s is not shown lower than %s at α = %g (one-sided Welch t = %.2f, df = %.1f, "
                             "p = %s)%s." % (p, q, alpha, t, df, fmt_p(pv),
                                             "; the reverse holds: %s is lower (p = %s)" % (q, fmt_p(rev)) if rev < alpha else ""))
            compared.add(q)
        lines.append("| %s | %d | %d | %.4f ± %.4f | %s | %s |" % (p, len(finals[p]), budgets[p], m, s, cells[0], cells[1]))
    return lines


def tokens_table(presets, variants, base_preset, curves, budgets, alpha, resamples, seed, notes):
    """The table, the target, and {label: (p, reverse p)} of the bootstrap tests against the label each is compared with."""
    target = st.mean_sd([c[-1][1] for c in curves[base_preset]])[0]
    point = {p: st.tokens_to_reach(st.mean_curve(curves[p]), target) for p in presets}
    reps = st.bootstrap_tokens({p: curves[p] for p in presets}, base_preset, resamples, seed)
    base = point[base_preset]
    lines = ["| preset | tokens to %.4f | %g%% bootstrap interval | fraction of %s | fewer tokens than previous record%s: bootstrap p |"
             % (target, 100 * (1 - alpha), base_preset, " (variant: its preset)" if variants else ""), "|---|---|---|---|---|"]
    links = []  # the records' ordering, one verdict per consecutive pair
    tests = {}
    for p in presets:
        r = sorted(reps[p])
        lo, hi = st.quantile(r, alpha / 2), st.quantile(r, 1 - alpha / 2)
        interval = "%s – %s" % (fmt_tokens(lo), fmt_tokens(hi) if not math.isinf(hi) else "not reached (> %d)" % budgets[p])
        frac = "%.2f" % (point[p] / base) if point[p] is not None and base else "-"
        q = previous_record(p, presets, variants)
        cell = "-"
        if q is not None:
            # Share of replicates where this preset needs at least as many tokens as the previous one
            # (both "not reached" counts as a tie): the bootstrap's one-sided p for "fewer tokens".
            pv = sum(a >= b for a, b in zip(reps[p], reps[q])) / resamples
            rev = sum(a <= b for a, b in zip(reps[p], reps[q])) / resamples
            tests[p] = (pv, rev)
            shown = fmt_boot_p(pv, resamples)
            cell = "%s%s" % (shown, "" if pv < alpha else " (reversed)" if rev < alpha else " (not separable)")
            link = "shown, " + p_phrase(shown) if pv < alpha else \
                "reversed, %s needs fewer (p = %s)" % (q, fmt_p(rev)) if rev < alpha else "not separable (%s)" % p_phrase(shown)
            if p not in variants:
                links.append("%s %s %s: %s" % (q, ">=" if (q, p) == ("value-embed", "softcap") else ">", p, link))
            if pv >= alpha:
                notes.append("tokens to target: %s and %s are not separable at α = %g (bootstrap p = %s)%s." %
                             (p, q, alpha, fmt_p(pv), "; the reverse holds: %s needs fewer (p = %s)" % (q, fmt_p(rev))
                              if rev < alpha else ""))
        lines.append("| %s | %s | %s | %s | %s |" % (p, fmt_tokens(point[p]), interval, frac, cell))
    if links:
        lines += ["", "The records' ordering in tokens to target, link by link at α = %g: %s." % (alpha, "; ".join(links))]
    return lines, target, tests


def verdict(pv, rev, alpha, fewer, resamples):
    """One comparison in words: 'lower'/'fewer' shown, the reverse shown, or not separable (a bootstrap
    p of 0 is below 1 / resamples)."""
    word = ("fewer tokens", "more tokens") if fewer else ("lower", "higher")
    if pv < alpha:
        return "%s (%s)" % (word[0], p_phrase(fmt_boot_p(pv, resamples)))
    if rev < alpha:
        return "**%s** (%s)" % (word[1], p_phrase(fmt_boot_p(rev, resamples)))
    return "not separable (p = %s and %s)" % (fmt_p(pv), fmt_p(rev))


def separable_table(presets, variants, finals, token_tests, alpha, resamples):
    """Each label against the one it changes, final loss and tokens to target, in both directions."""
    lines = ["| preset | compared with | what differs | final loss Δ | final loss | tokens to target |", "|---|---|---|---|---|---|"]
    for p in presets:
        q = previous_record(p, presets, variants)
        if q is None:
            continue
        lower, higher = st.welch_less(finals[p], finals[q]), st.welch_less(finals[q], finals[p])
        delta = st.mean_sd(finals[p])[0] - st.mean_sd(finals[q])[0]
        loss = "n/a (one seed)" if lower is None else verdict(lower[2], higher[2], alpha, False, resamples)
        pv, rev = token_tests[p]
        what = "`%s`" % " ".join(variants[p][1]) if p in variants else "the record's changes (PRESETS.md)"
        lines.append("| %s | %s | %s | %+.4f | %s | %s |" % (p, q, what, delta, loss, verdict(pv, rev, alpha, True, resamples)))
    return lines


def points_table(presets, curves, speed):
    """Mean ± sd at a third, two thirds and the end of the first preset's validation points."""
    points = [t for t, _ in curves[presets[0]][0]]
    marks = sorted({points[len(points) // 3], points[2 * len(points) // 3], points[-1]})
    lines = ["| preset | " + " | ".join("val loss @ %d tok" % t for t in marks) + " | tokens/s |",
             "|---|" + "---|" * (len(marks) + 1)]
    for p in presets:
        by_tok = {}
        for c in curves[p]:
            for t, l in c:
                by_tok.setdefault(t, []).append(l)
        cells = ["%.4f ± %.4f" % st.mean_sd(by_tok[t]) if t in by_tok else "-" for t in marks]
        lines.append("| %s | %s | %.0f |" % (p, " | ".join(cells), math.fsum(speed[p]) / len(speed[p])))
    return lines


def acceptance_table(presets, finals):
    lines = ["| preset | runs | mean | sd | t | p (mean < %.2f) |" % ACCEPT_LOSS, "|---|---|---|---|---|---|"]
    for p in presets:
        m, s = st.mean_sd(finals[p])
        res = st.t_less(finals[p], ACCEPT_LOSS)
        t, pv = ("%.2f" % res[0], fmt_p(res[2])) if res else ("-", "n/a (one run)")
        lines.append("| %s | %d | %.4f | %.4f | %s | %s |" % (p, len(finals[p]), m, s, t, pv))
    return lines


def records_table(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    lines = ["| preset | record | date | time (min) | steps | tokens | val loss | runs | mean ± sd of the runs | p (mean < %.2f) |"
             % ACCEPT_LOSS, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n = int(r["runs"])
        spread, pv = "-", "-"
        if n > 1:
            m, s = float(r["runs_mean"]), float(r["runs_sd"])
            spread = "%s ± %s" % (r["runs_mean"], r["runs_sd"])
            t = (m - ACCEPT_LOSS) / (s / math.sqrt(n))
            pv = fmt_p(st.t_cdf(t, n - 1))
        elif n == 1:
            spread = "%s (one run)" % r["runs_mean"]
        lines.append("| %s | #%s | %s | %s | %s | %s | %s | %d | %s | %s |" % (
            r["preset"], r["record"], r["date"], r["train_time_min"], r["steps"], r["total_tokens"], r["val_loss"], n,
            spread, pv))
    return lines


def read_overlays(specs):
    """[(label, path, tokens per step, log)] of the --overlay LABEL=PATH[@TOKENS_PER_STEP] logs."""
    out = []
    for spec in specs:
        try:
            label, path, tps = speedrun_logs.parse_overlay(spec)
            out.append((label, path, tps, speedrun_logs.read_log(path, tps)))
        except speedrun_logs.LogError as e:
            fail(str(e))
    return out


def overlay_table(logs, target):
    lines = ["| log | format | file | tokens/step | validations | last step | tokens | final val loss | train time | tokens to %.4f |"
             % target, "|---|---|---|---|---|---|---|---|---|---|"]
    for label, path, tps, log in logs:
        last = log["points"][-1]
        reach = st.tokens_to_reach([(tok, loss) for _, tok, loss, _ in log["points"]], target)
        lines.append("| %s | %s | `%s` | %d | %d | %d%s | %d | %.4f | %s | %s |" % (
            label, log["format"], os.path.basename(path), tps, len(log["points"]), last[0],
            "/%d" % log["total_steps"] if log["total_steps"] else "", last[1], last[2],
            "%.1f s" % (last[3] / 1000) if last[3] is not None else "-", fmt_tokens(reach)))
    return lines


def overlay_dat(logs):
    text = ""
    for label, path, _, log in logs:
        text += "# %s: tokens val_loss (%s)\n" % (label, path)
        text += "".join("%d %.6f\n" % (tok, loss) for _, tok, loss, _ in log["points"]) + "\n\n"
    return text


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as every bad input in this project
        fail(message)


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", required=True, help="folder of <preset>/seed<k>/log.jsonl")
    ap.add_argument("--out", required=True, help="report folder")
    ap.add_argument("--presets", required=True, help="space-separated presets (adamw among them)")
    ap.add_argument("--scale", required=True)
    ap.add_argument("--seeds", type=int, default=None, help="read seed1..seedN of every preset (default: every seed folder)")
    ap.add_argument("--command", default="", help="the command that made the runs, named in README.md")
    ap.add_argument("--elapsed", type=float, default=None, help="wall seconds of all runs")
    ap.add_argument("--cpu_seconds", type=float, default=None, help="CPU seconds (user + sys) of the runs trained")
    ap.add_argument("--reused", type=int, default=0, help="runs reused from an earlier repro (not in --elapsed)")
    ap.add_argument("--load", default="", help="file of load averages sampled during the runs, one per line")
    ap.add_argument("--alpha", type=float, default=0.01, help="significance level of every test and interval")
    ap.add_argument("--resamples", type=int, default=10000, help="bootstrap replicates")
    ap.add_argument("--boot_seed", type=int, default=17, help="seed of the bootstrap's random draws")
    ap.add_argument("--records", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "refdata",
                                                      "speedrun_records.csv"))
    ap.add_argument("--overlay", action="append", default=[], help="LABEL=PATH[@TOKENS_PER_STEP]: a PyTorch log to plot beside")
    a = ap.parse_args()
    presets, variants = parse_presets(a.presets.split())
    # The baseline: adamw (the first record) when it is trained, else the first preset named.
    base = "adamw" if "adamw" in presets else presets[0]
    if not 0 < a.alpha < 0.5:
        fail("--alpha: %g is not in (0, 0.5)" % a.alpha)
    if a.resamples < 100:
        fail("--resamples: %d is fewer than 100" % a.resamples)

    # Everything is read and checked before anything is written.
    runs = read_runs(a.runs, presets, a.seeds)
    logs = read_overlays(a.overlay)
    curves = {p: [r[1] for r in runs[p]] for p in presets}
    finals = {p: [c[-1][1] for c in curves[p]] for p in presets}
    budgets = {p: curves[p][0][-1][0] for p in presets}
    speed = {p: [r[2]["tokens_per_s"] for r in runs[p]] for p in presets}
    start0 = runs[presets[0]][0][0]
    hw, commit = start0["hardware"], start0["git_commit"]
    steps = sorted({r[2]["step"] for p in presets for r in runs[p]})
    seeds = sorted({len(curves[p]) for p in presets})
    loads = []
    if a.load and os.path.exists(a.load):
        with open(a.load) as f:
            loads = [float(x.split()[0]) for x in f if x.strip()]

    notes = []
    pairs = {(p, q) for p in presets for q in (previous_record(p, presets, variants), base) if q is not None and q != p}
    out = ["# Validation loss, %s scale, %s steps, %s seeds per preset" % (
        a.scale, "/".join(map(str, steps)), "/".join(map(str, seeds))), "",
        "Significance level α = %g for every test; p-values are one-sided and not corrected for the %d comparisons."
        % (a.alpha, len(pairs)), ""]
    if variants:
        out += ["Variants (`LABEL=PRESET:FLAGS` in `make repro`'s PRESETS): a preset trained with extra flags, compared "
                "with its preset.", "", "| variant | preset | flags |", "|---|---|---|"]
        out += ["| %s | %s | `%s` |" % (v, variants[v][0], " ".join(variants[v][1])) for v in presets if v in variants]
        out += [""]
    out += ["## Final validation loss", "",
            "Δ: this preset's mean minus the other's (negative: lower loss). p: one-sided Welch t-test of \"this preset's "
            "mean final loss is lower\"; (n.s.): not significant at α.", ""]
    out += loss_table(presets, variants, base, finals, budgets, a.alpha, notes)
    tok_lines, target, token_tests = tokens_table(presets, variants, base, curves, budgets, a.alpha, a.resamples,
                                                  a.boot_seed, notes)
    out += ["", "## Tokens to reach %s's final loss" % base, "",
            "Target: %s's final mean val loss, %.4f. Tokens: where the preset's mean curve first reaches it (linear "
            "interpolation between validations). Interval: percentile bootstrap, %d resamples of the seeds with "
            "replacement (the target re-estimated in each), seed %d. Bootstrap p: share of the replicates in which this "
            "preset needs at least as many tokens as the previous record's%s." % (
                base, target, a.resamples, a.boot_seed, " (a variant: its preset's)" if variants else ""), ""]
    out += tok_lines
    if token_tests:
        out += ["", "## Separable from the one it changes?", "",
                "Each preset against the previous record trained here, each variant against its preset, tested both ways at "
                "α = %g: the final loss by one-sided Welch t-tests (lower, and higher), the tokens to %.4f by the bootstrap "
                "above (fewer, and more: the share of replicates needing at most as many). \"Not separable\": neither "
                "direction is shown at this scale and seed count." % (a.alpha, target), ""]
        out += separable_table(presets, variants, finals, token_tests, a.alpha, a.resamples)
    out += ["", "## Validation loss along the way", ""] + points_table(presets, curves, speed)
    if a.scale == "full":
        out += ["", "## The speedrun's acceptance test", "",
                "As the records state it: one-sided one-sample t-test of \"mean final val loss < %.2f\" over the runs "
                "(a record needs p < 0.01)." % ACCEPT_LOSS, ""] + acceptance_table(presets, finals)
    out += ["", "## The published records (full scale, FineWeb, 8 GPUs)", "",
            "From `refdata/speedrun_records.csv` (every figure with the file and line it comes from). p: the same "
            "one-sided test of \"mean < %.2f\" from the published runs' mean, sd and count." % ACCEPT_LOSS, ""]
    out += records_table(a.records)
    if logs:
        out += ["", "## Overlaid PyTorch logs", "",
                "Read by bench/speedrun_logs.py; tokens = step × tokens per step. Last column: where the log's "
                "validation curve first reaches our adamw target.", ""] + overlay_table(logs, target)
    if notes:
        out += ["", "## Not significant at α = %g" % a.alpha, ""] + ["- " + n for n in notes]
    table = "\n".join(out) + "\n"

    how = ["Made by `%s` (bench/repro.sh) on %s (%s hardware threads, %s OpenMP threads), commit %s." % (
        a.command or "make repro SCALE=%s" % a.scale, hw.get("cpu", "?"), hw.get("cpu_threads", "?"),
        hw.get("omp_threads", "?"), commit)]
    if a.elapsed is not None:
        cost = "%.0f s wall%s" % (a.elapsed, "" if a.cpu_seconds is None else " and %.0f s of CPU time (user + sys)" % a.cpu_seconds)
        total = sum(len(curves[p]) for p in presets)
        how.append("All runs took %s." % cost if not a.reused else
                   "The %d runs trained by this invocation took %s; the other %d were reused, finished by an earlier "
                   "invocation with the same flags, data and train binary (their time is not counted here)." % (
                       total - a.reused, cost, a.reused))
    if loads:
        how.append("1-minute load average sampled after each run: %.2f to %.2f (median %.2f)." % (
            min(loads), max(loads), sorted(loads)[len(loads) // 2]))
    readme = "# %s — the presets' validation loss, reproduced with statistics\n\n" % os.path.basename(os.path.normpath(a.out))
    readme += " ".join(how) + "\n\n"
    readme += """Every run trains one preset on the same data for the same number of steps, so every preset sees the
same tokens in the same order; seeds change only the initialization. How to read the tables: the
repository README's section "Reading the repro table".

- `table.md`: the tables below. `curves.png`: validation loss versus training tokens, mean over the
  seeds%s; beside it each preset's final loss (mean ± sd) and the spread between seeds (sd) along the
  way. `curves.dat`: the numbers behind the plot%s.

""" % (" (the overlaid PyTorch logs dashed, x axis logarithmic)" if logs else "",
       "; `overlay.dat` those of the overlaid logs" if logs else "")
    readme += table.split("\n", 2)[2]

    files = {"table.md": table, "README.md": readme, "curves.presets": " ".join(presets) + "\n", "curves.dat": "".join(
        "# %s: tokens mean std\n" % p + "".join("%d %.6f %.6f\n" % (pts[0][0], *st.mean_sd([l for _, l in pts]))
                                               for pts in zip(*curves[p])) + "\n\n" for p in presets)}
    if logs:
        files["overlay.dat"] = overlay_dat(logs)
        files["overlay.labels"] = " ".join(label for label, _, _, _ in logs) + "\n"
    os.makedirs(a.out, exist_ok=True)
    for name in ("overlay.dat", "overlay.labels"):
        if name not in files and os.path.exists(os.path.join(a.out, name)):
            os.remove(os.path.join(a.out, name))
    for name, text in files.items():
        with open(os.path.join(a.out, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
