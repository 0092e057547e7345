// Checked I/O: atomic writes leave the old file or the whole new one, never a part or a temp.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

Test(atomic_io, commit_replaces_and_leaves_no_temporary) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/f.txt", dir);
    cr_assert_eq(gm_write_file_atomic(path, "old", 3), 0, "%s", gm_error());
    cr_assert_eq(gm_write_file_atomic(path, "new contents", 12), 0, "%s", gm_error());
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0);
    cr_assert_eq(len, 12);
    cr_assert_str_eq(data, "new contents");
    free(data);
    cr_assert_eq(th_dir_entries(dir), 1, "only the target remains");
    th_rmtree(dir);
    free(dir);
}

Test(atomic_io, abort_keeps_the_old_file) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/f.txt", dir);
    cr_assert_eq(gm_write_file_atomic(path, "old", 3), 0);
    gm_atomic_file af;
    cr_assert_eq(gm_atomic_open(&af, path), 0);
    cr_assert_eq(gm_atomic_write(&af, "half", 4), 0);
    // Before commit, readers still see the old contents.
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0);
    cr_assert_str_eq(data, "old");
    free(data);
    gm_atomic_abort(&af);
    cr_assert_eq(gm_read_all(path, &data, &len), 0);
    cr_assert_str_eq(data, "old");
    free(data);
    cr_assert_eq(th_dir_entries(dir), 1, "the temporary file is gone");
    th_rmtree(dir);
    free(dir);
}

Test(atomic_io, errors_name_the_path) {
    cr_assert_neq(gm_write_file_atomic("/nonexistent-dir/x.bin", "a", 1), 0);
    cr_assert(strstr(gm_error(), "/nonexistent-dir/x.bin"), "%s", gm_error());
    char *data;
    size_t len;
    cr_assert_neq(gm_read_all("/nonexistent-dir/y.txt", &data, &len), 0);
    cr_assert(strstr(gm_error(), "/nonexistent-dir/y.txt: cannot open"), "%s", gm_error());
    // fopen opens a folder, and reading it failed with a bare "read error".
    cr_assert_neq(gm_read_all("/tmp", &data, &len), 0);
    cr_assert_str_eq(gm_error(), "/tmp: is a folder, not a file");
    gm_mapping m;
    cr_assert_neq(gm_map_file("/tmp", &m), 0);
    cr_assert(strstr(gm_error(), "not a regular file"), "%s", gm_error());
}
