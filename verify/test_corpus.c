// dictd corpus parsing: one document per entry, database entries skipped, provenance lines and
// cross-reference braces dropped, compressed and plain input read alike.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "data/corpus.h"
#include "helpers.h"

static const char DICT[] =
    "00-database-info\n   This file was converted from the original database.\n\n"
    "Abacus \\Ab\"a*cus\\, n.\n   A table or tray; see {Abax}.\n   [1913 Webster]\n\n"
    "   2. (Arch.) The uppermost member of a column.\n   [1913 Webster]\n\n"
    "Abaft \\A*baft\"\\, prep.\n   Behind; aft.\n   [PJC]\n";

Test(corpus, entries_become_clean_documents) {
    char *dir = th_tmpdir(), path[4200], cmd[8600];
    snprintf(path, sizeof path, "%s/d.dict", dir);
    cr_assert_eq(gm_write_file_atomic(path, DICT, strlen(DICT)), 0);
    gm_corpus c;
    cr_assert_eq(gm_corpus_load_dictd(&c, path), 0, "%s", gm_error());
    cr_assert_eq(c.ndocs, 2);
    cr_assert_str_eq(c.text + c.offsets[0],
                     "Abacus \\Ab\"a*cus\\, n. A table or tray; see Abax.\n2. (Arch.) The uppermost member of a column.");
    cr_assert_str_eq(c.text + c.offsets[1], "Abaft \\A*baft\"\\, prep. Behind; aft.");
    gm_corpus_free(&c);
    // The same text gzip-compressed (as dictd's .dz files are) gives the same documents.
    snprintf(cmd, sizeof cmd, "gzip -k '%s'", path);
    cr_assert_eq(th_run(cmd, NULL, NULL), 0);
    strcat(path, ".gz");
    cr_assert_eq(gm_corpus_load_dictd(&c, path), 0, "%s", gm_error());
    cr_assert_eq(c.ndocs, 2);
    cr_assert_str_eq(c.text + c.offsets[1], "Abaft \\A*baft\"\\, prep. Behind; aft.");
    gm_corpus_free(&c);
    th_rmtree(dir);
    free(dir);
}

Test(corpus, empty_and_missing_corpora_are_refused) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/empty.dict", dir);
    const char *only_db = "00-database-short\n   nothing else\n";
    cr_assert_eq(gm_write_file_atomic(path, only_db, strlen(only_db)), 0);
    gm_corpus c;
    cr_assert_neq(gm_corpus_load_dictd(&c, path), 0);
    cr_assert(strstr(gm_error(), "empty corpus") && strstr(gm_error(), path), "%s", gm_error());
    cr_assert_neq(gm_corpus_load_dictd(&c, "/tmp/no-such-corpus.dict.dz"), 0);
    cr_assert_str_eq(gm_error(), "/tmp/no-such-corpus.dict.dz: cannot open: No such file or directory");
    th_rmtree(dir);
    free(dir);
}

// A file that is not a dictd database is named as such, instead of parsing into a few "documents"
// (a README once gave "only 2 documents").
Test(corpus, files_that_are_not_dictd_databases_are_refused) {
    char *dir = th_tmpdir(), path[4200], want[4400];
    gm_corpus c;
    snprintf(path, sizeof path, "%s/README.md", dir);
    const char *text = "# A project\n\nSome text.\n\nMore text, in a second paragraph.\n";
    cr_assert_eq(gm_write_file_atomic(path, text, strlen(text)), 0);
    cr_assert_neq(gm_corpus_load_dictd(&c, path), 0, "a README was read as a dictionary");
    snprintf(want, sizeof want, "%s: not a dictd database (no 00-database-* entry, which dictfmt writes first); --corpus takes a "
             "dictd .dict or .dict.dz file", path);
    cr_assert_str_eq(gm_error(), want);
    snprintf(path, sizeof path, "%s/shard.bin", dir);
    const char binary[] = "00-database-short\n   x\n\nWord\n   a\0b\n";
    cr_assert_eq(gm_write_file_atomic(path, binary, sizeof binary - 1), 0);
    cr_assert_neq(gm_corpus_load_dictd(&c, path), 0, "binary data was read as a dictionary");
    snprintf(want, sizeof want, "%s: not a dictd database (binary data: a NUL byte at offset %zu)", path, strlen(binary));
    cr_assert_str_eq(gm_error(), want);
    cr_assert_neq(gm_corpus_load_dictd(&c, dir), 0);
    snprintf(want, sizeof want, "%s: is a folder, not a file", dir);
    cr_assert_str_eq(gm_error(), want);
    th_rmtree(dir);
    free(dir);
}
