#!/usr/bin/env bash
# The whole GPU report of a node in one command, within a time budget:
#   run_gpu_report.sh OUTDIR [--budget-s N] [--stages A,B,...]
# --budget-s: seconds for the whole report (default 480: one H100 in 8 minutes). --stages: run only
# these stages (names below; default all), e.g. a short follow-up on the same node after a fix:
# --stages gpu-suite,kernels-softcap,attention-window. info always runs.
# OUTDIR must be new or empty. Stages run in order of importance, each under its own time limit
# (timeout), each writing NAME.log (its output) and its files into OUTDIR and one line to
# OUTDIR/summary.txt: "NAME: exit RC, S s", "NAME: timed out after N s" or "NAME: skipped: WHY"
# (a stage left out by --stages: "skipped: not in --stages"); a
# last line "total: ...". After every stage OUTDIR is packed into OUTDIR.tar.gz (written beside it,
# then renamed), so a job stopped early leaves what it finished.
#   info              the machine, nvidia-smi (GPU, driver, clocks), the commit, where cuDNN is and its
#                     JSON of the GPU                                             -> cudnn-device.json
#   wgmma-check       the wgmma attention's parts one at a time, its cases and its persistent forward's
#                     bits (an sm_90 GPU): where it fails or times out, every later stage runs with
#                     GM_CUDA_WGMMA=off (the mma.sync kernels), so that a wgmma kernel that is wrong
#                     or hangs on its first GPU costs this stage's minute, not every stage's limit
#   pingpong-check    the wgmma forward with its warpgroups taking turns on named barriers
#                     (wgmma-pingpong), alone (an sm_90 GPU, wgmma on): where it fails or times out,
#                     every later stage leaves that form out (attention_gpu --skip, the test in the
#                     suites and sanitizers, the profile's run), so that a turn the GPU never
#                     completes costs this stage, not every stage that would run the form
#   gpu-suite         the GPU tests (suites cuda_*) with GM_REQUIRE_GPU=1, as run_gpu_suite.sh's gpu step
#   kernels-softcap   bench/kernels at the record's per-GPU step (B 1, T 65536)  -> kernels-softcap.{csv,md}
#   kernels-normuon   the same for normuon                                        -> kernels-normuon.{csv,md}
#   step-compare      gpu_step_compare.py: every preset's whole step vs cpu-bf16   -> step-compare.md
#   peers             bench/peers_gpu.py: PyTorch's GEMMs, SDPA, FlexAttention and Newton-Schulz at the
#                     step's shapes (where python3 imports torch)                 -> peers-gpu.{md,csv}
#   backend-compare   every kernel of backend.h vs cpu-bf16 (its twin)           -> backend-compare.md
#   attention-window  bench/attention_gpu at softcap's final window              -> attention-window.{csv,md}
#   attention-docs    the same with the records' documents (EOT-opened, mean 700 tokens): the mask
#                     the step runs, FlexAttention's peer case                   -> attention-docs.{csv,md}
#   attention-ab      a baseline commit's attention bench (a bundle made by `make bundle BASELINE=REV`
#                     holds it: bin/bench/attention_gpu-baseline) at attention-docs' and
#                     attention-window's cases, after those stages in the same job, then this build's
#                     again; bench/attention_ab.py sets them side by side (base / ours by form, pass
#                     and T, ours the mean of its runs before and after; the naive kernels, the same
#                     code at both commits, and this build's two runs as controls)
#                       -> attention-{docs,window}-{baseline,again}.{csv,md}, -ab.md
#   kernels-ab        the same for kernels-softcap (the baseline's bin/bench/kernels-baseline), then
#                     this build's again, set side by side by `kernels --compare` (B/A per kernel and
#                     of the step: the baseline against each of this build's runs, and those two; the
#                     kernels whose sources did not change, MANIFEST.txt lists those that did, and the
#                     two runs of this build say how far the measurement moves)
#                       -> kernels-softcap-{baseline,again}.{csv,md}, kernels-softcap-ab.txt
#   kernels-wgmma1    kernels-softcap with the one-pass backward (GM_CUDA_ATTN=auto,wgmma1: the
#                     forward as kernels-softcap's; an sm_90 GPU)         -> kernels-softcap-wgmma1.{csv,md}
#   predict           the step model on this GPU: bench/gpu_rates.py makes its rates from the files above,
#                     bench/kernels --count=1 predicts the softcap step with them and sets the
#                     prediction beside kernels-softcap's measurement  -> rates.csv, predicted-softcap.md
#   attention-causal  the same, plain causal                                     -> attention-causal.{csv,md}
#   profile           Nsight Compute (ncu, where the node has it) on the attention kernels the automatic
#                     choice runs at head_dim 128: at the record's mask (T 65536, window 14, documents
#                     of mean 700) the 32-rows-a-warp forward, the wgmma dq and dk/dv kernels, the
#                     one-pass backward and the wgmma forward, plain, persistent and taking turns
#                     (wgmma-persist, wgmma-pingpong: the same kernel, told apart by attention_gpu's
#                     NVTX range), at plain causal T 16384
#                     the wgmma forward: speed of light, occupancy, warp stall reasons, memory,
#                     instruction mix, source counters        -> profile-attention.txt; and each
#                     kernel's SASS with the warp stalls sampled at each instruction (where ncu
#                     prints a report's source page)                      -> profile-sass-NAME.csv.gz
#                     and those samples summed by instruction kind      -> profile-sass-summary.txt
#   racecheck         compute-sanitizer racecheck on the GPU tests, sized down (see st_racecheck)
#   memcheck, synccheck  compute-sanitizer on the GPU tests, as run_gpu_suite.sh runs them
# A stage gets min(its limit, what is left of the budget); one that would get less than its
# minimum is skipped with a line saying so. Without a GPU (no nvidia-smi, or it lists no device)
# every stage but info says "skipped: no GPU" and the script exits 0. Exit status: 1 when a stage
# failed or timed out, 2 on bad arguments (one line, nothing written), 130 when stopped by Ctrl-C
# or SIGTERM (the stage running is stopped too; the archive holds the stages before it).
#
# From a bundle (lib.tar.gz beside this script) env.sh sets everything up; from a checkout
# (ci/bundle/ of the repository) the programs are GM_BIN's (default build/), the scripts GM_ROOT's
# (default the checkout), as `make gpu-report-check` runs it. Tested without a GPU where every
# stage skips or fails at once (verify/test_gpu_report_script.c); ran on an H200 at 34feab9
# (reports/gpu-h200/: 535 s at --budget-s 545, every stage before the sanitizers well inside its limit).
set -uo pipefail
me=run_gpu_report.sh
usage="usage: $me OUTDIR [--budget-s N] [--stages A,B,...]"
fail() { echo "$me: error: $*" >&2; exit 2; }

