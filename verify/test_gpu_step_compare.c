// bench/gpu_step_compare.py, the whole-step comparison of a second backend with the CPU, run with the
// guarded backend as the second one (the CPU's arithmetic with its memory locked between kernels):
// every case must come out bitwise with equal step/loader/Adam sections, and against cpu-bf16mm
// (other matmul roundings) not bitwise, so the table can tell. --cases spreads the cases over calls:
// resume reuses the plain runs an earlier call left, and says so when they are missing.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

// Runs the script on softcap at 2 steps (halt 1) in `work`; its exit status, stdout in *out.
static int compare(const char *work, const char *ref, const char *cases, char **out, char **err) {
    char build[1024], cmd[4096];
    snprintf(build, sizeof build, "%s", th_bin_path("train"));
    *strrchr(build, '/') = 0;  // the folder holding train and bench/ckpt_diff
    snprintf(cmd, sizeof cmd,
             "python3 '%s' --build '%s' --backend guarded --ref %s --presets softcap --steps 2 --halt 1 --cases %s "
             "--work '%s'",
             th_root_path("bench/gpu_step_compare.py"), build, ref, cases, work);
    return th_run(cmd, out, err);
}

Test(gpu_step_compare, cases_over_two_calls_are_bitwise_and_bf16_operands_are_not, .timeout = 600) {
    char *dir = th_tmpdir(), work[4200], *out, *err;
    snprintf(work, sizeof work, "%s/w", dir);
    cr_assert_eq(compare(work, "cpu", "plain", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "| softcap | plain 2 steps | 0 |") && strstr(out, "| yes | yes |"), "%s", out);
    cr_expect(!strstr(out, "halted"), "--cases plain ran the resume case:\n%s", out);
    free(out), free(err);
    cr_assert_eq(compare(work, "cpu", "resume", &out, &err), 0, "%s", err);
    cr_expect_eq(th_count_lines(out), 4, "header, rule and the two resume rows:\n%s", out);
    const char *p = out;
    for (int k = 0; k < 2; k++) {
        p = strstr(p, "| softcap | halted at 1 on ");
        cr_assert(p, "resume row %d missing:\n%s", k, out);
        const char *eol = strchr(p, '\n');
        cr_expect(strstr(p, "| yes | yes |") && strstr(p, "| yes | yes |") < eol, "not bitwise: %.*s", (int)(eol - p), p);
        p = eol;
    }
    free(out), free(err);
    // Negative control: against bf16 matmul operands the parameters differ and the row says so.
    snprintf(work, sizeof work, "%s/bf16", dir);
    cr_assert_eq(compare(work, "cpu-bf16mm", "plain", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "| no | yes |"), "guarded vs cpu-bf16mm reported bitwise:\n%s", out);
    free(out), free(err);
    snprintf(work, sizeof work, "%s/empty", dir);
    cr_expect_neq(compare(work, "cpu", "resume", &out, &err), 0, "resume without plain runs passed");
    cr_expect(strstr(err, "--cases=resume needs the plain runs") != NULL, "%s", err);
    free(out), free(err);
    th_rmtree(dir);
}
