#!/usr/bin/env bash
# make repro: train every preset on the same data and token budget with several seeds, then write
# the validation-loss table (with its statistics) and the loss-versus-tokens curves.
# Usage: bash bench/repro.sh BUILD [PRESETS] [SEEDS] [BUDGET] [SCALE] [OVERLAY] [REPORT]
#   PRESETS  space-separated (default: all seven); a word LABEL=PRESET:FLAG[,FLAG...] is a variant: the
#            preset with those train flags (e.g. softcap+cwd=softcap:--muon_wd=1.2,--cautious_wd=1),
#            reported as LABEL and compared with its preset
#   SEEDS    seeds per preset (default: tiny 3, small 3, full 3)
#   BUDGET   optimizer steps per run (default: tiny 100; small and full: the scale's steps, i.e.
#            small's 150 and, at full, each record's own)
#   SCALE    tiny (default), small, full; the runs go to runs/repro-<scale>/
#   REPORT   folder of the report (default runs/repro-<scale>/report; the committed samples are
#            reports/repro/, reports/repro-small/ and reports/repro-full/, rewritten only when named here)
#   OVERLAY  space-separated LABEL=PATH[@TOKENS_PER_STEP]: modded-nanogpt or llm.c logs to plot beside
#            ours (bench/speedrun_logs.py; tokens per step defaults to the records' 524288)
# Every run of a preset sees the same tokens in the same order; seeds change the initialization.
# A repro that was interrupted continues: a run that finished before, with the same flags and the
# same train binary (so the same commit and build), is reused, not trained again (its key file,
# written when it ends, says so); an unfinished one is trained again from the start.
set -euo pipefail
BUILD=${1:-build}
PRESETS=${2:-"adamw muon-v1 muon-v2 untied value-embed softcap normuon"}
SEEDS=${3:-}
BUDGET=${4:-}
SCALE=${5:-tiny}
OVERLAY=${6:-}
REPORT=${7:-}
cd "$(dirname "$0")/.."
export OMP_WAIT_POLICY=passive

# Validation: tiny validates 7 times (every BUDGET/6 steps and at the end) on 8 k tokens; small and
# full keep their scale's settings (impl/train/presets.c).
EXTRA=()
case "$SCALE" in
  tiny)  SEEDS=${SEEDS:-3}; BUDGET=${BUDGET:-100}
         EXTRA=(--val_every=$(( (BUDGET + 5) / 6 )) --val_tokens=8192) ;;
  small) SEEDS=${SEEDS:-3} ;;
  full)  SEEDS=${SEEDS:-3} ;;
  *)     echo "repro: SCALE: unknown scale '$SCALE' (tiny, small, full)" >&2; exit 2 ;;
