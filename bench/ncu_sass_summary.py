#!/usr/bin/env python3
"""Where a kernel's warps stall, from Nsight Compute's source page: each file is one kernel's SASS
with the warp stalls sampled at each instruction (`ncu -i REPORT --page source --csv --print-source
sass`, as the GPU report's profile stage writes profile-sass-NAME.csv.gz). Per file: the samples
by instruction kind (the waits a tile's time can go to: wgmma's, the TMA barriers', the
warpgroups' turns, exp2, shuffles, memory), then the instructions with the most samples.

  ncu_sass_summary.py FILE.csv[.gz] ...   the summary of each, on stdout

Read by its columns' names, not their order: the one named Source (the SASS text), the one whose
name holds "Address", and the one whose name holds "Warp Stall Sampling (All Samples)" (numbers
with or without thousands separators); rows before the header (ncu's own lines) are skipped. A file
that cannot be read, or has no such header or no instruction, is one error line naming it, exit 1.
"""
import csv
import gzip
import io
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"

# The kinds, by the start of the opcode (predicate dropped), first match wins.
KINDS = [
    ("wgmma wait", ("WARPGROUP.DEPBAR",)),
    ("wgmma issue", ("HGMMA", "WARPGROUP.ARRIVE")),
    ("mbarrier wait (TMA, stages)", ("SYNCS.PHASECHK",)),
    ("mbarrier arrive", ("SYNCS.ARRIVE",)),
    ("named barrier (turns, __syncthreads)", ("BAR.",)),
    ("copy issue (TMA, cp.async)", ("UTMALDG", "UBLKCP", "LDGSTS", "LDGDEPBAR", "DEPBAR")),
    ("exp2 and other MUFU", ("MUFU",)),
    ("shuffle", ("SHFL",)),
    ("shared memory", ("LDS", "STS", "LDSM")),
    ("global memory", ("LDG", "STG", "RED", "ATOM")),
    ("local memory (spills)", ("LDL", "STL")),
    ("mma.sync", ("HMMA",)),
    ("branch", ("BRA", "BSSY", "BSYNC", "WARPSYNC", "EXIT")),
]


class BadInput(Exception):
    pass


def opcode(sass):
    """The opcode of one SASS line, its predicate (@P0, @!UP1) dropped."""
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def kind_of(op):
    for name, starts in KINDS:
        if op.startswith(starts):
            return name
    return "other"


def number(text, path):
    try:
        return float(text.replace(",", "").strip() or 0)
    except ValueError:
        raise BadInput("%s: '%s' in the %s column is not a number" % (path, text, SAMPLES))


def read(path):
    """[(address, sass, samples)] of the file's instructions."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if path.endswith(".gz"):
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8", errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise BadInput("%s: cannot read it: %s" % (path, e))
    rows = list(csv.reader(io.StringIO(text)))
    for h, header in enumerate(rows):
        names = [c.strip() for c in header]
        if "Source" in names and any(SAMPLES in c for c in names) and any("Address" in c for c in names):
            src = names.index("Source")
            smp = next(i for i, c in enumerate(names) if SAMPLES in c)
            adr = next(i for i, c in enumerate(names) if "Address" in c)
            out = []
            for row in rows[h + 1:]:
                if len(row) <= max(src, smp, adr) or not row[src].strip():
                    continue
                out.append((row[adr].strip(), row[src].strip(), number(row[smp], path)))
            if not out:
                raise BadInput("%s: a header but no instruction under it" % path)
            return out
    raise BadInput("%s: no header naming Source, an Address and %s (ncu's source page as CSV?)" % (path, SAMPLES))


def summary(path, rows, top=12):
    total = sum(s for _, _, s in rows)
    lines = ["== %s: %d instructions, %d samples" % (path, len(rows), total)]
    if total <= 0:
        return lines + ["  (no samples)"]
    by_kind = {}
    for _, sass, s in rows:
        k = kind_of(opcode(sass))
        by_kind[k] = by_kind.get(k, 0) + s
    lines.append("  samples by instruction kind:")
    for k, s in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        if s > 0:
            lines.append("    %5.1f%%  %s" % (100 * s / total, k))
    lines.append("  the %d instructions with the most:" % min(top, len(rows)))
    for adr, sass, s in sorted(rows, key=lambda r: -r[2])[:top]:
        lines.append("    %5.1f%%  %s  %s" % (100 * s / total, adr, sass))
    return lines


def main(argv):
    if not argv:
        print("usage: ncu_sass_summary.py FILE.csv[.gz] ...", file=sys.stderr)
        return 2
    try:
        text = [line for path in argv for line in summary(path, read(path))]
    except BadInput as e:
        print("ncu_sass_summary.py: error: %s" % e, file=sys.stderr)
        return 1
    print("\n".join(text))  # every file read before a line is written
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
