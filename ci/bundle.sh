#!/usr/bin/env bash
# make bundle: a relocatable folder that runs the programs, the test suites and the GPU checks on
# a bare node (the NVIDIA driver and CUDA's libraries, none of our Debian packages, no registry).
#
#   ci/bundle.sh BUILD OUT
#
# With BASELINE=REV in the environment (make bundle BASELINE=REV), bin/bench also holds that commit's
# attention and step benches, built here from a checkout of REV with the same nvcc and CUDA_ARCH:
# attention_gpu-baseline and kernels-baseline, which the GPU report's attention-ab and kernels-ab
# stages time beside this build's in the same job (MANIFEST.txt names the commit and the source
# files this build differs from it in; the .md each writes names the commit too).
# BASELINE_BENCHES=attention_gpu or kernels builds that one only (a smaller bundle: the other
# stage then skips, saying why).
#
# OUT/ holds bin/ (train, make_data, dump_refmodel; bench/ below it, where the tests look), prog/ (test-only programs), verify/
# (the Criterion binaries), root/ (the files tests read: refdata/, the Python and gnuplot scripts of
# bench/ (and its shell scripts) and verify/, README.md, Makefile and impl/ for the source checks, reports/ for the step
# model's rates and measured tables and the README's links), the
# scripts of ci/bundle/ and lib.tar.gz: the shared libraries those programs load except glibc and
# CUDA's own (OpenBLAS, LAPACKE, gfortran, Criterion and its dependencies, Open MPI, zlib, libgomp,
# libstdc++), plus Open MPI's runtime (mpirun, its plugins and help files) under mpi/. env.sh, which
# every script sources, unpacks it next to bin/ on first use. Packed, the folder stays under the
# device tool's 64 MiB; unpacked it is about 100 MB.
#
# Every program's run path is $ORIGIN/../lib then CUDA_HOME/lib64; the libraries find each other
# through $ORIGIN. cuSOLVER and NCCL are not linked (loaded at run time where used); cuBLAS and the
# CUDA runtime come from the node (env.sh finds them where the loader does not).
set -euo pipefail
BUILD=${1:?usage: ci/bundle.sh BUILD OUT}
OUT=${2:?usage: ci/bundle.sh BUILD OUT}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v patchelf >/dev/null || { echo "bundle: patchelf not found (make deps installs it)" >&2; exit 1; }
[ -x "$BUILD/verify/gm_verify" ] || { echo "bundle: $BUILD/verify/gm_verify missing: run make build first" >&2; exit 1; }

# The baseline's benches first, so that a baseline that does not build leaves no half-made OUT (its
# folder is removed once they are copied; names of its own: the script uses `src` below).
BASELINE_BENCHES=${BASELINE_BENCHES:-attention_gpu kernels}
for p in $BASELINE_BENCHES; do
    case $p in attention_gpu | kernels) ;;
    *) echo "bundle: BASELINE_BENCHES=$BASELINE_BENCHES: $p is not attention_gpu or kernels" >&2; exit 1 ;;
    esac
done
baseline_tmp=
if [ -n "${BASELINE:-}" ]; then
    baseline_commit=$(git -C "$ROOT" rev-parse --verify --quiet "$BASELINE^{commit}") ||
        { echo "bundle: BASELINE=$BASELINE: not a commit of $ROOT" >&2; exit 1; }
    baseline_tmp=$(mktemp -d "${TMPDIR:-/tmp}/gm-bundle-baseline.XXXXXX")
    # a checkout (a clone sharing this one's objects), not an archive: the benches name their
    # commit from git (ci/build_info.py), and from an archive said "unknown (not a git checkout)"
    git clone -q --shared --no-checkout "$ROOT" "$baseline_tmp" && git -C "$baseline_tmp" checkout -q "$baseline_commit"
    echo "bundle: building the benches $BASELINE_BENCHES of $baseline_commit (BASELINE=$BASELINE) in $baseline_tmp"
    make -C "$baseline_tmp" -s ${NVCC:+NVCC="$NVCC"} CUDA_ARCH="${CUDA_ARCH:-sm_90a}" BUILD=build \
        $(printf 'build/bench/%s ' $BASELINE_BENCHES) >"$baseline_tmp.log" 2>&1 || {
        rm -rf "$baseline_tmp"
        echo "bundle: BASELINE=$BASELINE: its benches $BASELINE_BENCHES did not build (log: $baseline_tmp.log)" >&2
        exit 1
    }
    for p in $BASELINE_BENCHES; do mv "$baseline_tmp/build/bench/$p" "$baseline_tmp/$p-baseline"; done
