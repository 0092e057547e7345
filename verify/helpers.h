// Shared helpers of the Criterion suites: scratch folders, running programs, reading files.
#ifndef GM_VERIFY_HELPERS_H
#define GM_VERIFY_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "base/real.h"

// A fresh folder under /tmp, removed by th_rmtree. Dies (test crash) if it cannot be made.
char *th_tmpdir(void);
void th_rmtree(const char *dir);
// "$GM_ROOT/<rel>" (repository root, default ".") and "$GM_BIN/<name>" (programs, default "build").
const char *th_root_path(const char *rel);
const char *th_bin_path(const char *name);
// "$GM_TESTPROG/<name>": test-only programs (default build/verify/prog).
const char *th_testprog_path(const char *name);
// The mpirun command line prefix for W ranks ("mpirun --allow-run-as-root --oversubscribe -np W").
const char *th_mpirun(int world);
// Run a shell command; its stdout and stderr are captured into *out / *err (malloc'd, may be
// NULL to discard). Returns the exit status (or 128 + signal).
int th_run(const char *cmd, char **out, char **err);
// Write `script` to dir/s.sh and run it with bash behind `prefix` (e.g. "unshare --mount", or
// ""): exit status, stdout and stderr as th_run.
int th_run_script(const char *dir, const char *prefix, const char *script, char **out, char **err);
// Runs `python3 <script> <check>` (script relative to the root); the check prints "ok <check>" on
// stdout or its mismatch on stderr; a Criterion expectation fails otherwise.
void th_py_check(const char *script, const char *check);
// Number of lines in s (a final line without '\n' counts).
int th_count_lines(const char *s);
// n token ids (i * 7919 + 5) mod vocab: a deterministic stand-in for text (malloc'd).
int32_t *th_tokens(size_t n, int vocab);
// Run the program `name` (under GM_BIN, e.g. "bench/kernels") with `args`: it must exit 1 with one
// line on stderr that contains `want`, and when `quiet`, write nothing to stdout (train prints its
// start line before the checks that need the data).
void th_expect_refused(const char *name, const char *args, const char *want, int quiet);
int th_file_exists(const char *path);
// Number of entries in a folder (excluding . and ..), -1 when it does not exist.
int th_dir_entries(const char *dir);

// A small token dataset for training tests in `dir`: train_000000.bin and train_000001.bin
// (3000 tokens each) and val_000000.bin (2000 tokens), vocab 512, documents of 20-150 tokens
// separated by the end-of-text id 1. Tokens follow a noisy repeating pattern, so a model can learn.
void th_make_train_data(const char *dir);
// Flags that shrink any preset to a test model on that data (4 layers, d 64, T 64, B 4, 6 steps),
// with `extra` appended as th_flags_override does; written into buf.
const char *th_test_flags(char *buf, size_t n, const char *dir, const char *extra);
// `flags` (space-separated --key=value) less each flag that `over` gives too, then `over`: train
// refuses a flag given twice, so a test's flags override defaults this way; written into buf.
const char *th_flags_override(char *buf, size_t n, const char *flags, const char *over);

// Run build's train program on preset at tiny scale with th_test_flags(dir, extra); returns its
// exit status, stdout and stderr as th_run.
int th_train(const char *dir, const char *preset, const char *extra, char **out, char **err);
// th_train that must be refused: exit 1, stderr exactly `want` (its one line), and the folder
// `not_created` left uncreated. `why` names the case in the failure messages.
void th_expect_train_refused(const char *dir, const char *preset, const char *extra, const char *want,
                             const char *not_created, const char *why);

// The "train" and "val" records of a log.jsonl from step from_step on, without timing fields: a
// run's loss curve as text, for bitwise comparisons (malloc'd).
char *th_log_curve(const char *log_path, int from_step);

// Crafting checkpoints (train/checkpoint.h files): a malloc'd copy of section `name` of checkpoint
// `path` (its size in *bytes), and the file rewritten with that section's data replaced by `data`
// (NULL: the section left out), every other section as it was; gm_ckpt_write computes the checksums
// again, so only the value is wrong. A missing file or section fails the test.
void *th_ckpt_section(const char *path, const char *name, size_t *bytes);
void th_ckpt_replace(const char *path, const char *name, const void *data, size_t bytes);

// ||a - b|| / ||b|| over n values (||a - b|| when b is all zeros), accumulated in double; +inf
// when a holds a NaN or an infinity, so that no comparison with a bar can pass on one.
double th_rel_err(const gm_real *a, const gm_real *b, size_t n);

// Apply "--k=v --k=v ..." to a run configuration (a failing key fails the test).
void th_apply_flags(void *run_config, const char *flags);

#endif
