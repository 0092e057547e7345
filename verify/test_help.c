// Every program of the build answers --help: exit 0, nothing on stderr, a usage on stdout that
// starts with "usage: <name>" and lists each flag on a line of its own ("  --key ...") with its
// default (or "required"). The programs are found by listing GM_BIN and GM_BIN/bench, so a new
// program without --help fails here. Test-only programs (verify/prog/, which the sanitizer build
// keeps in the same folder) are not the user's and are left out.
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"

// Checks `path --help`; returns 1 when it was a program of ours (checked), 0 when skipped.
static int check_help(const char *path, const char *name) {
    char src[4400];
    snprintf(src, sizeof src, "verify/prog/%s.c", name);
    if (th_file_exists(th_root_path(src))) return 0;
    char cmd[4500], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' --help", path);
    int rc = th_run(cmd, &out, &err);
    cr_expect_eq(rc, 0, "%s --help: exit %d: %s", name, rc, err);
    cr_expect_str_eq(err, "", "%s --help: wrote to stderr: %s", name, err);
    char want[300];
    snprintf(want, sizeof want, "usage: %s", name);
    cr_expect_eq(strncmp(out, want, strlen(want)), 0, "%s --help: does not start with '%s': %s", name, want, out);
    int flags = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        const char *p = line + strspn(line, " ");
        if (p == line || strncmp(p, "--", 2) != 0) continue;  // flag lines: indented, "--key ..."
        flags++;
        cr_expect(strstr(line, "default") || strstr(line, "required"), "%s --help: no default on: %s", name, line);
    }
    cr_expect_gt(flags, 0, "%s --help: no line lists a flag", name);
    free(out), free(err);
    return 1;
}

// Checks every executable file in dir; returns how many were programs of ours.
static int check_folder(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR)) continue;
        n += check_help(path, e->d_name);
    }
    closedir(d);
    return n;
}

Test(help, every_program_answers_help_with_defaults, .timeout = 120) {
    int top = check_folder(th_bin_path("")), bench = check_folder(th_bin_path("bench"));
    // train and make_data are in every build (the sanitizer build holds two benches only)
    cr_expect_geq(top, 2, "%d programs in %s", top, th_bin_path(""));
    cr_expect_geq(bench, 2, "%d programs in %s", bench, th_bin_path("bench"));
}