esac
if [ -n "$BUDGET" ]; then EXTRA+=(--steps="$BUDGET"); fi
OVERLAY_ARGS=()
for spec in $OVERLAY; do OVERLAY_ARGS+=(--overlay="$spec"); done
# Every word names a preset, or is a variant LABEL=PRESET:FLAG[,FLAG...]; each is checked before any
# run by the trainer itself, which parses the preset, scale and flags (and reads nothing) with
# --plan_memory=1.
declare -A PRESET_OF FLAGS_OF
LABELS=""
for word in $PRESETS; do
  label=$word preset=$word flags=""
  if [[ $word == *=* ]]; then
    label=${word%%=*} rest=${word#*=}
    preset=${rest%%:*} flags=${rest#"$preset"} flags=${flags#:}
    if ! [[ $label =~ ^[a-z0-9][a-z0-9+._-]*$ ]] || "$BUILD/train" --preset="$label" --scale="$SCALE" --plan_memory=1 >/dev/null 2>&1; then
      echo "repro: PRESETS: variant label '$label' must be lower-case letters, digits and + . _ - and not a preset's name" >&2; exit 2
    fi
    if [ -z "$flags" ] || [[ ,$flags, =~ ,[^-] ]] || [[ ,$flags, == *,,* ]]; then
      echo "repro: PRESETS: variant '$word' needs train flags after the colon: LABEL=PRESET:--flag=value[,--flag=value...]" >&2; exit 2
    fi
  fi
  IFS=, read -r -a f <<<"$flags"
  if ! err=$("$BUILD/train" --preset="$preset" --scale="$SCALE" "${f[@]}" --plan_memory=1 2>&1 >/dev/null); then
    echo "repro: PRESETS: '$word': ${err#train: error: }" >&2; exit 2
  fi
  if [[ " $LABELS " == *" $label "* ]]; then echo "repro: PRESETS: '$label' named twice" >&2; exit 2; fi
  LABELS+="${LABELS:+ }$label"
  PRESET_OF[$label]=$preset FLAGS_OF[$label]=$flags
done
RUNS=runs/repro-$SCALE
OUT=${REPORT:-$RUNS/report}
mkdir -p "$RUNS" "$OUT"
rm -f "$RUNS/load.txt"
BINARY_ID=$(sha256sum "$BUILD/train" | cut -d' ' -f1)

# The command as make would show it, for the report.
cmd="make repro SCALE=$SCALE SEEDS=$SEEDS${BUDGET:+ BUDGET=$BUDGET}"
if [ "$PRESETS" != "adamw muon-v1 muon-v2 untied value-embed softcap normuon" ]; then cmd+=" PRESETS=\"$PRESETS\""; fi
if [ "$BUILD" != build ]; then cmd+=" BUILD=$BUILD"; fi
if [ -n "$OVERLAY" ]; then cmd+=" OVERLAY=\"$OVERLAY\""; fi
if [ -n "$REPORT" ]; then cmd+=" REPORT=$REPORT"; fi

start=$(date +%s)
n=0
reused=0
total=$(( $(wc -w <<<"$LABELS") * SEEDS ))
for label in $LABELS; do
  preset=${PRESET_OF[$label]}
  IFS=, read -r -a flags <<<"${FLAGS_OF[$label]}"
  for seed in $(seq 1 "$SEEDS"); do
    n=$((n + 1))
    dir="$RUNS/$label/seed$seed"
    args=(--preset="$preset" --scale="$SCALE" --seed="$seed" --out_dir="$dir" --overwrite=1 --log_every=10 "${EXTRA[@]}"
          "${flags[@]}")
    key="train $BINARY_ID ${args[*]}"
    if [ -f "$dir/repro.key" ] && [ "$(cat "$dir/repro.key")" = "$key" ]; then
      echo "== repro run $n/$total: $label seed $seed: reused (finished before, same flags and train binary) =="
      cat "$dir/load.txt" >> "$RUNS/load.txt"
      reused=$((reused + 1))
      continue
    fi
    echo "== repro run $n/$total: $label seed $seed (${BUDGET:-default} steps, $SCALE${flags[*]:+, ${flags[*]}}) =="
    rm -f "$dir/repro.key"
    # --overwrite=1: a repro run replaces an unfinished or different run of an earlier `make repro`.
    "$BUILD/train" "${args[@]}" | grep -E "^(step|train:)"
    cut -d' ' -f1 /proc/loadavg | tee "$dir/load.txt" >> "$RUNS/load.txt"
    echo "$key" > "$dir/repro.key.tmp" && mv "$dir/repro.key.tmp" "$dir/repro.key"
  done
done
elapsed=$(( $(date +%s) - start ))
# CPU time of the runs: the children's user + sys, the second line of the shell's `times` (run in
# this shell: in a pipe or $(...) it would report a subshell's children, none).
times > "$RUNS/times.txt"
cpu=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, ms, "m"); s += ms[1] * 60 + ms[2] }
  printf "%.0f", s }' "$RUNS/times.txt")
python3 bench/repro_report.py --runs="$RUNS" --out="$OUT" --scale="$SCALE" --seeds="$SEEDS" --presets="$PRESETS" \
  --elapsed="$elapsed" --cpu_seconds="$cpu" --reused="$reused" --load="$RUNS/load.txt" --command="$cmd" "${OVERLAY_ARGS[@]}"
gnuplot -e "dir='$OUT'" bench/repro_curves.gp
echo "repro: wrote $OUT/README.md, $OUT/table.md, $OUT/curves.png in $elapsed s wall, $cpu s CPU"
