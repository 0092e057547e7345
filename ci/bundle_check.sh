#!/usr/bin/env bash
# make bundle-check: prove the bundle needs none of this machine's libraries but glibc's and
# CUDA's. In a private mount namespace, /usr/lib/x86_64-linux-gnu (and so /lib/x86_64-linux-gnu,
# a link to it) is replaced by a folder holding only glibc and what the shell tools the scripts and
# tests call need (sh, bash, python3, coreutils, sed, grep, tar, pgrep, and unshare/mount for the
# full-disk tests' tmpfs: libtinfo, libz, libexpat, libselinux, libacl, libpcre2, libproc2,
# libmount, libblkid and its own). Then every ELF file of a pristine copy of
# the bundle must resolve each library into the bundle's lib/ (ldd, shown), and the CPU suite
# (release and fp64 builds, MPI tests included) runs from it.
#   ci/bundle_check.sh BUNDLE [criterion flags]
set -euo pipefail
B=${1:?usage: ci/bundle_check.sh BUNDLE [criterion flags]}
shift
[ -f "$B/lib.tar.gz" ] || { echo "bundle-check: $B has no lib.tar.gz: run make bundle" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "bundle-check: needs root (unshare --mount)" >&2; exit 1; }
SYS=/usr/lib/x86_64-linux-gnu
work=$(mktemp -d /tmp/gm-bundle-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$B" "$work/bundle"
mkdir "$work/syslib"
# glibc's libraries, and the shell tools' (each with its soname links).
keep=$(
    ls "$SYS" | grep -E '^(libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|ld-linux-x86-64)[.-]'
    for t in /bin/sh /bin/bash /usr/bin/python3 /bin/ls /bin/cp /bin/rm /usr/bin/env /bin/sed /bin/grep /bin/tar \
        /usr/bin/awk /bin/gzip /usr/bin/find /usr/bin/pgrep /usr/bin/tr /bin/date /bin/kill /usr/bin/unshare \
        /usr/bin/mount /usr/bin/umount /usr/bin/mktemp /bin/rmdir; do
        ldd "$(readlink -f "$t")" | awk '$2 == "=>" {print $1}'
    done
)
for n in $(echo "$keep" | sort -u); do
    [ -e "$SYS/$n" ] && cp -a "$SYS/$n" "$work/syslib/" && cp -a "$(readlink -f "$SYS/$n")" "$work/syslib/" 2>/dev/null
done
echo "bundle-check: this machine's libraries visible inside: $(ls "$work/syslib" | tr '\n' ' ')"
unshare --mount --propagation private bash -s "$work" "$@" <<'INNER'
set -uo pipefail
work=$1
shift
mount --bind "$work/syslib" /usr/lib/x86_64-linux-gnu
b=$work/bundle
. "$b/env.sh" || exit 1
echo "== ldd: every library of every bundled program (CUDA's from $(dirname "$(ldd "$b/verify/gm_verify" | awk '/libcudart/ {print $3}')" 2>/dev/null))"
bad=0
for f in "$b"/bin/* "$b"/bin/bench/* "$b"/prog/* "$b"/verify/* "$b"/mpi/bin/mpirun; do
    [ -f "$f" ] || continue
    echo "-- ${f#$b/}"
    ldd "$f" | awk '$2 == "=>"' | sed "s|$b|<bundle>|" | sed 's/^/   /'
    if ldd "$f" | grep -q 'not found'; then echo "   ^ NOT FOUND"; bad=1; fi
done
[ $bad = 0 ] || { echo "bundle-check: a library is missing"; exit 1; }
echo "== the CPU suite from the bundle"
"$b/run_cpu_suite.sh" "$@"
INNER
