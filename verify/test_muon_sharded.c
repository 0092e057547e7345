// Sharded Muon (matrix i orthogonalized by rank i % W, updates all-gathered): W = 1, 2, 3, 4 ranks
// under mpirun give bitwise the parameters of one process, with 7 matrices (W does not divide 7).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

Test(muon_sharded, bitwise_equal_for_1_to_4_ranks, .timeout = 180) {
    char *dir = th_tmpdir(), cmd[20000], path[4][4200];
    char *data[4];
    size_t len[4];
    for (int W = 1; W <= 4; W++) {
        snprintf(path[W - 1], sizeof path[0], "%s/w%d.bin", dir, W);
        // The single process runs plainly (no mpirun), with OpenBLAS free to use both cores.
        if (W == 1)
            snprintf(cmd, sizeof cmd, "'%s' '%s'", th_testprog_path("muon_shard"), path[0]);
        else
            snprintf(cmd, sizeof cmd, "%s -x OPENBLAS_NUM_THREADS=1 '%s' '%s'", th_mpirun(W), th_testprog_path("muon_shard"), path[W - 1]);
        char *err;
        cr_assert_eq(th_run(cmd, NULL, &err), 0, "W=%d: %s", W, err);
        free(err);
        cr_assert_eq(gm_read_all(path[W - 1], &data[W - 1], &len[W - 1]), 0, "%s", gm_error());
    }
    for (int W = 2; W <= 4; W++) {
        cr_assert_eq(len[W - 1], len[0]);
        cr_assert(memcmp(data[W - 1], data[0], len[0]) == 0, "W=%d parameters differ from the single process", W);
    }
    for (int W = 0; W < 4; W++) free(data[W]);
    th_rmtree(dir);
    free(dir);
}
