// Communicators under a real mpirun: collectives are correct and identical on every rank for
// W = 1..4, and the reduce-scatter hands out bitwise the all-reduce's values; mismatched configs are refused at start; a killed or hung rank ends the job with a
// non-zero exit in bounded time, naming the rank.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "helpers.h"

static int run_mpi(int world, const char *args, char **out, char **err) {
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "%s '%s' %s", th_mpirun(world), th_testprog_path("comm_check"), args);
    return th_run(cmd, out, err);
}

Test(comm_mpi, collectives_on_1_to_4_ranks, .timeout = 120) {
    for (int W = 1; W <= 4; W++) {
        char *out, *err, want[64];
        cr_assert_eq(run_mpi(W, "collectives", &out, &err), 0, "W=%d: %s%s", W, out, err);
        for (int r = 0; r < W; r++) {
            snprintf(want, sizeof want, "rank %d/%d ok\n", r, W);
            cr_assert(strstr(out, want), "W=%d: missing '%s' in: %s", W, want, out);
        }
        free(out), free(err);
    }
}

// comm_check checks every received value against the all-reduce's bits (f32 and f64, on the CPU
// backend in place and on the guarded one staged through host memory) and counts the received
// values whose mean changes with the order of the sums: on 3 and 4 ranks there must be some, else a
// reduce-scatter that summed in another order than the all-reduce could pass.
Test(comm_mpi, reduce_scatter_gives_the_all_reduce_bits_on_1_to_4_ranks, .timeout = 120) {
    for (int W = 1; W <= 4; W++) {
        char *out, *err, want[64];
        cr_assert_eq(run_mpi(W, "reduce-scatter", &out, &err), 0, "W=%d: %s%s", W, out, err);
        for (int r = 0; r < W; r++) {
            snprintf(want, sizeof want, "rank %d/%d reduce-scatter ok: ", r, W);
            const char *line = strstr(out, want);
            cr_assert(line, "W=%d: missing '%s' in: %s", W, want, out);
            long differ = atol(line + strlen(want));
            if (W >= 3) cr_assert_gt(differ, 0, "W=%d rank %d: no received value depends on the order of the sums", W, r);
        }
        free(out), free(err);
    }
}

Test(comm_mpi, mismatched_config_is_refused_on_every_rank, .timeout = 60) {
    char *out, *err;
    cr_assert_neq(run_mpi(3, "mismatch", &out, &err), 0);
    cr_assert(strstr(err, "config differs between ranks: rank 1 has"), "%s", err);
    cr_assert_null(strstr(out, "not detected"), "%s", out);
    free(out), free(err);
}

Test(comm_mpi, killed_rank_ends_the_job, .timeout = 60) {
    char *out, *err;
    uint64_t t0 = gm_now_ns();
    cr_assert_neq(run_mpi(2, "die 10", &out, &err), 0);
    cr_assert_lt(gm_seconds_since(t0), 30.0);
    cr_assert(strstr(err, "rank 1"), "the message names the rank: %s", err);
    cr_assert_null(strstr(out, "survived"), "%s", out);
    free(out), free(err);
}

Test(comm_mpi, hung_rank_ends_the_job_after_the_timeout, .timeout = 60) {
    char *out, *err;
    uint64_t t0 = gm_now_ns();
    cr_assert_neq(run_mpi(2, "hang 2.5", &out, &err), 0);
    double took = gm_seconds_since(t0);
    cr_assert_lt(took, 30.0, "took %.1f s", took);
    // The watchdog's line has every program's prefix, and the timeout as given (it said "error:
    // rank 0: ..." and "%.0f s").
    cr_assert(strstr(err, "comm_check: error: rank 0: all-reduce did not complete within 2.5 s"), "%s", err);
    free(out), free(err);
}
