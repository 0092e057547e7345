// Communicators: move buffers between the processes of one training job. They do not know what
// the buffers hold. Two channels:
//   host channel  host memory: control scalars (losses, the stop flag), start-up hashes.
//                 single (world size 1) or MPI (Open MPI).
//   data channel  backend memory (backend.h): the gradient all-reduce (or reduce-scatter) and
//                 Muon's all-gather.
//                 staged: through the host channel, via download/upload when the backend's memory
//                 is not host-visible (in place when it is); or NCCL on the CUDA backend's stream.
// Kinds: single (both channels trivial), mpi (MPI + staged), nccl (MPI + NCCL; the NCCL unique id
// is broadcast over MPI).
// Every collective gives bitwise identical results on every rank (the MPI all-reduce is a reduce
// to rank 0 in rank order followed by a broadcast), so replicated parameters never drift apart.
// The reduce-scatter is that same reduction of the whole buffer followed by a scatter instead of the
// broadcast: every value a rank receives is bitwise the one the all-reduce gives it.
// A collective that does not finish within `timeout_s` (a peer died or hung) ends this process
// with one line naming the rank and the operation (and last_words first), so a job never hangs
// forever.
#ifndef GM_DIST_COMM_H
#define GM_DIST_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/hash.h"  // gm_comm_check_same takes a gm_hash_bytes hash

typedef enum { GM_DT_F32, GM_DT_F64 } gm_dtype;

typedef struct gm_comm gm_comm;

// A part of a buffer (elements [offset, offset + count)) and the rank that receives its mean, or
// every rank (GM_ALL_RANKS).
typedef struct {
    size_t offset, count;
    int rank;
} gm_comm_span;
enum { GM_ALL_RANKS = -1 };

// The host channel: host buffers.
typedef struct {
    const char *name;
    // In place: buf <- mean over ranks of buf. count elements of type dt.
    int (*allreduce_mean)(gm_comm *c, void *buf, size_t count, gm_dtype dt);
    // In place: the mean over ranks of buf, reduced as allreduce_mean reduces it, reaches each span's
    // rank only: afterwards buf[span] holds the mean where span.rank is this rank or GM_ALL_RANKS,
    // and anything elsewhere. Spans lie inside buf and do not overlap; every rank passes the same.
    int (*reduce_scatter_mean)(gm_comm *c, void *buf, size_t count, gm_dtype dt, const gm_comm_span *spans, int nspans);
    // recv <- concatenation in rank order of every rank's send; rank r sends bytes_per_rank[r].
    int (*allgatherv)(gm_comm *c, const void *send, void *recv, const size_t *bytes_per_rank);
    int (*broadcast)(gm_comm *c, void *buf, size_t bytes, int root);
    int (*barrier)(gm_comm *c);
    void (*close)(gm_comm *c);
} gm_comm_ops;

// The data channel: buffers in the memory of backend `be`, ordered after the kernels queued on it
// before the call and before those queued after it.
typedef struct {
    const char *name;
    int (*allreduce_mean)(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt);
    // As the host channel's. NCCL: one ncclReduce per span to its rank (ncclAllReduce for
    // GM_ALL_RANKS), grouped: spans of any size, but NCCL's sums, not bitwise its all-reduce's.
    int (*reduce_scatter_mean)(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt,
                               const gm_comm_span *spans, int nspans);
    int (*allgatherv)(gm_comm *c, const gm_backend *be, const void *send, void *recv, const size_t *bytes_per_rank);
    void (*close)(gm_comm *c);  // before the host channel's close; NULL: nothing to release
} gm_comm_data_ops;

// Called with its message by a communicator that ends the process itself (the MPI watchdog, from
// its own thread, while the caller waits in a collective that will not return), before it exits.
typedef void (*gm_comm_last_words_fn)(void *ctx, const char *message);

struct gm_comm {
    const gm_comm_ops *ops;        // host channel
    const gm_comm_data_ops *data;  // data channel
    int rank, world;
    double timeout_s;
    void *impl;       // host channel state
    void *data_impl;  // data channel state
    // Set by the caller (the trainer: its log's error record), only between collectives; NULL: none.
    gm_comm_last_words_fn last_words;
    void *last_words_ctx;
};

// kind: "single", "mpi", "nccl", or "auto" (mpi when launched by mpirun, else single).
// argc/argv may be NULL. timeout_s <= 0 means the default (300 s).
int gm_comm_open(gm_comm *c, const char *kind, int *argc, char ***argv, double timeout_s);
void gm_comm_close(gm_comm *c);
// The staged data channel (single and mpi kinds): through the host channel.
extern const gm_comm_data_ops gm_comm_staged_data;

static inline int gm_allreduce_mean(gm_comm *c, void *buf, size_t count, gm_dtype dt) {
    return c->ops->allreduce_mean(c, buf, count, dt);
}
static inline int gm_allgatherv(gm_comm *c, const void *send, void *recv, const size_t *bytes_per_rank) {
    return c->ops->allgatherv(c, send, recv, bytes_per_rank);
}
static inline int gm_data_allreduce_mean(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt) {
    return c->data->allreduce_mean(c, be, buf, count, dt);
}
static inline int gm_data_reduce_scatter_mean(gm_comm *c, const gm_backend *be, void *buf, size_t count, gm_dtype dt,
                                              const gm_comm_span *spans, int nspans) {
    return c->data->reduce_scatter_mean(c, be, buf, count, dt, spans, nspans);
}
static inline int gm_data_allgatherv(gm_comm *c, const gm_backend *be, const void *send, void *recv,
                                     const size_t *bytes_per_rank) {
    return c->data->allgatherv(c, be, send, recv, bytes_per_rank);
}
static inline int gm_broadcast(gm_comm *c, void *buf, size_t bytes, int root) { return c->ops->broadcast(c, buf, bytes, root); }
static inline int gm_barrier(gm_comm *c) { return c->ops->barrier(c); }

// Start-up check: every rank passes its hash of `what` (e.g. "config", "data files"); fails on
// every rank, naming the first rank that differs from rank 0, when they are not all equal.
int gm_comm_check_same(gm_comm *c, const char *what, uint64_t hash);

#endif