# The stages, in their order (the calls at the end of this script).
ALL_STAGES="wgmma-check pingpong-check gpu-suite kernels-softcap kernels-normuon step-compare peers backend-compare
attention-window attention-docs attention-ab kernels-ab kernels-wgmma1 predict attention-causal profile racecheck
memcheck synccheck"
is_stage() { [[ " "$(echo $ALL_STAGES)" " == *" $1 "* ]]; }
out= budget=480 stages= stages_given=
while [ $# -gt 0 ]; do
    case $1 in
    --budget-s) [ $# -ge 2 ] || fail "--budget-s needs a value ($usage)"; budget=$2; shift 2 ;;
    --budget-s=*) budget=${1#*=}; shift ;;
    --stages) [ $# -ge 2 ] || fail "--stages needs a value ($usage)"; stages=$2 stages_given=1; shift 2 ;;
    --stages=*) stages=${1#*=} stages_given=1; shift ;;
    -h | --help) echo "$usage (the head of $0 says more)"; exit 0 ;;
    -*) fail "unknown option '$1' ($usage)" ;;
    *) [ -z "$out" ] || fail "one OUTDIR only, got '$out' and '$1' ($usage)"; out=$1; shift ;;
    esac
done
[ -n "$out" ] || fail "no OUTDIR ($usage)"
[[ $budget =~ ^[0-9]{1,6}$ ]] && [ "$((10#$budget))" -gt 0 ] ||
    fail "--budget-s '$budget': not a whole number of seconds from 1 to 999999"
