// Exercises a communicator under mpirun for the tests (verify/test_comm_mpi.c).
//   comm_check collectives           all-reduce (f32, f64), all-gather-v, broadcast, barrier:
//                                     prints "ok" lines with checksums that rank 0 compares
//   comm_check reduce-scatter       the data channel's reduce-scatter (f32, f64; CPU and guarded
//                                     backends) against its all-reduce: "rank r/W reduce-scatter ok"
//                                     with how many received values a reverse-order sum would change
//   comm_check mismatch              rank 1 reports a different config hash
//   comm_check die                   rank 1 is killed mid-run
//   comm_check hang                  rank 1 stops taking part (the watchdog must end the others)
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu.h"
#include "backend/select.h"
#include "base/error.h"
#include "dist/comm.h"

static void check(int ok, const char *what, int rank) {
    if (!ok) gm_die("rank %d: %s", rank, what);
}

// Spans over n elements: pieces of 1 to 96 elements, their ranks running through every rank,
// GM_ALL_RANKS and none (a gap nobody receives), the same on every rank.
static int make_spans(gm_comm_span *s, int max, size_t n, int W) {
    int k = 0;
    unsigned x = 7;
    for (size_t at = 0; at < n && k < max; k++) {
        x = x * 1103515245u + 12345u;
        size_t len = 1 + (x >> 16) % 96;
        if (len > n - at) len = n - at;
        s[k] = (gm_comm_span){at, len, (int)(k % (W + 1)) - 1};
        at += len;
        if (k % 5 == 4) at += 1 + (x >> 8) % 3;  // a gap
    }
    return k;
}

// The data channel's reduce-scatter on backend `name` for type dt: each received value must be the
// all-reduce's, bit for bit. Values of mixed signs and magnitudes (2^-10 .. 2^10) make the mean
// depend on the order of the sums: returns how many received values differ between the sums in
// rank order and in reverse rank order (0 on one or two ranks, whose sums have one order), so that
// a reduce-scatter summing in another order than the all-reduce could not pass.
static size_t reduce_scatter_case(gm_comm *c, const char *name, gm_dtype dt) {
    enum { N = 3001, MAXS = 256 };
    const int r = c->rank, W = c->world;
    const size_t es = dt == GM_DT_F64 ? sizeof(double) : sizeof(float);
    const gm_backend *be = gm_backend_open(name, 0);
    if (!be) gm_die_last();
    double *mine = malloc(N * sizeof *mine), *all = malloc((size_t)W * N * sizeof *all);
    char *ref = malloc(N * es), *got = malloc(N * es);
    size_t bytes[64];
    unsigned x = 1u + 977u * (unsigned)r;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        mine[i] = ldexp(((x >> 8) / 16777216.0 - 0.5), (int)(x % 21) - 10);
        if (dt == GM_DT_F64) ((double *)ref)[i] = mine[i];
        else ((float *)ref)[i] = (float)mine[i];
    }
    for (int k = 0; k < W; k++) bytes[k] = N * sizeof *mine;
    if (gm_allgatherv(c, mine, all, bytes)) gm_die_last();
    void *buf = be->alloc(be, N * es);
    if (!buf) gm_die_last();
    be->upload(be, buf, ref, N * es);
    gm_comm_span spans[MAXS];
    int ns = make_spans(spans, MAXS, N, W);
    if (gm_data_reduce_scatter_mean(c, be, buf, N, dt, spans, ns) || gm_data_allreduce_mean(c, gm_backend_cpu(), ref, N, dt))
        gm_die_last();
    be->download(be, got, buf, N * es);
    if (be->sync(be)) gm_die_last();
    size_t received = 0, order_matters = 0;
    for (int k = 0; k < ns; k++) {
        if (spans[k].rank != r && spans[k].rank != GM_ALL_RANKS) continue;
        for (size_t i = spans[k].offset; i < spans[k].offset + spans[k].count; i++) {
            if (memcmp(got + i * es, ref + i * es, es)) gm_die("rank %d: %s: element %zu differs from the all-reduce's", r, name, i);
            double fwd = 0, rev = 0;
            float fwdf = 0, revf = 0;
            for (int q = 0; q < W; q++) fwd += all[(size_t)q * N + i], fwdf += (float)all[(size_t)q * N + i];
            for (int q = W - 1; q >= 0; q--) rev += all[(size_t)q * N + i], revf += (float)all[(size_t)q * N + i];
            order_matters += dt == GM_DT_F64 ? fwd != rev : fwdf != revf;
            received++;
        }
    }
    if (!received) gm_die("rank %d: no span reached this rank", r);
    be->free(be, buf);
    free(mine), free(all), free(ref), free(got);
    return order_matters;
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    if (argc < 2) gm_die("usage: comm_check collectives|reduce-scatter|mismatch|die|hang [timeout_s]");
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
    } else if (!strcmp(argv[1], "reduce-scatter")) {
        size_t differ = 0;
        const char *backends[] = {"cpu", "guarded"};
        for (int b = 0; b < 2; b++) differ += reduce_scatter_case(&c, backends[b], GM_DT_F32) + reduce_scatter_case(&c, backends[b], GM_DT_F64);
        printf("rank %d/%d reduce-scatter ok: %zu received values differ between sums in rank order and reverse rank order\n", r, W, differ);
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
