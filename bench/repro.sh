#!/usr/bin/env bash
# make repro: train every preset on the same data and token budget with several seeds, then write
# the validation-loss table (with its statistics) and the loss-versus-tokens curves.
# Usage: bash bench/repro.sh BUILD [PRESETS] [SEEDS] [BUDGET] [SCALE] [OVERLAY] [REPORT]
#   PRESETS  space-separated (default: all seven); a word LABEL=PRESET:FLAG[,FLAG...] is a variant: the
#            preset with those train flags (e.g. softcap+cwd=softcap:--muon_wd=1.2,--cautious_wd=1),
#            reported as LABEL and compared with its preset; a flag the repro sets for every run (seed,
#            steps, scale, validation, data, out_dir...) or one that changes no training is refused
#            (OWN_FLAGS below), and so is a value holding a comma (commas separate the flags)
#   SEEDS    seeds per preset (default: tiny 3, small 3, full 3)
#   BUDGET   optimizer steps per run (default: tiny 100; small and full: the scale's steps, i.e.
#            small's 150 and, at full, each record's own)
#   SCALE    tiny (default), small, full; the runs go to runs/repro-<scale>/
#   REPORT   folder of the report (default runs/repro-<scale>/report; the committed samples are
#            reports/repro/, reports/repro-small/ and reports/repro-full/, rewritten only when named here):
#            new, empty or a report's, writable, outside the data's folders (checked before any run)
#   OVERLAY  space-separated LABEL=PATH[@TOKENS_PER_STEP]: modded-nanogpt or llm.c logs to plot beside
#            ours (bench/speedrun_logs.py; tokens per step defaults to the records' 524288)
# Every run of a preset sees the same tokens in the same order; seeds change the initialization.
# A repro that was interrupted continues: a run that finished before, with the same flags, the same
# data (its shards' names, sizes and contents) and the same train binary (so the same commit and
# build), is reused, not trained again (its key file, written when it ends, says so); an unfinished
# one is trained again from the start, and so is a finished one that differs (saying in what).
set -euo pipefail
# No word or path here is a pattern (PRESETS='*' once named the files of the checkout as presets).
set -f
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
refuse() { echo "repro: $*" >&2; exit 2; }

# Train flags a variant may not give, and why: the repro sets them for every run alike (a variant's
# --seed=5 once overruled SEEDS and trained identical runs reported as seeds; --preset=adamw trained
# adamw under a softcap label; --scale=small wrote a tiny report from small runs), or they change
# nothing in the training (such a variant would be its preset again under another name), or they
# make the run something else than a finished training (--help, --plan_memory, --resume).
declare -A OWN_FLAGS=(
  [preset]="the variant's preset is the name before the colon" [scale]="SCALE= sets it for every run"
  [seed]="SEEDS= sets the seeds" [steps]="BUDGET= sets every run's steps"
  [val_every]="every run is validated alike" [val_tokens]="every run is validated alike"
  [val_data]="every run is validated on the same data" [train_data]="every run trains on the same data"
  [out_dir]="the repro places every run" [overwrite]="the repro replaces unfinished runs itself"
  [resume]="every repro run trains from the start" [halt_at]="every repro run trains to its end"
  [plan_memory]="it trains nothing" [help]="it trains nothing"
  [log_every]="it changes no training" [ckpt_every]="it changes no training" [ckpt_every_s]="it changes no training"
  [dump_at]="it changes no training" [comm]="it changes no training" [comm_timeout]="it changes no training"
  [device]="it changes no training" [grad_sync]="it changes no training (both ways compute the same values)"
)

