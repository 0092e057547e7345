#!/usr/bin/env bash
# Install the Debian packages the project needs, only those that are missing (idempotent).
# Called by `make deps`; CI and users on a fresh machine get here through `make verify`.
set -euo pipefail

PACKAGES=(
  build-essential pkg-config python3
  libopenblas-dev liblapacke-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  libcriterion-dev
  gnuplot-nox
  patchelf     # make bundle: run paths of the relocatable folder
  dict-gcide   # the embedded corpus: GNU Collaborative International Dictionary of English
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "deps: error: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
