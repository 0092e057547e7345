#!/usr/bin/env bash
# make bench: run every timing/numerics harness and write its report under reports/.
# Usage: bash bench/run.sh <build dir>. Each section is one function; add new ones to SECTIONS.
# Timings are never pass/fail: a shared machine only makes them slower (reports carry the load).
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

# Per-kernel CPU timings of one training step (softcap at full shapes, B=1 T=1024) and the step
# end to end: CSV + Markdown + bar chart under reports/bench, named by machine, preset and scale.
section_kernels() {
    mkdir -p reports/bench
    local csv
    # shellcheck disable=SC2086  # KARGS: more flags, word-split on purpose
    csv=$("$BUILD/bench/kernels" --preset="${KPRESET:-softcap}" --scale="${KSCALE:-full}" --out=reports/bench ${KARGS:-})
    gnuplot -e "csv='$csv'; png='${csv%.csv}.png'; title='$(basename "${csv%.csv}"): ms per training step per kernel (commit $COMMIT)'" bench/kernels.gp
    echo "bench: wrote $csv, ${csv%.csv}.md, ${csv%.csv}.png"
}

# Per preset: parameter count at tiny and full scale beside the record's own, and the time of one
# forward and one forward + backward of a tiny batch (build/bench/model_report) on the CPU backend,
# or the one MARGS names (MARGS="--backend=cuda"): Markdown, with the commit, machine and load
# average it ran on.
section_model() {
    mkdir -p reports/bench
    local out=reports/bench/model_report.md
    # shellcheck disable=SC2086  # MARGS: more flags, word-split on purpose
    "$BUILD/bench/model_report" ${MARGS:-} > "$out.tmp"
    printf '\nMade by `make bench` (section `section_model`) at commit %s on %s (%s threads), load average %s.\n' \
        "$COMMIT" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$out.tmp"
    mv "$out.tmp" "$out"
    echo "bench: wrote $out"
}

# GPU attention, tensor cores vs naive, softcap shapes, T = 1024..65536 (one line and nothing else
# where no GPU is present): reports/bench/gpu-attention-softcap.{csv,md}.
section_attention_gpu() {
    "$BUILD/bench/attention_gpu" --out=reports/bench
}

# Peers side by side (optional): our full-scale training step (adamw, softcap, softcap with gram-ns)
# and Newton-Schulz against PyTorch eager on the CPU, interleaved round by round in one run
# (bench/peers.py, model in bench/peers_model.py). Skipped with one line where /usr/bin/python3
# cannot import torch (Debian: apt-get install python3-torch). LLMC_BIN=/path/to/train_gpt2 (llm.c's CPU
# trainer as you built it from your own checkout of karpathy/llm.c) adds it, run unchanged at its
# B=4 T=64 on our inputs, beside our adamw step (bench/peers_llmc.py); without it that peer is
# skipped with one line.
# PEERS_PYTHON names another interpreter with torch (default Debian's /usr/bin/python3).
section_peers() {
    local py=${PEERS_PYTHON:-/usr/bin/python3}
    if ! "$py" -c 'import torch' 2>/dev/null; then
        echo "bench: peers skipped: $py cannot import torch (apt-get install python3-torch)"
        return 0
    fi
    [ -e data/gcide/val_000000.bin ] || "$BUILD/make_data" --out=data/gcide
    mkdir -p reports/bench
    OMP_WAIT_POLICY=passive "$py" bench/peers.py "$BUILD" reports/bench ${PEERS_ARGS:-}
}

# BENCH_SECTIONS="section_kernels" runs a subset; KPRESET/KSCALE pick the kernels section's preset,
# KARGS adds its flags (any build/train key, e.g. KARGS="--backend=cuda" or "--ortho=gram-ns"), MARGS the
# model report's (--backend=cuda);
# PEERS_ARGS="--rounds=3 --steps=4" the peers section's counts.
read -r -a SECTIONS <<< "${BENCH_SECTIONS:-section_ns section_kernels section_model section_attention_gpu section_peers}"
for s in "${SECTIONS[@]}"; do
    echo "== bench: $s =="
    start=$(date +%s)
    "$s"
    echo "== bench: $s done in $(( $(date +%s) - start )) s =="
done
