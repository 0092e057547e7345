#!/usr/bin/env bash
# make bench: run every timing/numerics harness and write its report under reports/.
# Usage: bash bench/run.sh <build dir>. Each section is one function; add new ones to SECTIONS.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD 2>/dev/null; then COMMIT="$COMMIT+uncommitted"; fi

# NS vs SVD: tables (Markdown), the scalar-map figure (gnuplot PNG) and NS/SVD timings.
section_ns() {
    mkdir -p reports/ns
    "$BUILD/bench/ns_report" --out=reports/ns --commit="$COMMIT"
    gnuplot -e "dir='reports/ns'" bench/ns_map.gp
    echo "bench: wrote reports/ns/ns_vs_svd.md, ns_table_full.md, ns_map.png"
}

SECTIONS=(section_ns)
for s in "${SECTIONS[@]}"; do
    echo "== bench: $s =="
    start=$(date +%s)
    "$s"
    echo "== bench: $s done in $(( $(date +%s) - start )) s =="
done
