// `make bench` on a fresh clone (no data/ folder): its peers section builds data/gcide itself
// before timing (bench/run.sh, what `make bench` runs after `make build`). Run here in a copy of
// this checkout's tracked files with the programs of this build, the peers section only, and a stand-in
// interpreter (PEERS_PYTHON) that "imports torch" and, for bench/peers.py, checks that the dataset
// is there; so the test needs no python3-torch and takes the time of one make_data.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static const char *SCRIPT =
    "set -e\n"
    // the tracked files as they are in this checkout (what a clone of it holds): no data/, no build/
    "mkdir \"$T/clone\"\n"
    "git -C \"$ROOT\" ls-files -z | (cd \"$ROOT\" && xargs -0 tar cf - --) | tar xf - -C \"$T/clone\"\n"
    "cd \"$T/clone\"\n"
    "test ! -e data\n"
    "printf '#!/bin/sh\\ncase \"$1\" in -c) exit 0;; bench/peers.py) test -s data/gcide/val_000000.bin && echo peers ran;; "
    "*) exit 9;; esac\\n' > \"$T/python\"\n"
    "chmod +x \"$T/python\"\n"
    "BENCH_SECTIONS=section_peers PEERS_PYTHON=\"$T/python\" bash bench/run.sh \"$BIN\"\n";

Test(bench_fresh, peers_section_on_a_fresh_clone, .timeout = 300) {
    if (getenv("GM_BUNDLE")) cr_skip_test("bench: the GPU-node bundle carries no git checkout");
    char *dir = th_tmpdir(), prefix[9000], *out, *err;
    snprintf(prefix, sizeof prefix, "T='%s' ROOT='%s' BIN='%s'", dir, th_root_path(""), th_bin_path(""));
    int rc = th_run_script(dir, prefix, SCRIPT, &out, &err);
    cr_expect_eq(rc, 0, "make bench's peers section on a fresh clone: exit %d: %s%s", rc, out, err);
    cr_expect(strstr(out, "peers ran"), "the peers section did not run on the dataset: %s%s", out, err);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
