// Every fault of a token shard is refused with its own message naming the file.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/shard.h"
#include "helpers.h"

// Write a shard with shard_tool.py (extra = its options), open it, return the error message.
static char *open_bad(const char *extra, int vocab, char *path, size_t pathlen, char *dir) {
    snprintf(path, pathlen, "%s/bad.bin", dir);
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "python3 '%s' write '%s' %s", th_root_path("verify/shard_tool.py"), path, extra);
    char *err;
    cr_assert_eq(th_run(cmd, NULL, &err), 0, "shard_tool.py: %s", err);
    free(err);
    gm_shard s;
    cr_assert_neq(gm_shard_open(&s, path, vocab), 0, "a bad shard (%s) was accepted", extra);
    cr_assert(strstr(gm_error(), path), "message does not name the file: %s", gm_error());
    cr_assert_null(strchr(gm_error(), '\n'), "message is not one line");
    return strdup(gm_error());
}

static void expect(const char *extra, int vocab, const char *fault) {
    char *dir = th_tmpdir(), path[4200];
    char *msg = open_bad(extra, vocab, path, sizeof path, dir);
    cr_assert(strstr(msg, fault), "expected '%s' in: %s", fault, msg);
    free(msg);
    th_rmtree(dir);
    free(dir);
}

Test(shard_bad_input, wrong_magic) { expect("--magic 20240519 1 2 3", 0, "bad magic number 20240519 (expected 20240520)"); }
Test(shard_bad_input, wrong_version) { expect("--version 2 1 2 3", 0, "unsupported version 2 (expected 1)"); }
Test(shard_bad_input, truncated_header) { expect("--truncate 1022", 0, "truncated header: 2 bytes"); }
Test(shard_bad_input, truncated_body) { expect("--truncate 1 1 2 3", 0, "not a whole number of uint16 tokens"); }
Test(shard_bad_input, count_disagrees_with_size) { expect("--count 5 1 2 3", 0, "header says 5 tokens but the file holds 3"); }
Test(shard_bad_input, token_not_below_vocab) { expect("1 2 50257 3", 50257, "token 50257 at index 2 is >= vocab size 50257"); }
Test(shard_bad_input, zero_count) { expect("--count 0", 0, "header token count 0 is not positive"); }

Test(shard_bad_input, empty_file) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/empty.bin", dir);
    fclose(fopen(path, "w"));
    gm_shard s;
    cr_assert_neq(gm_shard_open(&s, path, 0), 0);
    cr_assert(strstr(gm_error(), "empty file"), "%s", gm_error());
    cr_assert(strstr(gm_error(), path), "%s", gm_error());
    th_rmtree(dir);
    free(dir);
}

Test(shard_bad_input, missing_file) {
    gm_shard s;
    cr_assert_neq(gm_shard_open(&s, "/tmp/no-such-dir/shard_000.bin", 0), 0);
    cr_assert_str_eq(gm_error(), "/tmp/no-such-dir/shard_000.bin: cannot open: No such file or directory");
}

Test(shard_bad_input, messages_are_all_different) {
    const char *cases[] = {"--magic 1 1", "--version 3 1", "--truncate 1000", "--truncate 1 1 2", "--count 9 1", "--count -1"};
    char *msgs[6];
    for (int i = 0; i < 6; i++) {
        char *dir = th_tmpdir(), path[4200];
        char *m = open_bad(cases[i], 0, path, sizeof path, dir);
        // Compare the fault part only (the path differs per folder).
        msgs[i] = strdup(m + strlen(path));
        free(m);
        th_rmtree(dir);
        free(dir);
    }
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++) cr_assert_str_neq(msgs[i], msgs[j]);
    for (int i = 0; i < 6; i++) free(msgs[i]);
}
