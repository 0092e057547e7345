#!/usr/bin/env bash
# The GPU checks of a bare GPU node, from the bundle, logs into OUTDIR:
#   run_gpu_suite.sh OUTDIR [STEP ...]      (default: every step, in this order)
# steps:
#   info       nvidia-smi, the driver, and where libcublas/libcusolver/libcudnn/libnccl live -> info.txt
#   gpu        the GPU tests (suites cuda_*), GM_REQUIRE_GPU=1: no device is a failure  -> gpu_suite.log
#   all        every test of the release and fp64 builds (CPU and GPU)                  -> all_suites.log
#   memcheck   compute-sanitizer memcheck on the GPU tests                              -> memcheck.log
#   racecheck  compute-sanitizer racecheck (shared memory races) on the GPU tests       -> racecheck.log
#   synccheck  compute-sanitizer synccheck (barrier misuse) on the GPU tests            -> synccheck.log
# The sanitizer steps leave out suite cuda_fault, whose test makes a device fault on purpose;
# racecheck and synccheck leave out cuDNN's (cuda_attn_cudnn) too: both report inside cuDNN's own
# generated sm90 kernels, and synccheck's reports fail their launch (run_gpu_report.sh says where).
# OUTDIR/summary.txt gets one line per step (its exit status and the GPU test count). Exit status:
# non-zero when a step failed. Each step runs on its own, so a session with a time limit per
# command can run them one or two at a time (the device tool: 10 minutes a command).
set -uo pipefail
out=${1:?usage: run_gpu_suite.sh OUTDIR [info gpu all memcheck racecheck synccheck]}
shift
mkdir -p "$out" && out=$(cd "$out" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/env.sh" 2>>"$out/info.txt" || exit 1
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(info gpu all memcheck racecheck synccheck)
V=$GM_BUNDLE/verify/gm_verify
GPU_SUITES='cuda_*/*'
SANITIZED_SUITES='cuda_!(fault)/*' OURS_SANITIZED='cuda_!(fault|attn_cudnn)/*'
status=0

summary() {  # summary STEP RC LOG
    local line
    line=$(grep -h '^GPU tests:' "$3" 2>/dev/null | tail -1)
    echo "$1: exit $2${line:+; $line}$( grep -h 'ERROR SUMMARY' "$3" 2>/dev/null | tail -1 | sed 's/^=* */; /')" >>"$out/summary.txt"
    [ "$2" -eq 0 ] || status=1
}

sanitize() {  # sanitize TOOL FILTER
    local san
    san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
    if [ -z "$san" ]; then
        echo "compute-sanitizer not found" >"$out/$1.log"
        summary "$1" 127 "$out/$1.log"
        return
    fi
    GM_REQUIRE_GPU=1 "$san" --tool "$1" --target-processes all --error-exitcode 99 --print-limit 100 \
        "$V" --filter "$2" --jobs 1 >"$out/$1.log" 2>&1
    summary "$1" $? "$out/$1.log"
}

for step in "${steps[@]}"; do
    case $step in
    info)
        {
            echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) CPUs"
            cat "$GM_BUNDLE/MANIFEST.txt"
            echo "== nvidia-smi"
            nvidia-smi 2>&1
            nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv 2>&1
            echo "== where the CUDA libraries are (ldconfig, then the file system)"
            for n in libcuda.so.1 libcudart.so libcublas.so libcublasLt.so libcusolver.so libcudnn.so libnccl.so; do
                echo "-- $n: ldconfig: $(ldconfig -p 2>/dev/null | grep -m3 " $n" | awk '{print $NF}' | tr '\n' ' ')"
                find / -xdev \( -path /proc -o -path /sys \) -prune -o -name "$n*" -print 2>/dev/null | head -8
            done
            echo "== the GPU test binary's libraries"
            ldd "$V"
            echo "== GM_CUSOLVER_LIB=${GM_CUSOLVER_LIB:-} GM_NCCL_LIB=${GM_NCCL_LIB:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
        } >>"$out/info.txt" 2>&1
        summary info 0 /dev/null
        ;;
    gpu)
        GM_REQUIRE_GPU=1 "$V" --filter "$GPU_SUITES" --jobs 1 --verbose >"$out/gpu_suite.log" 2>&1
        summary gpu $? "$out/gpu_suite.log"
        ;;
    all)
        "$GM_BUNDLE/run_cpu_suite.sh" >"$out/all_suites.log" 2>&1
        summary all $? "$out/all_suites.log"
        ;;
    memcheck) sanitize memcheck "$SANITIZED_SUITES" ;;
    racecheck | synccheck) sanitize "$step" "$OURS_SANITIZED" ;;
    *)
        echo "run_gpu_suite.sh: unknown step '$step' (info gpu all memcheck racecheck synccheck)" >&2
        exit 2
        ;;
    esac
done
cat "$out/summary.txt"
exit $status
