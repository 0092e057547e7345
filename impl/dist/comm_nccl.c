// NCCL data channel over the MPI host channel. Rank 0 creates the NCCL unique id and broadcasts it
// over MPI; each rank drives the GPU numbered (local rank mod device count). Collectives are
// enqueued on the CUDA backend's own stream, so they run after the kernels that produced their
// input and before those that consume the result, and are then waited for with a timeout: on
// expiry the NCCL communicator is aborted and the failure names the rank and the operation.
//
// NCCL is loaded at run time (dlopen), not linked: a program that never asks for --comm=nccl runs
// where NCCL is absent, and one that does fails with one line saying what could not be loaded.
// GM_NCCL_LIB names the library file when it is not on the loader's path (e.g. inside a Python
// environment's nvidia/nccl/lib).
#include <string.h>

#include "backend/cuda/cuda.h"
#include "backend/cuda/device.h"
#include "base/error.h"
#include "base/fmt_double.h"
#include "dist/comm.h"

int gm_comm_open_mpi(gm_comm *c, int *argc, char ***argv);

#ifdef GM_HAVE_CUDA
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdlib.h>

#include "base/timer.h"

// The NCCL functions used here, resolved from the loaded library with the types of nccl.h.
#define NCCL_FUNCS(X)          \
    X(ncclGetUniqueId)         \
    X(ncclCommInitRank)        \
    X(ncclAllReduce)           \
    X(ncclReduce)              \
    X(ncclBroadcast)           \
    X(ncclGroupStart)          \
    X(ncclGroupEnd)            \
    X(ncclCommGetAsyncError)   \
    X(ncclCommAbort)           \
    X(ncclCommDestroy)         \
    X(ncclGetErrorString)
#define NCCL_PTR(name) __typeof__(name) *name;
static struct {
    NCCL_FUNCS(NCCL_PTR)
} nccl;
#undef NCCL_PTR

