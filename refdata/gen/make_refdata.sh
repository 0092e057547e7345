#!/usr/bin/env bash
# Regenerate refdata/model/<preset>/ and refdata/rotary/ from our C model's inputs and PyTorch.
# usage: bash refdata/gen/make_refdata.sh BUILD_DIR     (run from the repository root; `make refdata`)
# Needs Debian's python3-torch under /usr/bin/python3. CI never runs this: tests only read the
# committed files.
set -euo pipefail
build=${1:-build}
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  echo "make_refdata: $py cannot import torch and numpy (apt-get install python3-torch)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/in"
"$build/dump_refmodel" --out="$tmp/in"
for dir in "$tmp"/in/*/; do
  preset=$(basename "$dir")
  out=refdata/model/$preset
  mkdir -p "$tmp/out/$preset"
  "$py" refdata/gen/ref_model.py "$dir" "$tmp/out/$preset"
  # the weights are not committed: the test rebuilds them from the seed and checks params_fnv
  rm -rf "$out" && mkdir -p "$out"
  cp "$dir/meta.txt" "$dir/params.txt" "$dir/tokens.bin" "$tmp/out/$preset"/*.bin "$out/"
done
mkdir -p refdata/rotary
"$py" refdata/gen/rotary_ref.py "$tmp/in/rotary_bf16.txt" refdata/rotary/bf16_inv_freq.txt
"$py" refdata/gen/rotary_eager_ref.py "$tmp/in/rotary_bf16.txt" refdata/rotary/eager_tables.txt
echo "make_refdata: wrote refdata/model/ ($(du -sh refdata/model | cut -f1)) and refdata/rotary/ (bf16_inv_freq.txt, eager_tables.txt), $("$py" -c 'import torch; print("torch", torch.__version__)')"