# A variant's flags (the text after the colon of WORD), split on commas into the array FLAGS; refuses
# what is not a flag a variant may give.
split_variant_flags() {
  local word=$1 flags=$2 flag key
  FLAGS=()
  if [ -z "$flags" ] || [[ ,$flags, == *,,* ]]; then
    refuse "PRESETS: variant '$word' needs train flags after the colon: LABEL=PRESET:--flag=value[,--flag=value...]"
  fi
  IFS=, read -r -a FLAGS <<<"$flags"
  # A piece after a comma may be the rest of a value (--gram_restarts=2,4 once got "needs train flags").
  local comma_hint=""
  if [[ $flags == *,* ]]; then comma_hint=" (commas separate a variant's flags, so no value can hold one)"; fi
  for flag in "${FLAGS[@]}"; do
    key=${flag%%=*} key=${key#--} key=${key//-/_}
    if [[ $flag == --* && -n ${OWN_FLAGS[$key]+set} ]]; then
      refuse "PRESETS: '$word': ${flag%%=*} is not a variant's flag: ${OWN_FLAGS[$key]}"
    fi
    if ! [[ $flag =~ ^--[A-Za-z0-9_-]+= ]]; then
      refuse "PRESETS: '$word': '$flag' is not a train flag --flag=value${comma_hint}"
    fi
  done
}

# Every word names a preset, or is a variant LABEL=PRESET:FLAG[,FLAG...]; each is checked before any
# run by the trainer itself, which parses the preset, scale and flags (and reads nothing) with
# --plan_memory=1.
declare -A PRESET_OF FLAGS_OF
LABELS=""
for word in $PRESETS; do
  label=$word preset=$word flags=""
  FLAGS=()
  if [[ $word == *=* ]]; then
    label=${word%%=*} rest=${word#*=}
    preset=${rest%%:*} flags=${rest#"$preset"} flags=${flags#:}
    if ! [[ $label =~ ^[a-z0-9][a-z0-9+._-]*$ ]] || "$BUILD/train" --preset="$label" --scale="$SCALE" --plan_memory=1 >/dev/null 2>&1; then
      refuse "PRESETS: variant label '$label' must be lower-case letters, digits and + . _ - and not a preset's name"
    fi
    split_variant_flags "$word" "$flags"
  fi
  if ! err=$("$BUILD/train" --preset="$preset" --scale="$SCALE" "${EXTRA[@]}" "${FLAGS[@]}" --plan_memory=1 2>&1 >/dev/null); then
    refuse "PRESETS: '$word': ${err#train: error: }"
  fi
  if [[ " $LABELS " == *" $label "* ]]; then refuse "PRESETS: '$label' named twice"; fi
  LABELS+="${LABELS:+ }$label"
  PRESET_OF[$label]=$preset FLAGS_OF[$label]=$flags
done
RUNS=runs/repro-$SCALE
OUT=${REPORT:-$RUNS/report}

# The data every run reads: the scale's train and val shards (train --help names their globs; no
# variant changes them). A finished run is reused only on the same data: the shards' names, sizes
# and contents (sha256 of every shard: about 25 MB at tiny and small, a fraction of a second).
first=${LABELS%% *}
mapfile -t DATA_GLOBS < <("$BUILD/train" --preset="${PRESET_OF[$first]}" --scale="$SCALE" --help |
  sed -n 's/^  --\(train\|val\)_data .*(default \(.*\))$/\2/p')
if [ "${#DATA_GLOBS[@]}" != 2 ]; then refuse "cannot read the data's globs from $BUILD/train --help"; fi
# The files a glob names, appended to SHARDS (split on nothing: a folder's name may hold a space).
add_shards() {
  local IFS= matched
  set +f
  # shellcheck disable=SC2206  # the glob expanded on purpose (IFS empty: not split)
  matched=($1)
  set -f
  [ -e "${matched[0]}" ] || refuse "SCALE=$SCALE reads $1: no such shards (make data builds the default dataset)"
  SHARDS+=("${matched[@]}")
}
SHARDS=()
for glob in "${DATA_GLOBS[@]}"; do add_shards "$glob"; done
DATA_ID=$({ stat -L -c '%n %s' -- "${SHARDS[@]}"; sha256sum -- "${SHARDS[@]}"; } | sha256sum | cut -d' ' -f1)

# The report's folder, checked before any run (once, a folder that could not be written stopped the
# repro after all the training, and REPORT=data/gcide wrote the report among the shards): new, empty
# or a report's (it holds table.md), outside the data's folders, and writable.
if [ -e "$OUT" ] && [ ! -d "$OUT" ]; then refuse "REPORT: '$OUT' exists and is not a folder"; fi
if [ -d "$OUT" ] && [ -n "$(ls -A -- "$OUT")" ] && [ ! -e "$OUT/table.md" ]; then
  refuse "REPORT: '$OUT' holds files but no report (no table.md): name a new or empty folder, or a report's"
fi
out_real=$(realpath -m -- "$OUT")
for glob in "${DATA_GLOBS[@]}"; do
  data_dir=$(realpath -m -- "$(dirname -- "$glob")")
  if [[ $out_real == "$data_dir" || $out_real == "$data_dir"/* ]]; then
    refuse "REPORT: '$OUT' is inside $data_dir, the folder of the runs' shards"
  fi
done
err=$(mkdir -p -- "$OUT" 2>&1) || refuse "REPORT: ${err#mkdir: }"
probe=$(mktemp -p "$OUT" .repro-probe.XXXXXX 2>/dev/null) || refuse "REPORT: '$OUT': cannot write in it"
rm -f -- "$probe"
mkdir -p "$RUNS"
rm -f "$RUNS/load.txt"
BINARY_ID=$(sha256sum "$BUILD/train" | cut -d' ' -f1)

# The command as make would show it, for the report.
cmd="make repro SCALE=$SCALE SEEDS=$SEEDS${BUDGET:+ BUDGET=$BUDGET}"
if [ "$PRESETS" != "adamw muon-v1 muon-v2 untied value-embed softcap normuon" ]; then cmd+=" PRESETS=\"$PRESETS\""; fi
if [ "$BUILD" != build ]; then cmd+=" BUILD=$BUILD"; fi
if [ -n "$OVERLAY" ]; then cmd+=" OVERLAY=\"$OVERLAY\""; fi
if [ -n "$REPORT" ]; then cmd+=" REPORT=$(printf %q "$REPORT")"; fi

# What differs between a finished run's key file and this repro's key for it (empty: nothing), in
# words: the train binary, the data (the shards' fingerprint) or the flags.
changed_since() {
  local was
  was=$(cat "$1")
  if [ "$(sed -n 1p <<<"$was")" != "$(sed -n 1p <<<"$2")" ]; then echo "another train binary (or a key of an older make repro)"
  elif [ "$(sed -n 2p <<<"$was")" != "$(sed -n 2p <<<"$2")" ]; then
    echo "other data: the shards' fingerprint was $(cut -c6-17 <<<"$(sed -n 2p <<<"$was")"), now ${DATA_ID:0:12} (${DATA_GLOBS[*]} changed since)"
  elif [ "$was" != "$2" ]; then echo "other flags"
  fi
}

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
    key=$(printf 'binary %s\ndata %s\nflags %s' "$BINARY_ID" "$DATA_ID" "${args[*]}")
    if [ -f "$dir/repro.key" ]; then
      why=$(changed_since "$dir/repro.key" "$key")
      if [ -z "$why" ]; then
        echo "== repro run $n/$total: $label seed $seed: reused (finished before, same flags, data and train binary) =="
        cat "$dir/load.txt" >> "$RUNS/load.txt"
        reused=$((reused + 1))
        continue
      fi
      echo "repro: $label seed $seed finished before with $why: trained again"
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
# In the report's folder: its path reaches gnuplot as no string to quote (a space or a quote in it
# once split the script's shell commands).
(cd "$OUT" && gnuplot "$OLDPWD/bench/repro_curves.gp")
echo "repro: wrote $OUT/README.md, $OUT/table.md, $OUT/curves.png in $elapsed s wall, $cpu s CPU"
