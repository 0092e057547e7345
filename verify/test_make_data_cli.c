// make_data end to end on a small dictionary: shards load with the tokenizer's vocab, documents
// are EOT-separated and decode back to the corpus text; bad flags and bad corpora exit non-zero
// with one line naming the fault, and leave no output behind; an output folder that is not a
// dataset of make_data is never replaced, and replacing one deletes only what it wrote.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "helpers.h"

// 300 entries after dictfmt's header entry, so every val_every (default 100) split has val documents.
static void write_dict(const char *path) {
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    n += (size_t)snprintf(buf, cap, "00-database-short\n   A test dictionary\n\n");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(buf + n, cap - n, "Word%d \\Word%d\\, n.\n   The meaning number %d of a word, as used by %s.\n   [1913 Webster]\n\n",
                              i, i, i, i % 2 ? "sailors" : "farmers");
    cr_assert_eq(gm_write_file_atomic(path, buf, n), 0);
    free(buf);
}

Test(make_data_cli, builds_a_consistent_dataset) {
    char *dir = th_tmpdir(), dict[4200], out[4200], cmd[8600], path[4300];
    snprintf(dict, sizeof dict, "%s/d.dict", dir);
    snprintf(out, sizeof out, "%s/ds", dir);
    write_dict(dict);
    snprintf(cmd, sizeof cmd, "'%s' --corpus='%s' --out='%s' --vocab=300 --shard_tokens=4096", th_bin_path("make_data"), dict, out);
    char *so, *se;
    cr_assert_eq(th_run(cmd, &so, &se), 0, "make_data failed: %s", se);
    cr_assert(strstr(so, "300 documents"), "%s", so);
    free(so), free(se);

    gm_tokenizer tok;
    snprintf(path, sizeof path, "%s/tokenizer.txt", out);
    cr_assert_eq(gm_tok_load(&tok, path), 0, "%s", gm_error());
    cr_assert_eq(tok.vocab, 300);
    snprintf(path, sizeof path, "%s/val_000000.bin", out);
    gm_shard val;
    cr_assert_eq(gm_shard_open(&val, path, tok.vocab), 0, "%s", gm_error());
    // val holds every 100th entry: 99, 199, 299.
    int docs = 0;
    for (size_t i = 0; i < val.count; i++) docs += val.tokens[i] == GM_TOK_EOT;
    cr_assert_eq(docs, 3);
    cr_assert_eq(val.tokens[0], GM_TOK_EOT, "documents start after an end-of-text token");
    int32_t *ids = malloc(val.count * sizeof *ids);
    for (size_t i = 0; i < val.count; i++) ids[i] = val.tokens[i];
    char *text = malloc(val.count * 16 + 1);
    cr_assert_geq(gm_tok_decode(&tok, ids, val.count, text, val.count * 16 + 1), 0);
    cr_assert_str_eq(text,
                     "<|endoftext|>Word99 \\Word99\\, n. The meaning number 99 of a word, as used by sailors."
                     "<|endoftext|>Word199 \\Word199\\, n. The meaning number 199 of a word, as used by sailors."
                     "<|endoftext|>Word299 \\Word299\\, n. The meaning number 299 of a word, as used by sailors.");
    gm_shard_close(&val);
    free(ids), free(text);
    // Train shards: several, each loadable, all tokens < vocab, 297 documents in total.
    int train_docs = 0, nshards = 0;
    for (int s = 1;; s++) {
        snprintf(path, sizeof path, "%s/train_%06d.bin", out, s);
        if (!th_file_exists(path)) break;
        gm_shard sh;
        cr_assert_eq(gm_shard_open(&sh, path, tok.vocab), 0, "%s", gm_error());
        for (size_t i = 0; i < sh.count; i++) train_docs += sh.tokens[i] == GM_TOK_EOT;
        gm_shard_close(&sh);
        nshards++;
    }
    cr_assert_gt(nshards, 1);
    cr_assert_eq(train_docs, 297);
    gm_tok_free(&tok);
    th_rmtree(dir);
    free(dir);
}

// Run make_data with `flags`; it must fail with exactly one stderr line containing `fault` and
// leave the output folder absent.
static void expect_refusal(const char *flags, const char *fault) {
    char *dir = th_tmpdir(), dict[4200], cmd[8600], out[4200];
    snprintf(dict, sizeof dict, "%s/d.dict", dir);
    snprintf(out, sizeof out, "%s/ds", dir);
    write_dict(dict);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' --out=ds %s", dir, th_bin_path("make_data"), flags);
    char *so, *se;
    int rc = th_run(cmd, &so, &se);
    cr_assert_neq(rc, 0, "'%s' was accepted", flags);
    cr_assert_eq(th_count_lines(se), 1, "stderr is not one line: %s", se);
    cr_assert(strstr(se, fault), "expected '%s' in: %s", fault, se);
    cr_assert(strstr(se, "error:"), "%s", se);
    cr_assert_not(th_file_exists(out), "output written despite the error");
    cr_assert_eq(th_dir_entries(dir), 1, "stray files left behind");
    free(so), free(se);
    th_rmtree(dir);
    free(dir);
}

