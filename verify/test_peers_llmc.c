// llm.c as a peer of bench/peers.py, without llm.c (verify/peers_llmc_check.py on bench/peers_llmc.py):
// the random checkpoint it writes has the header and byte size llm.c's reader expects (GPT-2 124M:
// 124,475,904 parameters), its layer norms, biases and padding rows; the loop rewrite (and its refusal
// of other text) and the reader of the per-step "took X ms" lines.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

// Runs `python3 verify/peers_llmc_check.py <check>`; it prints "ok <check>" or its mismatch on stderr.
static void py_check(const char *check) {
    char cmd[4400], want[128];
    snprintf(cmd, sizeof cmd, "python3 '%s' %s", th_root_path("verify/peers_llmc_check.py"), check);
    char *out, *err;
    int rc = th_run(cmd, &out, &err);
    snprintf(want, sizeof want, "ok %s\n", check);
    cr_expect_eq(rc, 0, "peers_llmc_check.py %s failed (exit %d): %s", check, rc, err);
    cr_expect_str_eq(out, want, "peers_llmc_check.py %s: %s", check, err);
    free(out);
    free(err);
}

Test(peers_llmc, checkpoint_124m) { py_check("checkpoint_124m"); }
Test(peers_llmc, checkpoint_file) { py_check("checkpoint_file"); }
Test(peers_llmc, rewrite) { py_check("rewrite"); }
Test(peers_llmc, parse) { py_check("parse"); }