// Load NCCL once per process; 0, or -1 + gm_fail naming the library and what is missing.
static int nccl_load(int rank) {
    static void *lib;
    if (lib) return 0;
    const char *file = getenv("GM_NCCL_LIB");
    if (!file || !*file) file = "libnccl.so.2";
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return gm_fail("rank %d: --comm=nccl: cannot load NCCL (%s); install NCCL or set GM_NCCL_LIB to its "
                       "libnccl.so.2", rank, dlerror());
#define NCCL_SYM(name)                                                                                    \
    if (!(nccl.name = (__typeof__(nccl.name))dlsym(h, #name))) {                                          \
        dlclose(h);                                                                                       \
        return gm_fail("rank %d: --comm=nccl: %s has no symbol %s (NCCL 2.x needed)", rank, file, #name); \
    }
    NCCL_FUNCS(NCCL_SYM)
#undef NCCL_SYM
    lib = h;
    return 0;
}

typedef struct {
    ncclComm_t comm;
} nccl_state;

static cudaStream_t stream_of(gm_comm *c, const gm_backend *be, const char *op) {
    cudaStream_t s = (cudaStream_t)gm_cuda_stream(be);
    if (!s) gm_fail("rank %d: NCCL %s: the buffers are in backend '%s'; --comm=nccl needs --backend=cuda", c->rank, op,
                    be->name);
    return s;
}

static int wait_done(gm_comm *c, cudaStream_t stream, const char *op, ncclResult_t issued) {
    nccl_state *s = c->data_impl;
    if (issued != ncclSuccess) return gm_fail("rank %d: NCCL %s failed: %s", c->rank, op, nccl.ncclGetErrorString(issued));
    uint64_t start = gm_now_ns();
    for (;;) {
        cudaError_t q = cudaStreamQuery(stream);
        if (q == cudaSuccess) return 0;
        if (q != cudaErrorNotReady) return gm_fail("rank %d: %s: CUDA error %s", c->rank, op, cudaGetErrorString(q));
        ncclResult_t async;
        nccl.ncclCommGetAsyncError(s->comm, &async);
        if (async != ncclSuccess) return gm_fail("rank %d: NCCL %s failed: %s", c->rank, op, nccl.ncclGetErrorString(async));
        if (gm_seconds_since(start) > c->timeout_s) {
            nccl.ncclCommAbort(s->comm);
            s->comm = NULL;
            char t[GM_FMT_DOUBLE_LEN];
            return gm_fail("rank %d: %s did not complete within %s s: another rank died or hung", c->rank, op,
                           gm_fmt_double(c->timeout_s, t));
        }
    }
}

static int nccl_allreduce(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt) {
    nccl_state *s = c->data_impl;
    cudaStream_t st = stream_of(c, be, "all-reduce");
    if (!st) return -1;
    ncclDataType_t t = dt == GM_DT_F64 ? ncclFloat64 : ncclFloat32;
    return wait_done(c, st, "all-reduce", nccl.ncclAllReduce(buf, buf, count, t, ncclAvg, s->comm, st));
}

// ncclReduceScatter needs equal counts per rank, and Muon's matrices give each rank a different
// share: one reduce per span to its rank instead (an all-reduce for every rank's spans), fused in a
// group; spans of any size, in place.
static int nccl_reduce_scatter(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt,
                               const gm_comm_span *spans, int nspans) {
    (void)count;
    nccl_state *s = c->data_impl;
    cudaStream_t st = stream_of(c, be, "reduce-scatter");
    if (!st) return -1;
    ncclDataType_t t = dt == GM_DT_F64 ? ncclFloat64 : ncclFloat32;
    size_t esize = dt == GM_DT_F64 ? sizeof(double) : sizeof(float);
    ncclResult_t r = nccl.ncclGroupStart();
    for (int k = 0; k < nspans && r == ncclSuccess; k++) {
        char *p = (char *)buf + spans[k].offset * esize;
        r = spans[k].rank == GM_ALL_RANKS ? nccl.ncclAllReduce(p, p, spans[k].count, t, ncclAvg, s->comm, st)
                                          : nccl.ncclReduce(p, p, spans[k].count, t, ncclAvg, spans[k].rank, s->comm, st);
    }
    ncclResult_t e = nccl.ncclGroupEnd();
    return wait_done(c, st, "reduce-scatter", r != ncclSuccess ? r : e);
}

static int nccl_allgatherv(gm_comm *c, const gm_backend *be, const void *send, void *recv,
                           const size_t *bytes_per_rank) {
    // NCCL has no all-gather-v: one broadcast per rank into its slot, fused in a group.
    nccl_state *s = c->data_impl;
    cudaStream_t st = stream_of(c, be, "all-gather");
    if (!st) return -1;
    ncclResult_t r = nccl.ncclGroupStart();
    size_t at = 0;
    for (int k = 0; k < c->world && r == ncclSuccess; k++) {
        r = nccl.ncclBroadcast(k == c->rank ? send : (char *)recv + at, (char *)recv + at, bytes_per_rank[k], ncclChar, k,
                          s->comm, st);
        at += bytes_per_rank[k];
    }
    ncclResult_t e = nccl.ncclGroupEnd();
    return wait_done(c, st, "all-gather", r != ncclSuccess ? r : e);
}

static void nccl_close(gm_comm *c) {
    nccl_state *s = c->data_impl;
    if (s && s->comm) nccl.ncclCommDestroy(s->comm);
    free(s);
    c->data_impl = NULL;
}

static const gm_comm_data_ops nccl_data = {"nccl", nccl_allreduce, nccl_reduce_scatter, nccl_allgatherv, nccl_close};

int gm_comm_open_nccl(gm_comm *c, int *argc, char ***argv) {
    if (gm_comm_open_mpi(c, argc, argv)) return -1;
    if (nccl_load(c->rank)) return -1;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        return gm_fail("rank %d: --comm=nccl needs a CUDA device, none found", c->rank);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int dev = (local ? atoi(local) : c->rank) % ndev;
    if (cudaSetDevice(dev) != cudaSuccess) return gm_fail("rank %d: cannot select CUDA device %d", c->rank, dev);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (c->rank == 0 && nccl.ncclGetUniqueId(&id) != ncclSuccess) return gm_fail("rank 0: ncclGetUniqueId failed");
    if (gm_broadcast(c, &id, sizeof id, 0)) return -1;
    nccl_state *s = calloc(1, sizeof *s);
    if (!s) return gm_fail("comm: out of memory");
    ncclResult_t r = nccl.ncclCommInitRank(&s->comm, c->world, id, c->rank);
    if (r != ncclSuccess) {
        free(s);
        return gm_fail("rank %d: ncclCommInitRank failed: %s", c->rank, nccl.ncclGetErrorString(r));
    }
    c->data_impl = s;
    c->data = &nccl_data;
    return 0;
}
#else
int gm_comm_open_nccl(gm_comm *c, int *argc, char ***argv) {
    (void)argc, (void)argv;
    return gm_fail("rank %d: --comm=nccl: %s", c->rank, GM_NO_CUDA_WHY);
}
#endif
