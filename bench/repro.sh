#!/usr/bin/env bash
# make repro: train every preset on the same data and token budget with several seeds, then write
# the validation-loss table and the loss-versus-tokens curves under reports/repro/.
# Usage: bash bench/repro.sh BUILD [PRESETS] [SEEDS] [BUDGET] [SCALE]
#   PRESETS  space-separated (default: all six)       SEEDS   seeds per preset (default 3)
#   BUDGET   optimizer steps per run (default 100)     SCALE   tiny (default) or full
# Every run of a preset sees the same tokens in the same order; seeds change the initialization.
set -euo pipefail
BUILD=${1:-build}
PRESETS=${2:-"adamw muon-v1 muon-v2 untied value-embed softcap"}
SEEDS=${3:-3}
BUDGET=${4:-100}
SCALE=${5:-tiny}
cd "$(dirname "$0")/.."
RUNS=runs/repro-$SCALE
OUT=reports/repro
mkdir -p "$RUNS" "$OUT"
export OMP_WAIT_POLICY=passive

# Tiny runs: validate 7 times (every BUDGET/6 steps and at the end) on 8 k tokens; full runs keep the records' settings.
EXTRA=()
if [ "$SCALE" = tiny ]; then EXTRA=(--val_every=$(( (BUDGET + 5) / 6 )) --val_tokens=8192); fi

start=$(date +%s)
n=0
total=$(( $(wc -w <<<"$PRESETS") * SEEDS ))
for preset in $PRESETS; do
  for seed in $(seq 1 "$SEEDS"); do
    n=$((n + 1))
    dir="$RUNS/$preset/seed$seed"
    echo "== repro run $n/$total: $preset seed $seed ($BUDGET steps, $SCALE) =="
    # --overwrite=1: a repro run replaces the same run of an earlier `make repro`.
    "$BUILD/train" --preset="$preset" --scale="$SCALE" --steps="$BUDGET" --seed="$seed" --out_dir="$dir" --overwrite=1 \
      --log_every=10 "${EXTRA[@]}" | grep -E "^(step|train:)" | sed -e 's/config {.*}/config: see log/'
  done
done
elapsed=$(( $(date +%s) - start ))
python3 bench/repro_report.py --runs="$RUNS" --out="$OUT" --budget="$BUDGET" --scale="$SCALE" --seeds="$SEEDS" \
  --elapsed="$elapsed" --presets="$PRESETS"
gnuplot -e "dir='$OUT'" bench/repro_curves.gp
echo "repro: wrote $OUT/README.md, $OUT/table.md, $OUT/curves.png in $elapsed s"