fi

rm -rf "$OUT"
mkdir -p "$OUT"/{bin/bench,prog,verify,root/verify,pack/lib}
STAGE=$OUT/pack

# ---- programs: host debug info dropped (symbols kept for backtraces; the device code keeps its
# -lineinfo, which lives in the fat binary, for compute-sanitizer) ----
copy_prog() {  # copy_prog FILE DESTDIR
    cp "$1" "$2/"
    strip --strip-debug "$2/$(basename "$1")"
}
for p in train make_data dump_refmodel; do [ -x "$BUILD/$p" ] && copy_prog "$BUILD/$p" "$OUT/bin"; done
for p in "$BUILD"/bench/*; do [ -x "$p" ] && [ -f "$p" ] && copy_prog "$p" "$OUT/bin/bench"; done
for p in "$BUILD"/verify/prog/*; do [ -x "$p" ] && [ -f "$p" ] && copy_prog "$p" "$OUT/prog"; done
for p in gm_verify gm_verify64; do [ -x "$BUILD/verify/$p" ] && copy_prog "$BUILD/verify/$p" "$OUT/verify"; done
if [ -n "$baseline_tmp" ]; then
    for p in $BASELINE_BENCHES; do copy_prog "$baseline_tmp/$p-baseline" "$OUT/bin/bench"; done
    rm -rf "$baseline_tmp" "$baseline_tmp.log"
fi
cp -r "$ROOT/refdata" "$ROOT/impl" "$ROOT/reports" "$ROOT/README.md" "$ROOT/Makefile" "$OUT/root/"
mkdir -p "$OUT/root/bench"
cp "$ROOT"/verify/*.py "$OUT/root/verify/"
cp -r "$ROOT/verify/cudnn_devices" "$OUT/root/verify/"
cp "$ROOT"/bench/*.py "$ROOT"/bench/*.gp "$ROOT"/bench/*.sh "$OUT/root/bench/"
cp "$ROOT"/ci/bundle/*.sh "$ROOT/ci/bundle/README.txt" "$OUT/"

# ---- Open MPI's runtime, relocated by env.sh (OPAL_PREFIX and friends) ----
MPI_PLUGINS=
if command -v mpirun >/dev/null && command -v ompi_info >/dev/null; then
    mkdir -p "$STAGE/mpi"/{bin,lib,share,etc}
    cp -L "$(readlink -f "$(command -v mpirun)")" "$STAGE/mpi/bin/mpirun"
    ln -s mpirun "$STAGE/mpi/bin/mpiexec"
    [ -x /usr/bin/orted ] && cp -L /usr/bin/orted "$STAGE/mpi/bin/"
    path_of() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
    MPI_PLUGINS=$(path_of pkglibdir)
    cp -r "$MPI_PLUGINS" "$STAGE/mpi/lib/plugins"
    cp -r "$(path_of pkgdatadir)" "$STAGE/mpi/share/openmpi"
    cp "$(path_of sysconfdir)"/openmpi-mca-params.conf "$STAGE/mpi/etc/" 2>/dev/null || touch "$STAGE/mpi/etc/openmpi-mca-params.conf"
    # Open MPI's process manager (PMIx) has plugins and help files of its own.
    pmix=$(ldd "$MPI_PLUGINS"/mca_pmix_ext3x.so 2>/dev/null | awk '$1 ~ /^libpmix/ {print $3}')
    pmix_root=$( [ -n "$pmix" ] && dirname "$(dirname "$(readlink -f "$pmix")")" )
    if [ -n "$pmix_root" ] && [ -d "$pmix_root/lib/pmix" ]; then
        cp -r "$pmix_root/lib/pmix" "$STAGE/mpi/lib/pmix"
        cp -r "$pmix_root/share" "$STAGE/mpi/share/pmix-root"
    fi
fi

# ---- the shared libraries every ELF file above loads, except glibc's and CUDA's ----
is_system() {  # glibc (must match the node's loader) and the NVIDIA driver/CUDA libraries
    case "$1" in
    libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | \
        libutil.so.* | libanl.so.* | libnsl.so.* | ld-linux*.so.* | linux-vdso.so.*) return 0 ;;
    libcuda.so.* | libcudart.so.* | libcublas*.so.* | libcusolver*.so.* | libcusparse.so.* | libnvJitLink.so.* | \
        libcudnn*.so.* | libnccl.so.* | libnvidia*.so.*) return 0 ;;
    esac
    return 1
}
elves() {  # every ELF file of the bundle
    find "$OUT"/{bin,prog,verify} "$STAGE" -type f | while read -r f; do
        readelf -h "$f" >/dev/null 2>&1 && echo "$f"
    done
}
bundle_libs() {  # copy every missing dependency; repeat until nothing new (dependencies of libraries)
    local added=1
    while [ $added = 1 ]; do
        added=0
        while read -r f; do
            while read -r name path; do
                is_system "$name" && continue
                [ -e "$STAGE/lib/$name" ] && continue
                [ -f "$path" ] || { echo "bundle: $f needs $name, which is not found here" >&2; exit 1; }
                cp -L "$path" "$STAGE/lib/$name"
                chmod u+w "$STAGE/lib/$name"
                added=1
            done < <(ldd "$f" 2>/dev/null | awk '$2 == "=>" {print $1, $3}')
        done < <(elves)
    done
}
bundle_libs

# ---- run paths ----
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64
for f in "$OUT"/{bin,prog,verify}/*; do [ -f "$f" ] && patchelf --set-rpath "\$ORIGIN/../lib:$CUDA_LIB" "$f"; done
for f in "$OUT"/bin/bench/*; do patchelf --set-rpath "\$ORIGIN/../../lib:$CUDA_LIB" "$f"; done
for f in "$STAGE"/lib/*; do patchelf --set-rpath '$ORIGIN' "$f"; done
if [ -d "$STAGE/mpi" ]; then
    for f in "$STAGE"/mpi/bin/mpirun "$STAGE"/mpi/bin/orted; do [ -f "$f" ] && patchelf --set-rpath '$ORIGIN/../../lib' "$f"; done
    for f in "$STAGE"/mpi/lib/plugins/*.so "$STAGE"/mpi/lib/pmix/*.so; do
        [ -f "$f" ] && patchelf --set-rpath '$ORIGIN/../../../lib' "$f"
    done
fi

# ---- what is inside, and where each library came from ----
{
    echo "gptmuon bundle: commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+changes'), made $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "CUDA: $(${NVCC:-nvcc} --version 2>/dev/null | tail -1 || echo 'none (CPU-only build)')"
    if [ -n "${BASELINE:-}" ]; then
        echo "baseline: bin/bench/{$(echo $BASELINE_BENCHES | tr ' ' ,)}-baseline," \
            "of $baseline_commit (BASELINE=$BASELINE)"
        echo "  this build's sources differ from it in:" \
            "$(git -C "$ROOT" diff --name-only "$baseline_commit" -- impl | xargs)"
    fi
    echo "glibc needed: $(ldd --version | sed -n 1p)  (the node's must be this or newer)"
    echo
    echo "lib/ (packed in lib.tar.gz): library  <-  Debian package"
    for f in "$STAGE"/lib/*; do
        n=$(basename "$f")
        src=$(ldconfig -p | awk -v n="$n" '$1 == n {print $NF}' | sed -n 1p) || true
        pkg=$( { [ -n "$src" ] && { dpkg -S "$src" 2>/dev/null || dpkg -S "$(readlink -f "$src")" 2>/dev/null; }; } | sed -n 1p | cut -d: -f1) || true
        printf '  %-36s %s\n' "$n" "${pkg:-?}"
    done
    [ -n "$MPI_PLUGINS" ] && echo "mpi/: Open MPI's mpirun, orted, plugins ($MPI_PLUGINS) and help files"
} > "$OUT/MANIFEST.txt"

tar -C "$STAGE" -czf "$OUT/lib.tar.gz" lib $( [ -d "$STAGE/mpi" ] && echo mpi )
rm -rf "$STAGE"
echo "bundle: $OUT ($(du -sh "$OUT" | cut -f1) packed; $(tar -tzf "$OUT/lib.tar.gz" | grep -c '^lib/.') libraries)"
