// bench/ckpt_diff: a checkpoint against itself is bitwise everywhere; against a run of another seed the
// parameters differ while the step and loader sections agree; its flags are checked.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

// The row of `section` in ckpt_diff's table (a static copy), or fails.
static const char *row(const char *table, const char *section) {
    static char line[512];
    char want[80];
    snprintf(want, sizeof want, "| %s |", section);
    const char *p = strstr(table, want);
    cr_assert(p, "no row for %s in:\n%s", section, table);
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), p);
    return line;
}

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

Test(ckpt_diff, same_file_and_another_seed, .timeout = 300) {
    char *dir = th_tmpdir(), extra[4200], cmd[9000], *out, *err;
    th_make_train_data(dir);
    snprintf(extra, sizeof extra, "--out_dir=%s/a --steps=2 --seed=1", dir);
    cr_assert_eq(th_train(dir, "untied", extra, NULL, NULL), 0);
    snprintf(extra, sizeof extra, "--out_dir=%s/b --steps=2 --seed=2", dir);
    cr_assert_eq(th_train(dir, "untied", extra, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "'%s' --ref=%s/a/ckpt.bin --other=%s/a/ckpt.bin", th_bin_path("bench/ckpt_diff"), dir, dir);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    cr_assert(ends_with(row(out, "params"), "| yes |"), "%s", row(out, "params"));
    cr_assert(ends_with(row(out, "muon.buf"), "| 0 | 0 | 0 | 0 | yes |"), "%s", row(out, "muon.buf"));
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "'%s' --ref=%s/a/ckpt.bin --other=%s/b/ckpt.bin", th_bin_path("bench/ckpt_diff"), dir, dir);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s", err);
    cr_assert(ends_with(row(out, "params"), "| no |"), "%s", row(out, "params"));
    cr_assert(ends_with(row(out, "step"), "| yes |"), "%s", row(out, "step"));
    cr_assert(ends_with(row(out, "config"), "| no |"), "the seeds differ: %s", row(out, "config"));
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

Test(ckpt_diff, bad_flags_are_one_line) {
    th_expect_refused("bench/ckpt_diff", "--ref=x", "--other: missing", 1);
    th_expect_refused("bench/ckpt_diff", "--ref=/nonexistent/a --other=/nonexistent/b", "/nonexistent/a", 1);
    th_expect_refused("bench/ckpt_diff", "--colour=red", "--colour: unknown flag", 1);
}
