// Back-end selection and the operations built on the primitives.
#include "dist/comm.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

int gm_comm_open_single(gm_comm *c);
int gm_comm_open_mpi(gm_comm *c, int *argc, char ***argv);
int gm_comm_open_nccl(gm_comm *c, int *argc, char ***argv);

int gm_comm_open(gm_comm *c, const char *kind, int *argc, char ***argv, double timeout_s) {
    memset(c, 0, sizeof *c);
    c->timeout_s = timeout_s > 0 ? timeout_s : 300.0;
    c->data = &gm_comm_staged_data;
    const char *launched = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : getenv("PMI_SIZE");
    if (!strcmp(kind, "auto")) kind = launched ? "mpi" : "single";
    // Under mpirun, W single-process ranks would each train the whole model alone, into one out_dir.
    if (!strcmp(kind, "single") && launched && atoi(launched) > 1)
        return gm_fail("--comm=single: this process is one of %s ranks started by mpirun, and each would train alone "
                       "into the same out_dir; use --comm=mpi (or auto), or run without mpirun", launched);
    if (!strcmp(kind, "single")) return gm_comm_open_single(c);
    if (!strcmp(kind, "mpi")) return gm_comm_open_mpi(c, argc, argv);
    if (!strcmp(kind, "nccl")) return gm_comm_open_nccl(c, argc, argv);
    return gm_fail("--comm: unknown communicator '%s' (single, mpi, nccl, auto)", kind);
}

void gm_comm_close(gm_comm *c) {
    if (c->data && c->data->close) c->data->close(c);
    if (c->ops) c->ops->close(c);
    c->ops = NULL;
    c->data = NULL;
}

// ---- the staged data channel: backend buffers through the host channel ----

static size_t dtype_size(gm_dtype dt) { return dt == GM_DT_F64 ? sizeof(double) : sizeof(float); }

// The all-reduce (nspans < 0) or the reduce-scatter of buf, through host memory when the backend's
// is not host-visible (the whole buffer: every rank contributes all of it).
static int staged_reduce(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt, const gm_comm_span *spans,
                         int nspans) {
    if (c->world == 1) return 0;
    if (be->sync(be)) return -1;  // the kernels that wrote buf, and their errors
    void *h = buf;
    size_t bytes = count * dtype_size(dt);
    if (!be->host_visible) {
        if (!(h = malloc(bytes ? bytes : 1)))
            return gm_fail("rank %d: %s: out of host memory for %zu bytes", c->rank,
                           nspans >= 0 ? "reduce-scatter" : "all-reduce", bytes);
        be->download(be, h, buf, bytes);
    }
    int rc = nspans >= 0 ? c->ops->reduce_scatter_mean(c, h, count, dt, spans, nspans)
                         : c->ops->allreduce_mean(c, h, count, dt);
    if (h != buf) {
        if (rc == 0) be->upload(be, buf, h, bytes);
        free(h);
    }
    return rc;
}

static int staged_allreduce(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt) {
    return staged_reduce(c, be, buf, count, dt, NULL, -1);
}

static int staged_allgatherv(gm_comm *c, const gm_backend *be, const void *send, void *recv,
                             const size_t *bytes_per_rank) {
    if (c->world == 1) {
        be->copy(be, recv, send, bytes_per_rank[0]);
        return 0;
    }
    if (be->sync(be)) return -1;
    if (be->host_visible) return c->ops->allgatherv(c, send, recv, bytes_per_rank);
    size_t total = 0;
    for (int r = 0; r < c->world; r++) total += bytes_per_rank[r];
    size_t mine = bytes_per_rank[c->rank];
    char *hs = malloc(mine ? mine : 1), *hr = malloc(total ? total : 1);
    if (!hs || !hr) {
        free(hs), free(hr);
        return gm_fail("rank %d: all-gather: out of host memory for %zu bytes", c->rank, total);
    }
    be->download(be, hs, send, mine);
    int rc = c->ops->allgatherv(c, hs, hr, bytes_per_rank);
    if (rc == 0) be->upload(be, recv, hr, total);
    free(hs), free(hr);
    return rc;
}

const gm_comm_data_ops gm_comm_staged_data = {"staged", staged_allreduce, staged_reduce, staged_allgatherv, NULL};

int gm_comm_check_same(gm_comm *c, const char *what, uint64_t hash) {
    if (c->world == 1) return 0;
    uint64_t *all = malloc((size_t)c->world * sizeof *all);
    size_t *bytes = malloc((size_t)c->world * sizeof *bytes);
    if (!all || !bytes) {
        free(all), free(bytes);
        return gm_fail("comm: out of memory");
    }
    for (int r = 0; r < c->world; r++) bytes[r] = sizeof(uint64_t);
    int rc = gm_allgatherv(c, &hash, all, bytes);
    for (int r = 1; rc == 0 && r < c->world; r++)
        if (all[r] != all[0])
            rc = gm_fail("%s differs between ranks: rank %d has %016llx, rank 0 has %016llx (every rank must get the same preset, flags and data)",
                         what, r, (unsigned long long)all[r], (unsigned long long)all[0]);
    free(all), free(bytes);
    return rc;
}