Test(make_data_cli, unknown_flag) { expect_refusal("--corpus=d.dict --vocabulary=300", "--vocabulary: unknown flag"); }
Test(make_data_cli, non_integer_vocab) { expect_refusal("--corpus=d.dict --vocab=lots", "--vocab: 'lots' is not an integer"); }
Test(make_data_cli, vocab_out_of_range) { expect_refusal("--corpus=d.dict --vocab=70000", "--vocab: 70000 is out of range"); }
Test(make_data_cli, missing_value) { expect_refusal("--corpus=d.dict --vocab", "--vocab: missing value"); }
Test(make_data_cli, positional_argument) { expect_refusal("d.dict", "d.dict: unexpected argument"); }
Test(make_data_cli, missing_corpus) { expect_refusal("--corpus=nope.dict", "nope.dict: cannot open: No such file or directory"); }
Test(make_data_cli, empty_corpus) { expect_refusal("--corpus=/dev/null", "/dev/null: empty corpus"); }
Test(make_data_cli, too_few_documents_for_val) { expect_refusal("--corpus=d.dict --val_every=1000", "too few for one val document"); }
Test(make_data_cli, hyphens_spell_the_same_flags) { expect_refusal("--corpus=d.dict --val-every=1000", "too few for one val document"); }
Test(make_data_cli, corpus_that_is_not_a_dictd_file) {
    expect_refusal("--corpus=/etc/os-release", "/etc/os-release: not a dictd database (no 00-database-* entry");
}
Test(make_data_cli, corpus_that_is_a_folder) { expect_refusal("--corpus=/etc", "/etc: is a folder, not a file"); }

static int run_make_data(const char *dir, const char *out, char **se) {
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' --corpus=d.dict --out='%s' --vocab=300 --shard_tokens=4096", dir,
             th_bin_path("make_data"), out);
    return th_run(cmd, NULL, se);
}

static void put_file(const char *dir, const char *name, const char *text) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(gm_write_file_atomic(path, text, strlen(text)), 0, "%s", gm_error());
}

static void expect_file(const char *dir, const char *name, const char *text) {
    char path[4400], *data;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(gm_read_all(path, &data, &len), 0, "%s was lost: %s", path, gm_error());
    cr_assert_str_eq(data, text, "%s was changed", path);
    free(data);
}

// `--out=data` once replaced the whole folder, other datasets included, and exited 0.
Test(make_data_cli, a_folder_it_did_not_write_is_refused_and_kept) {
    char *dir = th_tmpdir(), out[4200], sub[4300], dict[4300], *se;
    snprintf(out, sizeof out, "%s/data", dir);
    snprintf(sub, sizeof sub, "%s/fineweb10B", out);
    snprintf(dict, sizeof dict, "%s/d.dict", dir);
    write_dict(dict);
    cr_assert_eq(gm_mkdir_p(sub, NULL), 0, "%s", gm_error());
    put_file(sub, "fineweb_val_000000.bin", "someone else's shard");
    put_file(out, "notes.txt", "mine");
    cr_assert_eq(run_make_data(dir, "data", &se), 1, "make_data replaced a folder it did not write: %s", se);
    cr_assert_eq(th_count_lines(se), 1, "%s", se);
    cr_assert(strstr(se, "make_data: error: --out: data is not empty and has no make_data.txt, so it is not a dataset of "
                         "make_data; give a new or empty folder (nothing was changed)"), "%s", se);
    expect_file(sub, "fineweb_val_000000.bin", "someone else's shard");
    expect_file(out, "notes.txt", "mine");
    cr_assert_eq(th_dir_entries(out), 2);
    cr_assert_eq(th_dir_entries(dir), 2, "stray files beside the output (d.dict, data)");
    free(se);
    th_rmtree(dir);
    free(dir);
}

// Its own dataset is replaced (twice in a row works), deleting only the files its list names; a
// file added to it since makes it someone's folder again, and it is refused.
Test(make_data_cli, its_own_dataset_is_replaced_and_nothing_else) {
    char *dir = th_tmpdir(), out[4200], dict[4300], *se;
    snprintf(out, sizeof out, "%s/ds", dir);
    snprintf(dict, sizeof dict, "%s/d.dict", dir);
    write_dict(dict);
    cr_assert_eq(gm_mkdir_p(out, NULL), 0);  // an empty folder is fine
    cr_assert_eq(run_make_data(dir, "ds", &se), 0, "%s", se);
    free(se);
    int files = th_dir_entries(out);
    cr_assert_geq(files, 4, "tokenizer, val, train shards and make_data.txt");
    cr_assert_eq(run_make_data(dir, "ds", &se), 0, "its own dataset was refused: %s", se);
    free(se);
    cr_assert_eq(th_dir_entries(out), files);
    cr_assert_eq(th_dir_entries(dir), 2, "the old dataset or a temporary folder was left beside it");
    put_file(out, "my_notes.txt", "keep");
    cr_assert_eq(run_make_data(dir, "ds", &se), 1, "a dataset with a foreign file was replaced");
    cr_assert(strstr(se, "--out: ds holds my_notes.txt, which make_data did not write; give a new or empty folder (nothing "
                         "was changed)"), "%s", se);
    expect_file(out, "my_notes.txt", "keep");
    cr_assert_eq(th_dir_entries(out), files + 1);
    free(se);
    th_rmtree(dir);
    free(dir);
}

