# Sourced by the bundle's scripts (and by a user who wants mpirun and the programs on PATH):
#   . path/to/bundle/env.sh
# Unpacks lib.tar.gz beside bin/ on first use; sets what the test suites read (GM_ROOT, GM_BIN,
# GM_TESTPROG), Open MPI's relocation variables, and, where the loader does not find CUDA's
# libraries by itself, the folder that holds them (LD_LIBRARY_PATH) or the library file of the
# run-time loaded ones (GM_CUSOLVER_LIB, GM_NCCL_LIB). Nothing needs to be set beforehand.
GM_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export GM_BUNDLE

if [ ! -e "$GM_BUNDLE/lib/.unpacked" ]; then
    tmp=$(mktemp -d "$GM_BUNDLE/.unpack.XXXXXX")
    tar -C "$tmp" -xzf "$GM_BUNDLE/lib.tar.gz" || { echo "bundle: cannot unpack $GM_BUNDLE/lib.tar.gz" >&2; return 1 2>/dev/null || exit 1; }
    rm -rf "$GM_BUNDLE/lib" "$GM_BUNDLE/mpi"
    mv "$tmp"/* "$GM_BUNDLE/" && rmdir "$tmp"
    touch "$GM_BUNDLE/lib/.unpacked"
fi

export GM_ROOT=$GM_BUNDLE/root GM_BIN=$GM_BUNDLE/bin GM_TESTPROG=$GM_BUNDLE/prog
export OMP_WAIT_POLICY=passive
export PATH=$GM_BUNDLE/bin:$PATH

if [ -d "$GM_BUNDLE/mpi" ]; then
    M=$GM_BUNDLE/mpi
    export PATH=$M/bin:$PATH
    export OPAL_PREFIX=$M OPAL_EXEC_PREFIX=$M OPAL_BINDIR=$M/bin OPAL_LIBDIR=$GM_BUNDLE/lib \
        OPAL_PKGLIBDIR=$M/lib/plugins OPAL_DATAROOTDIR=$M/share OPAL_DATADIR=$M/share \
        OPAL_PKGDATADIR=$M/share/openmpi OPAL_SYSCONFDIR=$M/etc
    export OMPI_MCA_mca_base_component_path=$M/lib/plugins
    if [ -d "$M/lib/pmix" ]; then
        export PMIX_MCA_mca_base_component_path=$M/lib/pmix PMIX_INSTALL_PREFIX=$M/share/pmix-root/..
        export PMIX_PREFIX=$M
    fi
    unset M
fi

# A library the loader cannot find by its usual paths (the run path $ORIGIN/../lib, then the CUDA
# folder the bundle was built with, then ldconfig's): look for it where CUDA installs put it
# (CUDA toolkits, a Python environment's nvidia/*/lib). Prints the file, or nothing.
gm_find_lib() {
    local name=$1 d
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib \
        /usr/lib/x86_64-linux-gnu /usr/lib64 /opt/*/lib /opt/*/lib64; do
        [ -e "$d/$name" ] && { echo "$d/$name"; return; }
    done
    find / -xdev \( -path /proc -o -path /sys \) -prune -o -name "$name" -print 2>/dev/null | head -1
}

# Linked CUDA libraries (libcudart, libcublas, libcublasLt) the programs cannot resolve: add their
# folders to LD_LIBRARY_PATH, one line each.
while read -r name; do
    f=$(gm_find_lib "$name")
    if [ -n "$f" ]; then
        export LD_LIBRARY_PATH=$(dirname "$f")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        echo "bundle: $name from $(dirname "$f") (added to LD_LIBRARY_PATH)" >&2
    else
        echo "bundle: $name not found on this machine: CUDA programs will not start" >&2
    fi
done < <(ldd "$GM_BUNDLE/verify/gm_verify" 2>/dev/null | awk '$3 == "not" {print $1}')

# Run-time loaded libraries, by the names the programs ask for.
gm_dlopen_lib() {  # gm_dlopen_lib VAR SONAME
    [ -z "$2" ] || [ -n "${!1:-}" ] && return
    ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$2 " && return
    local f
    f=$(gm_find_lib "$2")
    [ -n "$f" ] && export "$1=$f"
}
gm_dlopen_lib GM_CUSOLVER_LIB "$(grep -a -o -m1 'libcusolver\.so\.[0-9][0-9]*' "$GM_BUNDLE/verify/gm_verify" | head -1)"
gm_dlopen_lib GM_NCCL_LIB libnccl.so.2
