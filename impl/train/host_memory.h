// What this process may allocate in host memory, read before a run creates anything so that a
// plan larger than that is refused at once (instead of failing at step 0 after the folder and log
// exist, or waking the OOM killer). Device memory (the CUDA backend) is not limited by these.
#ifndef GM_TRAIN_HOST_MEMORY_H
#define GM_TRAIN_HOST_MEMORY_H

typedef struct {
    double bytes;    // INFINITY when nothing limits the process
    char what[160];  // which limit that is, for messages ("the virtual memory limit (ulimit -v) less ...")
} gm_host_memory;

// The smallest of: MemAvailable in /proc/meminfo; the memory limit of the process's cgroup (v2
// memory.max, v1 memory.limit_in_bytes); RLIMIT_AS (ulimit -v) less the address space the process
// already maps (VmSize). A source that cannot be read is left out.
gm_host_memory gm_host_memory_limit(void);

#endif