budget=$((10#$budget))
if [ -n "$stages_given" ]; then
    [[ $stages =~ ^[a-z0-9-]+(,[a-z0-9-]+)*$ ]] || fail "--stages '$stages': not a comma-separated list of stage names"
    for s in ${stages//,/ }; do
        is_stage "$s" || fail "--stages: no stage '$s' (stages: $(echo $ALL_STAGES | tr ' ' ','))"
    done
    stages=",$stages,"
fi
[ ! -e "$out" ] || { [ -d "$out" ] && [ -z "$(ls -A "$out")" ]; } || fail "$out exists and is not an empty folder"
mkdir -p "$out" || fail "cannot create $out"
out=$(cd "$out" && pwd)
archive=$out.tar.gz

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -f "$here/lib.tar.gz" ]; then
    . "$here/env.sh" 2>"$out/env.log" || { echo "$me: error: $here/env.sh failed (see $out/env.log)" >&2; exit 1; }
    V=$GM_BUNDLE/verify/gm_verify
    build_id=$(head -1 "$GM_BUNDLE/MANIFEST.txt")
else
    export GM_ROOT=${GM_ROOT:-$(cd "$here/../.." && pwd)}
    export GM_BIN=${GM_BIN:-$GM_ROOT/build}
    export GM_TESTPROG=${GM_TESTPROG:-$GM_BIN/verify/prog}
    export OMP_WAIT_POLICY=passive
    V=$GM_BIN/verify/gm_verify
    build_id="checkout $GM_ROOT at $(git -C "$GM_ROOT" describe --always --dirty 2>/dev/null || echo '(no git)'), programs from $GM_BIN"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/gm-gpu-report-work.XXXXXX")
trap 'rm -rf "$work"' EXIT
export out work V build_id

# cuDNN, which the plain-causal attention loads at run time (backend/cuda/attention_cudnn.cu): the
# node's own where the loader finds it, else PyTorch's copy (GM_CUDNN_LIB). Where either is there,
# the GPU suite runs with GM_REQUIRE_CUDNN=1: its cuDNN tests fail rather than skip.
cudnn_where=
if [ -n "${GM_CUDNN_LIB:-}" ]; then
    cudnn_where="GM_CUDNN_LIB=$GM_CUDNN_LIB (given)"
elif lib=$(ldconfig -p 2>/dev/null | grep -m1 -o '/[^ ]*/libcudnn\.so\.9$') && [ -n "$lib" ]; then
    cudnn_where="$lib (the loader's)"
elif lib=$(python3 -c 'import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], "lib", "libcudnn.so.9"))' \
    2>/dev/null) && [ -f "$lib" ]; then
    export GM_CUDNN_LIB=$lib
    cudnn_where="GM_CUDNN_LIB=$lib (PyTorch's copy)"
fi
export cudnn_where

# The GPU suites memcheck runs (their names' pattern): all but cuda_fault, whose test faults on purpose.
export SANITIZED_SUITES='cuda_!(fault)'
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
export sanitizer ncu

# ---- the stages (each runs in its own bash under timeout: exported) ----
st_info() {
    echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) CPUs"
    echo "== build: $build_id"
    echo "== nvidia-smi"
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,persistence_mode,power.limit,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem --format=csv
    nvidia-smi -q -d CLOCK,PERFORMANCE
    echo "== compute-sanitizer: ${sanitizer:-not found}"
    echo "== ncu: ${ncu:-not found}"
    echo "== cuDNN: ${cudnn_where:-not found (the plain-causal attention runs the tensor-core kernel)}"
    # cuDNN's description of this GPU, for building its attention plans on a machine without one
    # (verify/cudnn_devices/, test cudnn_graph).
    [ -z "$cudnn_where" ] || "$GM_TESTPROG/cudnn_plan" --device-json >"$out/cudnn-device.json" ||
        { rm -f "$out/cudnn-device.json"; echo "== cudnn_plan --device-json failed"; }
    echo "== python3: $(python3 --version 2>&1)"
    echo "== GM_ROOT=$GM_ROOT GM_BIN=$GM_BIN LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    return 0  # a missing nvidia-smi is what this stage reports, not a failure
}
st_wgmma_check() {
    local tests='parts_one_at_a_time|masks_and_head_dims|persistent_forward_same_bits'
    GM_REQUIRE_GPU=1 "$V" --filter "cuda_attn_wgmma/@($tests)" --jobs 1 --verbose
}
export PINGPONG_TEST=pingpong_forward_same_bits  # (cuda_attn_wgmma's) pingpong-check's, left out where it failed
st_pingpong_check() { GM_REQUIRE_GPU=1 "$V" --filter "cuda_attn_wgmma/$PINGPONG_TEST" --jobs 1 --verbose; }
# The GPU tests a stage runs: every one, or all but the pingpong form's once pingpong-check failed.
tests_run() { [ -z "${GM_ATTN_SKIP:-}" ] && echo '*' || echo "!($PINGPONG_TEST)"; }
st_gpu_suite() {
    GM_REQUIRE_GPU=1 GM_REQUIRE_CUDNN=$([ -n "$cudnn_where" ] && echo 1 || echo 0) "$V" \
        --filter "@(cuda_*|cudnn_*)/$(tests_run)" --jobs 1 --verbose
}
# kernels_run BENCH PRESET NAME [BACKWARD-FORM]: bench/BENCH (kernels, or a baseline's:
# kernels-baseline) at the record's per-GPU step with the automatic attention (GM_CUDA_ATTN=auto,
# or auto,FORM: the backward pinned), writing NAME.{csv,md}.
kernels_run() {
    GM_CUDA_ATTN=auto${4:+,$4} "$GM_BIN/bench/$1" --preset="$2" --scale=full --backend=cuda --seq_len=65536 \
        --steps=3 --out="$out" --name="$3"
}
st_kernels() {  # st_kernels PRESET [BACKWARD-FORM]: the attention's backward form, in the files' name
    kernels_run kernels "$1" "kernels-$1${2:+-$2}" "${2:-}"
}
st_step_compare() {
    python3 "$GM_ROOT/bench/gpu_step_compare.py" --build "$GM_BIN" --backend cuda --ref cpu-bf16 --steps 3 --halt 1 \
        --work "$work/step-compare" --out "$out/step-compare.md"
}
st_peers() {
    python3 "$GM_ROOT/bench/peers_gpu.py" --build "$GM_BIN" --preset softcap \
        --ours "$out/kernels-softcap.csv" --out "$out" --name peers-gpu
}
st_backend_compare() {
    "$GM_BIN/bench/backend_compare" --backend=cuda --ref=cpu-bf16 --shapes=all --out="$out/backend-compare.md"
}
# attention_run BENCH NAME FLAGS...: bench/BENCH (attention_gpu, or a baseline's:
# attention_gpu-baseline) at softcap's shape, writing NAME.{csv,md}; the command first in the log.
attention_run() {
    local bench=$1 args=(--preset=softcap --out="$out" --name="$2" "${@:3}")
    echo "$bench ${args[*]}"
    "$GM_BIN/bench/$bench" "${args[@]}"
}
st_attention() {  # st_attention NAME FLAGS...
    attention_run attention_gpu "$@" ${GM_ATTN_SKIP:+--skip=$GM_ATTN_SKIP}
}
# st_attention_ab "NAME FLAGS..." ...: the baseline's bench with the flags this build's ran with as
# stage NAME (st_attention's, but --skip: the baseline's forms are its own), then this build's again
# as NAME-again (so that its two runs bracket the baseline's: attention_ab.py --again), then the
# three set side by side; a NAME whose stage wrote no CSV here is passed (baseline_why asks for one
# at least). Why again: at run 9 the second of two step runs was 1.00-1.02x slower in every
# unchanged kernel (reports/gpu-h200/run-925987e/), a drift as large as the changes being judged.
st_attention_ab() {
    local spec name flags
    for spec in "$@"; do
        read -r name flags <<<"$spec"
        if [ ! -f "$out/$name.csv" ]; then
            echo "$name: not compared (no $name.csv: its stage did not run here)"
            continue
        fi
        attention_run attention_gpu-baseline "$name-baseline" $flags || return
        st_attention "$name-again" $flags || return
        python3 "$GM_ROOT/bench/attention_ab.py" --ours="$out/$name.csv" --baseline="$out/$name-baseline.csv" \
            --again="$out/$name-again.csv" --out="$out/$name-ab.md" || return
    done
}
# The baseline's step as kernels-softcap ran this build's (each its own choice of attention forms),
# then this build's again (kernels-softcap-again), and by this build's kernels --compare: the
# baseline (A) against this build before it and after it (B), and this build's two runs (the same
# code twice: how far the run drifts, as at run 9, where the second run was 1.00-1.02x slower).
kernels_compare() {  # kernels_compare TITLE A.csv B.csv: a heading, then this build's B/A table
    echo "# $1"
    "$GM_BIN/bench/kernels" --compare "$2" "$3"
}
st_kernels_ab() {
    local base="$out/kernels-softcap-baseline.csv" first="$out/kernels-softcap.csv"
    local again="$out/kernels-softcap-again.csv"
    local before="The baseline (A) against this build, its run before the baseline's (B)"
    local after="The baseline (A) against this build, its run after the baseline's (B)"
    local twice="This build before (A) and after (B) the baseline: the same code twice, the run's drift"
    kernels_run kernels-baseline softcap kernels-softcap-baseline &&
        kernels_run kernels softcap kernels-softcap-again &&
        { kernels_compare "$before" "$base" "$first" && echo && kernels_compare "$after" "$base" "$again" && echo &&
            kernels_compare "$twice" "$first" "$again"; } >"$out/kernels-softcap-ab.txt"
}
# profile_kernel NAME HEADING REGEX BENCH-FLAGS...: one ncu run of st_profile (its $pick, $collect,
# $bench) on the first launch of the kernel whose demangled name REGEX matches; with nvtx_range=RANGE
# before it, the first inside attention_gpu's NVTX range RANGE (its calls of one form and pass:
# wgmma-persist-forward and wgmma-pingpong-forward launch wgmma's forward kernel). The report, kept
# in $work/NAME.ncu-rep, is printed ($print) into profile-attention.txt and, where $per_instruction,
# its source page goes to profile-sass-NAME.csv.gz: each SASS instruction with its sampled warp
# stalls.
profile_kernel() {
    local name=$1 heading=$2 regex=$3 in_range=()
    shift 3
    [ -z "${nvtx_range:-}" ] || in_range=(--nvtx --nvtx-include "$nvtx_range/")
    echo "==== $heading"
    "$ncu" $pick "${in_range[@]}" -k "regex:$regex" $collect -f -o "$work/$name" $bench "$@" >"$work/ncu.txt" 2>&1
    local rc=$?
    cat "$work/ncu.txt"
    [ "$rc" = 0 ] || return "$rc"
    if grep -q "No kernels were profiled" "$work/ncu.txt"; then
        echo "profile: no kernel matched '$regex'"
        return 1
    fi
    "$ncu" -i "$work/$name.ncu-rep" $print || return
    [ -n "$per_instruction" ] || return 0
    if "$ncu" -i "$work/$name.ncu-rep" --page source --csv --print-source sass >"$work/$name.csv" 2>"$work/ncu.err" &&
        gzip -c "$work/$name.csv" >"$out/profile-sass-$name.csv.gz"; then
        echo "per instruction: profile-sass-$name.csv.gz ($(wc -l <"$work/$name.csv") lines)"
    else
        echo "profile: no per-instruction samples for $name: $(tail -1 "$work/ncu.err")"
        sass_failed=1
    fi
}
# One ncu pass per kernel (-c 1: its first launch, the bench's warm-up call), each over a whole
# attention_gpu run at one length (its naive kernels are not profiled). Why: the windowed masks run
# at ~55% of plain causal's TFLOP/s per tile (reports/gpu-h200/), and the stall reasons say why.
st_profile() {
    # --clock-control none: ncu's default locks the clocks, and the card's settings are not ours to change
    local collect="--clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy"
    collect+=" --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
    collect+=" --section MemoryWorkloadAnalysis"
    collect+=" --section InstructionStats --section SourceCounters"
    # per instruction kind (LDGSTS, LDG, STG, LDS, ...): requests, sectors and wavefronts, so the excess
    # sectors and wavefronts run-1772e6e found are placed (the copies into shared memory, or the stores)
    collect+=" --section MemoryWorkloadAnalysis_Tables"
    # Each section's body, where ncu has the option (2023.2 on; the node's is 2025.3): Warp State
    # Statistics then lists the cycles a warp spends in each stall reason, and Source Counters the
    # instructions where warps stall most (run-1772e6e printed only their headers: no eligible warp
    # 67-76% of cycles, but not why). And, where ncu prints a report's source page, every SASS
    # instruction with the warp stalls sampled at it (Source Counters' sampling): which wait a tile's
    # time goes to (the wgmma products', the TMA barriers', a shuffle's), read against the kernel's
    # SASS from the same build (cuobjdump -sass). grep reads the whole help, not -q: under pipefail
    # ncu must not die of a closed pipe.
    local print="" per_instruction="" sass_failed="" help
    help=$("$ncu" --help 2>&1)
    if echo "$help" | grep -- --print-details >/dev/null; then print="--print-details all"; fi
    if echo "$help" | grep -- --print-source >/dev/null; then per_instruction=1; else
        echo "profile: this ncu has no --print-source: no per-instruction samples"
    fi
    # The kernels by their template arguments, as ncu's demangled names spell them (run-e4790d9's
    # profile-attention.txt lists them: `void attn_fwd_128<(int)2, (bool)0>(...)` for
    # attn_fwd_128<M, WG>, `attn_dq_128<(bool)1>`; the dk/dv kernel has since gained its second
    # argument, attn_dkdv_128<WG, DQ>), the first launch of each: the forms
    # impl/backend/cuda/attention.cu's automatic choice runs at these shapes, and the one-pass
    # backward (DQ), not chosen automatically until timed. A selector that matches nothing (ncu then
    # says so and exits 0) fails the stage, as a source page that cannot be printed does once every
    # kernel has had its run.
    local bench="$GM_BIN/bench/attention_gpu --preset=softcap --reps=1 --out=$work/profile --name=p"
    local pick="--kernel-name-base demangled -c 1" record="--tmin=65536 --tmax=65536 --doc_len=700"
    profile_kernel fwd-mma32 "the 32-rows-a-warp forward: record mask (T 65536, window 14, documents of mean 700)" \
        'attn_fwd_128<\(int\)2, \(bool\)0>' $record || return
    profile_kernel dq-wgmma "the wgmma dq kernel: record mask" 'attn_dq_128<\(bool\)1>' $record || return
    profile_kernel dkdv-wgmma "the wgmma dk/dv kernel: record mask" 'attn_dkdv_128<\(bool\)1, \(bool\)0>' $record ||
        return
    profile_kernel bwd-onepass "the one-pass backward: record mask" 'attn_dkdv_128<\(bool\)1, \(bool\)1>' $record ||
        return
    profile_kernel fwd-wgmma "the wgmma forward: record mask" 'attn_fwd_128<\(int\)1, \(bool\)1>' $record || return
    nvtx_range=wgmma-persist-forward profile_kernel fwd-wgmma-persist \
        "the persistent wgmma forward (wgmma-persist): record mask" 'attn_fwd_128<\(int\)1, \(bool\)1>' $record ||
        return
    if [ -n "${GM_ATTN_SKIP:-}" ]; then
        echo "profile: wgmma-pingpong left out (pingpong-check failed)"
    else
        nvtx_range=wgmma-pingpong-forward profile_kernel fwd-wgmma-pingpong \
            "the wgmma forward taking turns (wgmma-pingpong): record mask" 'attn_fwd_128<\(int\)1, \(bool\)1>' \
            $record || return
    fi
    profile_kernel fwd-wgmma-causal "the wgmma forward: plain causal T 16384" 'attn_fwd_128<\(int\)1, \(bool\)1>' \
        --tmin=16384 --tmax=16384 --window=0 || return
    # The source pages read: each kernel's samples by instruction kind and its most sampled
    # instructions (bench/ncu_sass_summary.py), the pages themselves kept whatever it says.
    if ls "$out"/profile-sass-*.csv.gz >/dev/null 2>&1; then
        if python3 "$GM_ROOT/bench/ncu_sass_summary.py" "$out"/profile-sass-*.csv.gz >"$work/summary.txt" \
            2>"$work/summary.err"; then
            mv "$work/summary.txt" "$out/profile-sass-summary.txt"
            echo "per instruction, summed: profile-sass-summary.txt"
        else
            echo "profile: no summary of the per-instruction samples: $(tail -1 "$work/summary.err")"
        fi
    fi
    [ -z "$sass_failed" ]
} >"$out/profile-attention.txt" 2>&1
st_predict() {
    python3 "$GM_ROOT/bench/gpu_rates.py" "$out" "$out/rates.csv" &&
        "$GM_BIN/bench/kernels" --count=1 --preset=softcap --scale=full --backend=cuda --recompute=off \
            --seq_len=65536 --rates="$out/rates.csv" --measured="$out/kernels-softcap.csv" --out="$out" \
            --name=predicted-softcap
}
sanitize() {  # sanitize TOOL FILTER
    "$sanitizer" --tool "$1" --target-processes all --error-exitcode 99 --print-limit 100 \
        "$V" --filter "$2" --jobs 1 --verbose
}
# Racecheck of cuda_attn* outlasted 100 s twice on the H100 (../shared/h100-2026-11-26/README.md)
# and its 120 s on the H200 (reports/gpu-h200/: counting_long_windows alone took 126 s, 3 s
# without racecheck), so it never reached the other suites. Sized down, the tensor-core attention
# first, since its shared-memory ring is where a race would be: its tests but the two whose point
# is length (record_shape_window_14: T 8192, 6 heads, and the naive kernels at that size for its
# references; counting_long_windows: T <= 3000), with GM_GPU_TEST_MAX_WORK=6e7 (head_dim_64 and
# head_dim_128 keep their cases up to T ~330: one tile and a row, several tiles, blocks below, at and
# above the tiles, windows and documents), and its wgmma form with the same cap; then every other
# suite with 3e6 (the cap under which a functional simulator, far slower than racecheck, ran them in
# minutes: reports/gpu-sim/README.md), but cuDNN's (cuda_attn_cudnn): racecheck reports hazards
# inside cuDNN's own generated sm90 flash kernels, code we can neither change nor read, and spent
# the rest of the stage's time there (reports/gpu-h200/run-ecc8627/racecheck.log); memcheck still
# runs it. The wgmma suite first (the kernels a Hopper GPU runs; their TMA rings are the newest
# synchronization), then mma's: on the H200 at 54fbabe (run 8) the mma suite took ~70 s under
# racecheck and the wgmma suite then ran out of the stage's 120 s; at 925987e (run 9) the wgmma
# tests that fit the cap took 53 s.
st_racecheck() {
    local rc=0 left_out='record_shape_window_14|counting_long_windows'
    [ -z "${GM_ATTN_SKIP:-}" ] || left_out+="|$PINGPONG_TEST"
    GM_REQUIRE_GPU=1 GM_GPU_TEST_MAX_WORK=6e7 sanitize racecheck "cuda_attn_wgmma/!($left_out)" || rc=1
    GM_REQUIRE_GPU=1 GM_GPU_TEST_MAX_WORK=6e7 sanitize racecheck "cuda_attn_mma/!($left_out)" || rc=1
    # (a test all of whose cases are above 3e6, e.g. Newton-Schulz's, is skipped, not failed)
    GM_REQUIRE_GPU=1 GM_GPU_TEST_MAX_WORK=3e6 GM_GPU_TEST_EMPTY_SKIPS=1 \
        sanitize racecheck 'cuda_!(fault|attn_mma|attn_wgmma|attn_cudnn)/*' || rc=1
    return $rc
}
st_memcheck() { GM_REQUIRE_GPU=1 sanitize memcheck "$SANITIZED_SUITES/$(tests_run)"; }
# synccheck leaves cuDNN's suite out too: on the H200 at e4790d9 it reported a divergent barrier at
# one instruction of cuDNN's generated sm90 backward kernel (cudnn_generated_fort_native_sdpa_sm90_
# flash_bprop_wgmma_*, +0x4520; 320 reports, every one there) and that kernel's launch then failed,
# failing both cuDNN tests (reports/gpu-h200/run-e4790d9/synccheck.log); every other suite, ours,
# ran clean.
st_synccheck() { GM_REQUIRE_GPU=1 sanitize synccheck "cuda_!(fault|attn_cudnn)/$(tests_run)"; }
export -f st_info st_wgmma_check st_pingpong_check tests_run st_gpu_suite kernels_run st_kernels st_step_compare \
    st_peers st_backend_compare attention_run st_attention st_attention_ab kernels_compare st_kernels_ab \
    profile_kernel st_profile st_predict sanitize st_racecheck st_memcheck st_synccheck

# ---- running them ----
RESERVE=10  # seconds kept for the last packing
failed=0
# timeout puts each stage in a process group of its own, which neither a Ctrl-C at the terminal nor
# a SIGTERM to this script reaches: pass them on to the stage running, then stop.
stage_pid=
trap '[ -z "$stage_pid" ] || kill -TERM -- "-$stage_pid" 2>/dev/null; exit 130' INT TERM
pack() {
    tar -C "$(dirname "$out")" -czf "$archive.tmp" "$(basename "$out")" && mv -f "$archive.tmp" "$archive"
}
# stage NAME LIMIT MIN CHECK FUNCTION [ARGS...]: FUNCTION under timeout, its output in NAME.log;
# CHECK prints why the stage cannot run here (nothing: it can), asked only when there is time for it.
stage() {
    local name=$1 limit=$2 min=$3 check=$4 note= line why= rc t0 tests errs own
    shift 4
    local left=$((budget - SECONDS - RESERVE)) log=$out/$name.log
    [ "$name" = info ] || is_stage "$name" || {
        echo "$me: internal error: stage '$name' is not in ALL_STAGES" >&2
        exit 3
    }
    if [ "$name" != info ] && [ -n "$stages" ] && [[ $stages != *",$name,"* ]]; then
        why="not in --stages"
    elif [ "$left" -ge "$min" ]; then
        why=$($check)
    fi
    left=$((budget - SECONDS - RESERVE))  # CHECK may have taken a while (torch's import)
    if [ -n "$why" ]; then
        line="skipped: $why"
    elif [ "$left" -lt "$min" ]; then
        line="skipped: $((left > 0 ? left : 0)) s left of the $budget s budget, the stage needs $min s"
    else
        if [ "$left" -lt "$limit" ]; then
            note="; limit cut from $limit s to $left s by the budget"
            limit=$left
        fi
        t0=$SECONDS
        timeout --kill-after=10 "$limit" bash -c 'set -uo pipefail; "$@"' "$name" "$@" </dev/null >"$log" 2>&1 &
        stage_pid=$!
        wait "$stage_pid"
        rc=$?
        stage_pid=
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            line="timed out after $limit s"
        else
            line="exit $rc, $((SECONDS - t0)) s"
        fi
        # The GPU test count, the sanitizer's verdict and a program's own "skipped" (attention_gpu
        # exits 0 without a device), where the log has them.
        tests=$(grep -h '^GPU tests:' "$log" | tail -1)
        errs=$(grep -ho 'ERROR SUMMARY: .*' "$log" | tail -1)
        own=$(grep -h -m1 '^[a-z_]*: skipped: ' "$log")
        line+=${tests:+; $tests}${errs:+; $errs}${own:+; $own}$note
        [ $rc -eq 0 ] || failed=$((failed + 1))
    fi
    echo "$name: $line" | tee -a "$out/summary.txt"
    pack
}

nogpu=
gpus=$(timeout 30 nvidia-smi -L 2>&1) && grep -q '^GPU [0-9]' <<<"$gpus" || nogpu="no GPU"
anywhere() { :; }
gpu_why() { echo "$nogpu"; }
hopper_why() {  # the wgmma forms run on sm_90 only, and not once wgmma-check has turned them off
    [ -z "$nogpu" ] || { echo "$nogpu"; return; }
    [ "${GM_CUDA_WGMMA:-on}" != off ] || { echo "GM_CUDA_WGMMA=off"; return; }
    local cap
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
    [ "$cap" = 9.0 ] || echo "not an sm_90 GPU (compute capability ${cap:-unknown}): no wgmma forms"
}
torch_why() {
    [ -z "$nogpu" ] || { echo "$nogpu"; return; }
    timeout 60 python3 -c 'import torch' >/dev/null 2>&1 || echo "python3 cannot import torch"
}
predict_why() {  # the stages that write its inputs ran
    [ -z "$nogpu" ] || { echo "$nogpu"; return; }
    local f
    for f in kernels-softcap.csv peers-gpu.csv attention-window.csv; do
        [ -f "$out/$f" ] || { echo "no $f (the stage that writes it did not)"; return; }
    done
}
baseline_why() {  # baseline_why BENCH CSV...: BENCH's baseline in this bundle, and this build's CSV (one at least)
    [ -z "$nogpu" ] || { echo "$nogpu"; return; }
    [ -x "$GM_BIN/bench/$1-baseline" ] ||
        { echo "no baseline $1 here (a bundle made by make bundle BASELINE=REV holds one)"; return; }
    local f csvs=
    for f in "${@:2}"; do
        [ -f "$out/$f" ] && return
        csvs+="${csvs:+ or }$f"
    done
    echo "no $csvs (the stage that writes it did not run here)"
}
attention_ab_why() { baseline_why attention_gpu attention-docs.csv attention-window.csv; }
kernels_ab_why() { baseline_why kernels kernels-softcap.csv; }
ncu_why() {
    [ -z "$nogpu" ] || { echo "$nogpu"; return; }
    [ -n "$ncu" ] || echo "ncu (Nsight Compute) not found"
}
sanitizer_why() {
    [ -z "$nogpu" ] || { echo "$nogpu"; return; }
    [ -n "$sanitizer" ] || echo "compute-sanitizer not found"
}

# The plain-causal presets' attention now builds cuDNN plans, each compiling its kernels at run time
# (~2-4 s a plan on a CPU core, every process anew): step-compare's limit is 90 s for its four
# plain-causal presets' two plans each; gpu-suite's 150 s holds the cuDNN tests' ~12 plans;
# attention-causal's is 120 s, as it now also times cuDNN (two plans at each of its 7 lengths).
# Limits from the first H100 run (../shared/h100-2026-11-26/): the 35 GPU tests took 48 s; a
# kernels step is 0.41 s (4 of them, the CPU ceilings, the shards and the model's set-up around);
# the step comparison of all presets 22 s; attention_gpu at softcap's window ~15 s to T 65536, plain
# causal 40 s to T 32768 and ~25 s more for 65536 (the naive kernels: 4 s a backward call there).
# peers: torch's import, 3 s of warm-up, two compilations (NS and FlexAttention). backend_compare's
# shapes are small enough for a simulator. The sanitizers come last and take what is left, racecheck
# first: memcheck and synccheck passed there (at d81bddf), racecheck never finished. On the H200 at
# 34feab9 (reports/gpu-h200/summary.txt): GPU tests 65 s (37 tests), kernels 15 and 18 s, step
# comparison 28 s, peers 78 s, backend_compare 1 s, attention 9 and 39 s; memcheck 92 s. The
# profile took 30 s for 4 kernels at 1772e6e (run-1772e6e/summary.txt); it now profiles 8 and
# imports each report twice (its text, its source page): 150 s. attention-ab times the docs and
# window cases with the baseline's bench and again with this build's (11 s each at runs 6 and 7,
# 20 s the two baseline runs at run 8): 100 s; kernels-ab the step with the baseline's bench and
# again with this build's (14-15 s each at run 8): 80 s.
stage info 30 5 anywhere st_info
stage wgmma-check 60 15 hopper_why st_wgmma_check
# Whether stage NAME failed or timed out (its line in summary.txt).
stage_failed() { grep -qE "^$1: (exit [1-9]|timed out)" "$out/summary.txt"; }
if stage_failed wgmma-check; then
    export GM_CUDA_WGMMA=off
    echo "wgmma-check: failed, so every later stage runs with GM_CUDA_WGMMA=off (the mma.sync kernels)" |
        tee -a "$out/summary.txt"
fi
stage pingpong-check 45 15 hopper_why st_pingpong_check
if stage_failed pingpong-check; then
    export GM_ATTN_SKIP=wgmma-pingpong
    echo "pingpong-check: failed, so every later stage leaves wgmma-pingpong out" | tee -a "$out/summary.txt"
fi
stage gpu-suite 150 60 gpu_why st_gpu_suite
stage kernels-softcap 60 20 gpu_why st_kernels softcap
stage kernels-normuon 60 20 gpu_why st_kernels normuon
stage step-compare 90 30 gpu_why st_step_compare
stage peers 150 60 torch_why st_peers
stage backend-compare 60 20 gpu_why st_backend_compare
WINDOW_FLAGS="--reps=5" DOCS_FLAGS="--doc_len=700 --reps=5"
stage attention-window 45 20 gpu_why st_attention attention-window $WINDOW_FLAGS
stage attention-docs 45 20 gpu_why st_attention attention-docs $DOCS_FLAGS
stage attention-ab 100 20 attention_ab_why st_attention_ab "attention-docs $DOCS_FLAGS" "attention-window $WINDOW_FLAGS"
stage kernels-ab 80 20 kernels_ab_why st_kernels_ab
stage kernels-wgmma1 60 20 hopper_why st_kernels softcap wgmma1
stage predict 60 10 predict_why st_predict
stage attention-causal 120 30 gpu_why st_attention attention-causal --window=0 --reps=3
stage profile 150 30 ncu_why st_profile
stage racecheck 200 30 sanitizer_why st_racecheck
stage memcheck 150 30 sanitizer_why st_memcheck
stage synccheck 120 30 sanitizer_why st_synccheck
echo "total: $SECONDS s of the $budget s budget; $failed stage(s) failed or timed out" | tee -a "$out/summary.txt"
pack
[ $failed -eq 0 ]
