// llm.c as a peer of bench/peers.py, without llm.c (verify/peers_llmc_check.py on bench/peers_llmc.py):
// the random checkpoint it writes has the header and byte size llm.c's reader expects (GPT-2 124M:
// 124,475,904 parameters), its layer norms, biases and padding rows; the reader of the per-step
// "took X ms" lines; the user's train_gpt2 (LLMC_BIN) run as it is, with no arguments, in a folder
// holding our inputs where it opens them; the one-line skip without it.
#include <criterion/criterion.h>

#include "helpers.h"

Test(peers_llmc, checkpoint_124m) { th_py_check("verify/peers_llmc_check.py", "checkpoint_124m"); }
Test(peers_llmc, checkpoint_file) { th_py_check("verify/peers_llmc_check.py", "checkpoint_file"); }
Test(peers_llmc, parse) { th_py_check("verify/peers_llmc_check.py", "parse"); }
Test(peers_llmc, runs_the_given_binary) { th_py_check("verify/peers_llmc_check.py", "runs_the_given_binary"); }
Test(peers_llmc, skipped_with_one_line) { th_py_check("verify/peers_llmc_check.py", "skipped_with_one_line"); }
