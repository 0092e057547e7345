// Every run of the suites ends with "GPU tests: N ran (F failed), S skipped: <why>" (the README
// promises it for the release, fp64 and sanitizer runs alike), and where no GPU test ran the reason
// is the true one: the sanitizer and fp64 builds leave CUDA out by design (nvcc may well be
// installed), the release build says what it found. The test runs its own binary with a filter that
// selects no test and reads the last line.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../helpers.h"

Test(gpu_line, names_why_no_gpu_test_ran) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(n, 0, "cannot find this test binary");
    self[n] = '\0';
    char cmd[6400], *out, *err;
    // A clean environment: the test worker's own variables (Criterion's) would make the nested
    // run a worker too; the sanitizer options pass through.
    const char *asan = getenv("ASAN_OPTIONS"), *lsan = getenv("LSAN_OPTIONS");
    snprintf(cmd, sizeof cmd, "env -i PATH=\"$PATH\" ASAN_OPTIONS='%s' LSAN_OPTIONS='%s' '%s' --filter='no_such_suite/*'",
             asan ? asan : "", lsan ? lsan : "", self);
    int rc = th_run(cmd, &out, &err);
    cr_assert_eq(rc, 0, "%s: exit %d: %s%s", cmd, rc, out, err);
    const char *line = strstr(out, "GPU tests: ");
    cr_assert_not_null(line, "no 'GPU tests:' line in: %s", out);
    const char *want = "GPU tests: 0 ran (0 failed), 0 skipped: ";
    cr_assert_eq(strncmp(line, want, strlen(want)), 0, "no reason given: %s", line);
    const char *why = line + strlen(want);
    cr_expect_gt(strcspn(why, "\n"), 10, "reason too short: %s", line);
#if defined(__SANITIZE_ADDRESS__)
    cr_expect(strstr(why, "sanitizer build is CPU only"), "sanitizer build: %s", line);
    cr_expect_null(strstr(why, "nvcc"), "sanitizer build blames nvcc: %s", line);
#elif defined(GM_FP64)
    cr_expect(strstr(why, "fp64 build is CPU only"), "fp64 build: %s", line);
    cr_expect_null(strstr(why, "nvcc"), "fp64 build blames nvcc: %s", line);
#endif
    free(out), free(err);
}
