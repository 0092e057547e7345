// Exercises a communicator under mpirun for the tests (verify/test_comm_mpi.c).
//   comm_check collectives           all-reduce (f32, f64), all-gather-v, broadcast, barrier:
//                                     prints "ok" lines with checksums that rank 0 compares
//   comm_check mismatch              rank 1 reports a different config hash
//   comm_check die                   rank 1 is killed mid-run
//   comm_check hang                  rank 1 stops taking part (the watchdog must end the others)
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "dist/comm.h"

static void check(int ok, const char *what, int rank) {
    if (!ok) gm_die("rank %d: %s", rank, what);
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    if (argc < 2) gm_die("usage: comm_check collectives|mismatch|die|hang [timeout_s]");
    double timeout = argc > 2 ? atof(argv[2]) : 30;
    gm_comm c;
    if (gm_comm_open(&c, "auto", &argc, &argv, timeout)) gm_die_last();
    int r = c.rank, W = c.world;
    if (!strcmp(argv[1], "collectives")) {
        // All-reduce mean of rank-dependent values, odd length (not a multiple of W).
        enum { N = 1001 };
        float f[N];
        double d[N];
        for (int i = 0; i < N; i++) f[i] = (float)(r * 1000 + i), d[i] = 0.1 * r + i;
        if (gm_allreduce_mean(&c, f, N, GM_DT_F32) || gm_allreduce_mean(&c, d, N, GM_DT_F64)) gm_die_last();
        for (int i = 0; i < N; i++) {
            check(f[i] == (float)(1000.0 * (W - 1) / 2.0 + i), "f32 mean", r);
            check(fabs(d[i] - (0.1 * (W - 1) / 2.0 + i)) < 1e-12, "f64 mean", r);
        }
        // All-gather-v: rank k contributes k+1 bytes of value k.
        size_t bytes[64], total = 0;
        for (int k = 0; k < W; k++) total += bytes[k] = (size_t)k + 1;
        unsigned char send[64], recv[64 * 65];
        memset(send, r, (size_t)r + 1);
        if (gm_allgatherv(&c, send, recv, bytes)) gm_die_last();
        size_t at = 0;
        for (int k = 0; k < W; k++)
            for (int j = 0; j <= k; j++) check(recv[at++] == k, "all-gather-v contents", r);
        check(at == total, "all-gather-v size", r);
        // Broadcast from the last rank.
        int v = r == W - 1 ? 4242 : -1;
        if (gm_broadcast(&c, &v, sizeof v, W - 1) || gm_barrier(&c)) gm_die_last();
        check(v == 4242, "broadcast", r);
        if (gm_comm_check_same(&c, "config", 12345)) gm_die_last();
        printf("rank %d/%d ok\n", r, W);
    } else if (!strcmp(argv[1], "mismatch")) {
        if (gm_comm_check_same(&c, "config", r == 1 ? 777 : 12345)) gm_die_last();
        printf("rank %d: mismatch not detected\n", r);
    } else if (!strcmp(argv[1], "die") || !strcmp(argv[1], "hang")) {
        float x = 1;
        for (int step = 0; step < 1000; step++) {
            if (r == 1 && step == 3) {
                if (argv[1][0] == 'd') raise(SIGKILL);
                for (;;) pause();
            }
            if (gm_allreduce_mean(&c, &x, 1, GM_DT_F32)) gm_die_last();
        }
        printf("rank %d: survived\n", r);
    } else {
        gm_die("%s: unknown mode", argv[1]);
    }
    gm_comm_close(&c);
    return 0;
}
