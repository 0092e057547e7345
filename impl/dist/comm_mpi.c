// Open MPI communicator for host buffers, with a watchdog so that a dead or hung peer ends the
// job in bounded time instead of leaving the other ranks blocked in a collective forever.
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/fmt_double.h"
#include "base/timer.h"
#include "dist/comm.h"

typedef struct {
    pthread_t watchdog;
    atomic_int stop;
    atomic_ullong op_start_ns;  // 0 when no collective is in flight, TIMED_OUT once the watchdog took it
    const char *_Atomic op_name;
    gm_comm *comm;  // for its last_words
    double timeout_s;
} mpi_state;

#define TIMED_OUT ULLONG_MAX

static void *watchdog_main(void *arg) {
    mpi_state *s = arg;
    while (!atomic_load(&s->stop)) {
        struct timespec nap = {0, 200 * 1000 * 1000};
        nanosleep(&nap, NULL);
        unsigned long long start = atomic_load(&s->op_start_ns);
        if (!start || (double)(gm_now_ns() - start) * 1e-9 <= s->timeout_s) continue;
        // Taken from the caller, which can no longer return from the collective (op_end), so the
        // last words (the log's error record) are written while it writes nothing.
        if (!atomic_compare_exchange_strong(&s->op_start_ns, &start, TIMED_OUT)) continue;
        char msg[256], t[GM_FMT_DOUBLE_LEN];
        snprintf(msg, sizeof msg, "rank %d: %s did not complete within %s s: another rank died or hung; stopping", s->comm->rank,
                 atomic_load(&s->op_name), gm_fmt_double(s->timeout_s, t));
        if (s->comm->last_words) s->comm->last_words(s->comm->last_words_ctx, msg);
        gm_report("error", "%s", msg);
        _exit(3);
    }
    return NULL;
}

static void op_begin(gm_comm *c, const char *name) {
    mpi_state *s = c->impl;
    atomic_store(&s->op_name, name);
    atomic_store(&s->op_start_ns, gm_now_ns());
}

static int op_end(gm_comm *c, int mpi_rc, const char *name) {
    mpi_state *s = c->impl;
    if (atomic_exchange(&s->op_start_ns, 0) == TIMED_OUT)
        for (;;) pause();  // the watchdog ends the process
    if (mpi_rc == MPI_SUCCESS) return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(mpi_rc, msg, &len);
    return gm_fail("rank %d: MPI %s failed: %s", c->rank, name, msg);
}

enum { CHUNK = 1 << 26 };  // elements per MPI call, well inside int counts

// buf <- the sum over ranks divided by W, on rank 0 (the other ranks' buf is left as it was). The
// one reduction of every mean here: the same MPI_Reduce calls on the same buffer give the same bits,
// so the all-reduce and the reduce-scatter of a buffer hand out identical values.
static int reduce_mean_to_root(gm_comm *c, void *buf, size_t count, gm_dtype dt) {
    MPI_Datatype t = dt == GM_DT_F64 ? MPI_DOUBLE : MPI_FLOAT;
    size_t esize = dt == GM_DT_F64 ? sizeof(double) : sizeof(float);
    int rc = MPI_SUCCESS;
    // Reduce in a fixed order to rank 0.
    for (size_t at = 0; rc == MPI_SUCCESS && at < count; at += CHUNK) {
        int n = (int)(count - at < CHUNK ? count - at : CHUNK);
        char *p = (char *)buf + at * esize;
        rc = MPI_Reduce(c->rank == 0 ? MPI_IN_PLACE : p, c->rank == 0 ? p : NULL, n, t, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS && c->rank == 0) {
            if (dt == GM_DT_F64)
                for (int i = 0; i < n; i++) ((double *)p)[i] /= c->world;
            else
                for (int i = 0; i < n; i++) ((float *)p)[i] /= (float)c->world;
        }
    }
    return rc;
}

static int mpi_allreduce(gm_comm *c, void *buf, size_t count, gm_dtype dt) {
    MPI_Datatype t = dt == GM_DT_F64 ? MPI_DOUBLE : MPI_FLOAT;
    size_t esize = dt == GM_DT_F64 ? sizeof(double) : sizeof(float);
    op_begin(c, "all-reduce");
    // Then broadcast: every rank gets the same bits.
    int rc = reduce_mean_to_root(c, buf, count, dt);
    for (size_t at = 0; rc == MPI_SUCCESS && at < count; at += CHUNK)
        rc = MPI_Bcast((char *)buf + at * esize, (int)(count - at < CHUNK ? count - at : CHUNK), t, 0, MPI_COMM_WORLD);
    return op_end(c, rc, "all-reduce");
}

// Span k goes to rank r when it is r's or every rank's.
static int span_to(const gm_comm_span *s, int r) { return s->rank == r || s->rank == GM_ALL_RANKS; }

// The spans rank r receives, copied from buf into `packed` one after another (pack), or back from it.
static void move_spans(char *buf, char *packed, const gm_comm_span *spans, int nspans, int r, size_t esize, int pack) {
    size_t n = 0;
    for (int k = 0; k < nspans; k++)
        if (span_to(&spans[k], r)) {
            char *b = buf + spans[k].offset * esize, *p = packed + n * esize;
            memcpy(pack ? p : b, pack ? b : p, spans[k].count * esize);
            n += spans[k].count;
        }
}

