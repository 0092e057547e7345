// dump_refmodel's command line: --help prints its usage and exits 0; a bad or missing flag is one
// line naming the flag with a non-zero exit; a run writes every preset's inputs and the list of
// bf16 rotary tables that refdata/gen/make_refdata.sh reads.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "train/run_config.h"

static int run(const char *args, char **out, char **err) {
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "'%s' %s", th_bin_path("dump_refmodel"), args);
    return th_run(cmd, out, err);
}

Test(dump_refmodel_cli, help_prints_usage) {
    char *out, *err;
    cr_assert_eq(run("--help", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "usage: dump_refmodel --out=DIR"), "%s", out);
    cr_expect_str_empty(err);
    free(out), free(err);
}

Test(dump_refmodel_cli, bad_flags_are_one_line) {
    th_expect_refused("dump_refmodel", "--bogus=1", "--bogus: unknown flag", 1);
    th_expect_refused("dump_refmodel", "", "--out: required", 1);
}

Test(dump_refmodel_cli, writes_every_preset_and_the_rotary_list) {
    char *dir = th_tmpdir(), args[4300], path[4400], *out, *err;
    snprintf(args, sizeof args, "--out='%s'", dir);
    cr_assert_eq(run(args, &out, &err), 0, "%s", err);
    static const char *const files[] = {"meta.txt", "params.txt", "params.bin", "tokens.bin"};
    for (const char *const *p = gm_preset_names; *p; p++)
        for (int f = 0; f < 4; f++) {
            snprintf(path, sizeof path, "%s/%s/%s", dir, *p, files[f]);
            cr_expect(th_file_exists(path), "%s missing", path);
        }
    snprintf(path, sizeof path, "%s/rotary_bf16.txt", dir);
    cr_expect(th_file_exists(path), "%s missing", path);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
