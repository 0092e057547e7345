// The shard format against an independent implementation (verify/shard_tool.py, struct module):
// shards written by Python load in C with the same tokens, and C-written shards read in Python.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "data/shard.h"
#include "helpers.h"

Test(shard_format, python_written_shard_loads_in_c) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/py.bin", dir);
    // Random tokens, including the extremes of uint16 and GPT-2's end-of-text id.
    enum { N = 3000 };
    uint16_t want[N];
    char *cmd = malloc(N * 8 + 8400);
    int at = snprintf(cmd, 8400, "python3 '%s' write '%s'", th_root_path("verify/shard_tool.py"), path);
    for (int i = 0; i < N; i++) {
        want[i] = i == 0 ? 0 : i == 1 ? 65535 : i == 2 ? 50256 : (uint16_t)gm_rng_u32(5, 0, (uint64_t)i);
        at += snprintf(cmd + at, 8, " %u", want[i]);
    }
    char *err;
    cr_assert_eq(th_run(cmd, NULL, &err), 0, "shard_tool.py failed: %s", err);
    free(err);
    free(cmd);
    gm_shard s;
    cr_assert_eq(gm_shard_open(&s, path, 0), 0, "%s", gm_error());
    cr_assert_eq(s.count, N);
    for (int i = 0; i < N; i++) cr_assert_eq(s.tokens[i], want[i], "token %d", i);
    gm_shard_close(&s);
    th_rmtree(dir);
    free(dir);
}

Test(shard_format, c_written_shard_reads_in_python) {
    char *dir = th_tmpdir(), path[4200], cmd[8600];
    snprintf(path, sizeof path, "%s/c.bin", dir);
    enum { N = 10007 };
    static uint16_t tok[N];
    long long sum = 0;
    for (int i = 0; i < N; i++) sum += tok[i] = (uint16_t)gm_rng_u32(6, 0, (uint64_t)i);
    cr_assert_eq(gm_shard_write(path, tok, N), 0, "%s", gm_error());
    snprintf(cmd, sizeof cmd, "python3 '%s' read '%s'", th_root_path("verify/shard_tool.py"), path);
    char *out, *err, want[256];
    cr_assert_eq(th_run(cmd, &out, &err), 0, "python reader refused the C shard: %s", err);
    snprintf(want, sizeof want, "count %d sum %lld first %u last %u\n", N, sum, tok[0], tok[N - 1]);
    cr_assert_str_eq(out, want);
    free(out);
    free(err);
    th_rmtree(dir);
    free(dir);
}
