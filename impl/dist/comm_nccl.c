// NCCL communicator for device buffers. Rank 0 creates the NCCL unique id and broadcasts it over
// MPI; each rank drives the GPU numbered (local rank mod device count). Operations are issued on
// one stream and waited for with a timeout: on expiry the NCCL communicator is aborted and the
// failure names the rank and the operation.
#include "dist/comm.h"

#include "base/error.h"

#ifdef GM_HAVE_CUDA
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"

int gm_mpi_init(int *argc, char ***argv, int *rank, int *world);

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
} nccl_state;

static int wait_done(gm_comm *c, const char *op, ncclResult_t issued) {
    nccl_state *s = c->impl;
    if (issued != ncclSuccess) return gm_fail("rank %d: NCCL %s failed: %s", c->rank, op, ncclGetErrorString(issued));
    uint64_t start = gm_now_ns();
    for (;;) {
        cudaError_t q = cudaStreamQuery(s->stream);
        if (q == cudaSuccess) return 0;
        if (q != cudaErrorNotReady) return gm_fail("rank %d: %s: CUDA error %s", c->rank, op, cudaGetErrorString(q));
        ncclResult_t async;
        ncclCommGetAsyncError(s->comm, &async);
        if (async != ncclSuccess) return gm_fail("rank %d: NCCL %s failed: %s", c->rank, op, ncclGetErrorString(async));
        if (gm_seconds_since(start) > c->timeout_s) {
            ncclCommAbort(s->comm);
            s->comm = NULL;
            return gm_fail("rank %d: %s did not complete within %.0f s: another rank died or hung", c->rank, op, c->timeout_s);
        }
    }
}

static int nccl_allreduce(gm_comm *c, void *buf, size_t count, gm_dtype dt) {
    nccl_state *s = c->impl;
    return wait_done(c, "all-reduce", ncclAllReduce(buf, buf, count, dt == GM_DT_F64 ? ncclFloat64 : ncclFloat32, ncclAvg, s->comm, s->stream));
}

static int nccl_allgatherv(gm_comm *c, const void *send, void *recv, const size_t *bytes_per_rank) {
    // NCCL has no all-gather-v: one broadcast per rank into its slot, fused in a group.
    nccl_state *s = c->impl;
    ncclResult_t r = ncclGroupStart();
    size_t at = 0;
    for (int k = 0; k < c->world && r == ncclSuccess; k++) {
        r = ncclBroadcast(k == c->rank ? send : (char *)recv + at, (char *)recv + at, bytes_per_rank[k], ncclChar, k, s->comm, s->stream);
        at += bytes_per_rank[k];
    }
    ncclResult_t e = ncclGroupEnd();
    return wait_done(c, "all-gather", r != ncclSuccess ? r : e);
}

static int nccl_broadcast(gm_comm *c, void *buf, size_t bytes, int root) {
    nccl_state *s = c->impl;
    return wait_done(c, "broadcast", ncclBroadcast(buf, buf, bytes, ncclChar, root, s->comm, s->stream));
}

static int nccl_barrier(gm_comm *c) {
    (void)c;
    return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : gm_fail("rank %d: MPI barrier failed", c->rank);
}

static void nccl_close(gm_comm *c) {
    nccl_state *s = c->impl;
    if (s->comm) ncclCommDestroy(s->comm);
    cudaStreamDestroy(s->stream);
    free(s);
    c->impl = NULL;
    MPI_Finalize();
}

static const gm_comm_ops nccl_ops = {"nccl", nccl_allreduce, nccl_allgatherv, nccl_broadcast, nccl_barrier, nccl_close};

int gm_comm_open_nccl(gm_comm *c, int *argc, char ***argv) {
    if (gm_mpi_init(argc, argv, &c->rank, &c->world)) return -1;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) return gm_fail("rank %d: --comm=nccl needs a CUDA device, none found", c->rank);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int dev = (local ? atoi(local) : c->rank) % ndev;
    if (cudaSetDevice(dev) != cudaSuccess) return gm_fail("rank %d: cannot select CUDA device %d", c->rank, dev);
    ncclUniqueId id;
    if (c->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return gm_fail("rank 0: ncclGetUniqueId failed");
    if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return gm_fail("rank %d: broadcasting the NCCL id failed", c->rank);
    nccl_state *s = calloc(1, sizeof *s);
    if (!s) return gm_fail("comm: out of memory");
    if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess) {
        free(s);
        return gm_fail("rank %d: cannot create a CUDA stream", c->rank);
    }
    ncclResult_t r = ncclCommInitRank(&s->comm, c->world, id, c->rank);
    if (r != ncclSuccess) {
        cudaStreamDestroy(s->stream);
        free(s);
        return gm_fail("rank %d: ncclCommInitRank failed: %s", c->rank, ncclGetErrorString(r));
    }
    c->impl = s;
    c->ops = &nccl_ops;
    return 0;
}
#else
int gm_comm_open_nccl(gm_comm *c, int *argc, char ***argv) {
    (void)argc, (void)argv;
    return gm_fail("rank %d: --comm=nccl: this build has no CUDA (nvcc was not found)", c->rank);
}
#endif