static int mpi_reduce_scatter(gm_comm *c, void *buf, size_t count, gm_dtype dt, const gm_comm_span *spans, int nspans) {
    MPI_Datatype t = dt == GM_DT_F64 ? MPI_DOUBLE : MPI_FLOAT;
    size_t esize = dt == GM_DT_F64 ? sizeof(double) : sizeof(float);
    const int W = c->world;
    // What each rank receives, in elements, packed span after span; rank 0 keeps its means in place.
    int *counts = calloc((size_t)W, sizeof *counts), *displs = calloc((size_t)W, sizeof *displs);
    if (!counts || !displs) {
        free(counts), free(displs);
        return gm_fail("rank %d: reduce-scatter: out of host memory", c->rank);
    }
    size_t total = 0;
    for (int r = 1; r < W; r++) {
        size_t n = 0;
        for (int k = 0; k < nspans; k++)
            if (span_to(&spans[k], r)) n += spans[k].count;
        if (n > INT_MAX || total > INT_MAX) {
            free(counts), free(displs);
            return gm_fail("rank %d: reduce-scatter of %zu elements exceeds MPI's int counts", c->rank, total + n);
        }
        counts[r] = (int)n, displs[r] = (int)total;
        total += n;
    }
    char *packed = malloc((c->rank == 0 ? total : (size_t)counts[c->rank]) * esize + 1);
    if (!packed) {
        free(counts), free(displs);
        return gm_fail("rank %d: reduce-scatter: out of host memory", c->rank);
    }
    op_begin(c, "reduce-scatter");
    int rc = reduce_mean_to_root(c, buf, count, dt);
    if (rc == MPI_SUCCESS && c->rank == 0)
        for (int r = 1; r < W; r++) move_spans(buf, packed + (size_t)displs[r] * esize, spans, nspans, r, esize, 1);
    if (rc == MPI_SUCCESS)
        rc = MPI_Scatterv(packed, counts, displs, t, c->rank == 0 ? MPI_IN_PLACE : packed, counts[c->rank], t, 0,
                          MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS && c->rank != 0) move_spans(buf, packed, spans, nspans, c->rank, esize, 0);
    free(packed), free(counts), free(displs);
    return op_end(c, rc, "reduce-scatter");
}

static int mpi_allgatherv(gm_comm *c, const void *send, void *recv, const size_t *bytes_per_rank) {
    int *counts = malloc((size_t)c->world * sizeof *counts), *displs = malloc((size_t)c->world * sizeof *displs);
    if (!counts || !displs) {
        free(counts), free(displs);
        return gm_fail("comm: out of memory");
    }
    size_t at = 0;
    for (int r = 0; r < c->world; r++) {
        if (bytes_per_rank[r] > INT_MAX || at > INT_MAX) {
            free(counts), free(displs);
            return gm_fail("rank %d: all-gather of %zu bytes exceeds MPI's int counts", c->rank, at + bytes_per_rank[r]);
        }
        counts[r] = (int)bytes_per_rank[r];
        displs[r] = (int)at;
        at += bytes_per_rank[r];
    }
    op_begin(c, "all-gather");
    int rc = MPI_Allgatherv(send, counts[c->rank], MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    free(counts), free(displs);
    return op_end(c, rc, "all-gather");
}

static int mpi_broadcast(gm_comm *c, void *buf, size_t bytes, int root) {
    int rc = MPI_SUCCESS;
    op_begin(c, "broadcast");
    for (size_t at = 0; rc == MPI_SUCCESS && at < bytes; at += CHUNK)
        rc = MPI_Bcast((char *)buf + at, (int)(bytes - at < CHUNK ? bytes - at : CHUNK), MPI_BYTE, root, MPI_COMM_WORLD);
    return op_end(c, rc, "broadcast");
}

static int mpi_barrier(gm_comm *c) {
    op_begin(c, "barrier");
    return op_end(c, MPI_Barrier(MPI_COMM_WORLD), "barrier");
}

static void mpi_close(gm_comm *c) {
    mpi_state *s = c->impl;
    atomic_store(&s->stop, 1);
    pthread_join(s->watchdog, NULL);
    free(s);
    c->impl = NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

static const gm_comm_ops mpi_ops = {"mpi", mpi_allreduce, mpi_reduce_scatter, mpi_allgatherv, mpi_broadcast, mpi_barrier, mpi_close};

static int gm_mpi_init(int *argc, char ***argv, int *rank, int *world) {
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return gm_fail("MPI_Init failed");
    // Errors come back as codes so they are reported with the rank, not as an MPI abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, world);
    return 0;
}

int gm_comm_open_mpi(gm_comm *c, int *argc, char ***argv) {
    if (gm_mpi_init(argc, argv, &c->rank, &c->world)) return -1;
    mpi_state *s = calloc(1, sizeof *s);
    if (!s) return gm_fail("comm: out of memory");
    s->comm = c;
    s->timeout_s = c->timeout_s;
    atomic_store(&s->op_name, "");
    if (pthread_create(&s->watchdog, NULL, watchdog_main, s) != 0) {
        free(s);
        return gm_fail("rank %d: cannot start the communicator watchdog", c->rank);
    }
    c->impl = s;
    c->ops = &mpi_ops;
    return 0;
}
