#!/usr/bin/env bash
# The test suites from the bundle: the release build's (CPU tests, and GPU tests where a GPU is)
# and the fp64 build's. Extra arguments go to both runs (e.g. --filter 'ns_*/*').
# Exit status: non-zero when a run fails.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh" || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
rc=0
echo "== tests (release build) =="
"$GM_BUNDLE/verify/gm_verify" --jobs "$jobs" "$@" || rc=1
if [ -x "$GM_BUNDLE/verify/gm_verify64" ]; then
    echo "== tests (fp64 build) =="
    "$GM_BUNDLE/verify/gm_verify64" --jobs "$jobs" "$@" || rc=1
fi
exit $rc