// `make bench` ran `make_data --out=data/gcide` on a fresh clone without data/ and stopped with
// "cannot create folder": the missing parents of --out are created (and removed again on a refusal).
Test(make_data_cli, missing_parents_of_out_are_created) {
    char *dir = th_tmpdir(), dict[4300], path[4400], *se;
    snprintf(dict, sizeof dict, "%s/d.dict", dir);
    write_dict(dict);
    cr_assert_eq(run_make_data(dir, "new/nested/ds", &se), 0, "a nested new --out was refused: %s", se);
    free(se);
    snprintf(path, sizeof path, "%s/new/nested/ds/make_data.txt", dir);
    cr_assert(th_file_exists(path), "no dataset in new/nested/ds");
    snprintf(path, sizeof path, "%s/new/nested", dir);
    cr_assert_eq(th_dir_entries(path), 1, "a temporary folder was left beside the dataset");
    th_rmtree(dir);
    free(dir);
}

// `--out=ds/` failed only after all the work ("cannot move the old dataset aside: Invalid
// argument"; for a new folder "cannot create folder"): the path is normalised first.
Test(make_data_cli, trailing_slashes_of_out_are_ignored) {
    char *dir = th_tmpdir(), dict[4300], out[4300], *se;
    snprintf(dict, sizeof dict, "%s/d.dict", dir);
    snprintf(out, sizeof out, "%s/ds", dir);
    write_dict(dict);
    cr_assert_eq(run_make_data(dir, "ds/", &se), 0, "a new --out=ds/ was refused: %s", se);
    free(se);
    int files = th_dir_entries(out);
    cr_assert_geq(files, 4, "tokenizer, val, train shards and make_data.txt");
    cr_assert_eq(run_make_data(dir, "ds//", &se), 0, "replacing --out=ds// was refused: %s", se);
    free(se);
    cr_assert_eq(th_dir_entries(out), files);
    cr_assert_eq(th_dir_entries(dir), 2, "the old dataset or a temporary folder was left beside it (d.dict, ds)");
    th_rmtree(dir);
    free(dir);
}

// A pid no process has: that of a child that has ended.
static long ended_pid(void) {
    pid_t p = fork();
    cr_assert_geq(p, 0, "fork");
    if (p == 0) _exit(0);
    cr_assert_eq(waitpid(p, NULL, 0), p);
    return (long)p;
}

// A make_data stopped while it wrote (kill -9, Ctrl-C) once left its ds.tmp.<pid>/ beside the
// dataset for good: the next make_data removes such a folder when its process is gone, keeps one
// whose process still runs (this test's pid), and keeps one holding a file make_data does not
// write, saying so, having removed only its own files from it.
Test(make_data_cli, stale_temporary_folders_of_a_stopped_make_data_are_removed) {
    char *dir = th_tmpdir(), dict[4300], stale[4400], live[4400], foreign[4400], cmd[9000], *so, *se;
    snprintf(dict, sizeof dict, "%s/d.dict", dir);
    write_dict(dict);
    snprintf(stale, sizeof stale, "%s/ds.tmp.%ld", dir, ended_pid());
    snprintf(live, sizeof live, "%s/ds.tmp.%ld", dir, (long)getpid());
    snprintf(foreign, sizeof foreign, "%s/ds.tmp.%ld", dir, ended_pid());
    const char *made[] = {stale, live, foreign};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(gm_mkdir_p(made[i], NULL), 0, "%s", gm_error());
        put_file(made[i], "tokenizer.txt", "gptmuon-tokenizer 1\n");
        put_file(made[i], "train_000001.bin", "part of a shard");
        put_file(made[i], "val_000000.bin.tmp.Ab12Cd", "part of a shard");
    }
    put_file(foreign, "notes.txt", "mine");
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' --corpus=d.dict --out=ds --vocab=300 --shard_tokens=4096", dir, th_bin_path("make_data"));
    cr_assert_eq(th_run(cmd, &so, &se), 0, "%s", se);
    cr_assert_not(th_file_exists(stale), "the stale folder of an ended make_data was left");
    cr_expect(strstr(so, "make_data: removed 1 stale temporary folder(s) ds.tmp.<pid> of a make_data that was stopped while writing\n"),
              "%s", so);
    cr_expect_eq(th_dir_entries(live), 3, "the folder of a make_data still running was touched");
    expect_file(foreign, "notes.txt", "mine");
    cr_expect_eq(th_dir_entries(foreign), 1, "make_data's own files were left in the kept folder");
    cr_expect_eq(th_count_lines(se), 1, "%s", se);
    cr_expect(strstr(se, "/ds.tmp.") && strstr(se, ": a stale temporary folder of make_data, kept: Directory not empty\n"), "%s", se);
    free(so), free(se);
    th_rmtree(dir);
    free(dir);
}
