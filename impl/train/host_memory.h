// What this process may allocate in host memory, read before a run creates anything so that a
// plan larger than that is refused at once (instead of failing at step 0 after the folder and log
// exist, or waking the OOM killer). Device memory (the CUDA backend) is not limited by these.
#ifndef GM_TRAIN_HOST_MEMORY_H
#define GM_TRAIN_HOST_MEMORY_H

#include <stddef.h>

#include "train/mem_plan.h"
#include "train/run_config.h"

typedef struct {
    double bytes;    // INFINITY when nothing limits the process
    char what[160];  // which limit that is, for messages ("the virtual memory limit (ulimit -v) less ...")
} gm_host_limit;

typedef struct {
    // Memory the process may fill: the smaller of MemAvailable in /proc/meminfo and the memory
    // limit of the process's cgroup (v2 memory.max, v1 memory.limit_in_bytes).
    gm_host_limit filled;
    // Address space it may still map: RLIMIT_AS (ulimit -v) less what it already maps (VmSize).
    // Every mapping counts, touched or not.
    gm_host_limit mapped;
} gm_host_memory;

// A source that cannot be read is left out.
gm_host_memory gm_host_memory_limit(void);

// The limit a run exceeds with a backend plan of `backend_bytes` and the host plan `host` beyond it:
// lim->filled when what it fills (backend plan + host.filled) is above it, else lim->mapped when all
// it maps (that + host.mapped) is above that; NULL when it fits. *need: the bytes held against the
// limit returned (against lim->filled when it fits).
const gm_host_limit *gm_host_over_limit(const gm_host_memory *lim, double backend_bytes, const gm_host_plan *host,
                                        double *need);

// What each OpenMP thread of the CPU backend maps beyond the backend's buffers, measured with
// OpenBLAS 0.3.21 and glibc 2.36 (VmPeak of runs at 1, 2, 4 and 8 threads: 200 MiB more per
// thread, the sum of these three). Only a few MiB of it is ever filled.
// - OpenBLAS's buffer: every thread that calls BLAS takes one, mmap'ed at its first call (BUFFER_SIZE,
//   32 << 22 on x86-64), and OpenBLAS retries a failed mmap forever: it must fit.
#define GM_OPENBLAS_BUFFER_BYTES ((size_t)128 << 20)
// - glibc's malloc arena of a thread other than the main one: HEAP_MAX_SIZE reserved at its first malloc.
#define GM_MALLOC_ARENA_BYTES ((size_t)64 << 20)
// - the thread's stack (not the main thread's): OMP_STACKSIZE / GOMP_STACKSIZE where set, else the
//   default of new threads (ulimit -s).
size_t gm_thread_stack_bytes(void);

// The bytes of the files `pattern` matches (a run maps its token shards whole); 0 when none does.
size_t gm_files_bytes(const char *pattern);

// VmPeak of this process in KiB, the most address space it has mapped (what `ulimit -v` bounds);
// -1 where /proc/self/status cannot be read.
long gm_peak_vm_kb(void);

// The host plan of rc beyond its backend plan (gm_train_memory_plan), per category; -1 (gm_fail) on
// a bad configuration. Stats the shards, reads nothing.
int gm_train_host_plan(const gm_run_config *rc, gm_host_plan *out);

#endif
