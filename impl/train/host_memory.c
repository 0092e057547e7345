#define _GNU_SOURCE  // pthread_getattr_default_np
#include "train/host_memory.h"

#include <ctype.h>
#include <glob.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <omp.h>

#include "train/trainer.h"

// The number after `key` in a "key: N kB" file (/proc/meminfo, /proc/self/status), in bytes; -1.
static double kb_field(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') {
            v = strtod(line + n + 1, NULL) * 1024.0;
            break;
        }
    fclose(f);
    return v;
}

// A file holding one number ("max" or a value far above any machine's memory: no limit); -1.
static double number_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[64] = "";
    char *ok = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!ok || !strncmp(buf, "max", 3)) return -1;
    char *end;
    double v = strtod(buf, &end);
    return end == buf || v >= 0x1p60 ? -1 : v;  // v1 writes 2^63 rounded down to a page for "unlimited"
}

// The cgroup memory limit of this process: the v2 line "0::<path>" or the v1 "N:memory:<path>" of
// /proc/self/cgroup, under /sys/fs/cgroup (and, in a container, the mount's own root).
static double cgroup_limit(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[1024], path[1200];
    double best = -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *p = NULL;
        const char *fmt[2];
        if (!strncmp(line, "0::", 3)) p = line + 3, fmt[0] = "/sys/fs/cgroup%s/memory.max", fmt[1] = "/sys/fs/cgroup/memory.max";
        else if ((p = strstr(line, ":memory:")))
            p += 8, fmt[0] = "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", fmt[1] = "/sys/fs/cgroup/memory/memory.limit_in_bytes";
        else continue;
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, fmt[k], p);
            double v = number_file(path);
            if (v >= 0 && (best < 0 || v < best)) best = v;
            if (v >= 0) break;
        }
    }
    fclose(f);
    return best;
}

gm_host_memory gm_host_memory_limit(void) {
    gm_host_memory m = {{INFINITY, "no limit"}, {INFINITY, "no limit"}};
    double avail = kb_field("/proc/meminfo", "MemAvailable");
    if (avail >= 0) m.filled.bytes = avail, snprintf(m.filled.what, sizeof m.filled.what, "the memory available (MemAvailable in /proc/meminfo)");
    double cg = cgroup_limit();
    if (cg >= 0 && cg < m.filled.bytes) m.filled.bytes = cg, snprintf(m.filled.what, sizeof m.filled.what, "the cgroup's memory limit");
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        double mapped = fmax(kb_field("/proc/self/status", "VmSize"), 0);
        m.mapped.bytes = (double)as.rlim_cur - mapped;
        snprintf(m.mapped.what, sizeof m.mapped.what, "the virtual memory limit (ulimit -v) less the %.3f GB already mapped", mapped / 1e9);
    }
    return m;
}

long gm_peak_vm_kb(void) {
    double v = kb_field("/proc/self/status", "VmPeak");
    return v < 0 ? -1 : (long)(v / 1024);
}

// OMP_STACKSIZE's syntax: a size with an optional unit B, K, M or G (K when none); 0 when malformed.
static size_t omp_stacksize(const char *s) {
    char *end;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    int unit = toupper((unsigned char)*end);
    double scale = unit == 'B' ? 1 : unit == 'M' ? 0x1p20 : unit == 'G' ? 0x1p30 : 0x1p10;
    if (end == s || v <= 0 || (*end && !strchr("BKMG", unit))) return 0;
    return (size_t)(v * scale);
}

size_t gm_thread_stack_bytes(void) {
    const char *env = getenv("OMP_STACKSIZE") ? getenv("OMP_STACKSIZE") : getenv("GOMP_STACKSIZE");
    size_t n = env ? omp_stacksize(env) : 0;
    pthread_attr_t attr;
    if (!n && pthread_getattr_default_np(&attr) == 0) {
        pthread_attr_getstacksize(&attr, &n);
        pthread_attr_destroy(&attr);
    }
    return n ? n : (size_t)8 << 20;  // where the default cannot be read: the usual ulimit -s of 8 MiB
}

size_t gm_files_bytes(const char *pattern) {
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) return 0;
    size_t total = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode)) total += (size_t)st.st_size;
    }
    globfree(&g);
    return total;
}

int gm_train_host_plan(const gm_run_config *rc, gm_host_plan *out) {
    memset(out, 0, sizeof *out);
    const gm_config *c = &rc->model;
    // Rank 0 of one: the whole optimizer state, which rank 0 gathers for a checkpoint on any world size.
    gm_mem_plan be;
    if (gm_train_memory_plan(rc, 1, 0, &be)) return -1;
    const size_t state = gm_mem_plan_bytes(&be, "params") + gm_mem_plan_bytes(&be, "adam") +
                         gm_mem_plan_bytes(&be, "muon_momentum") + gm_mem_plan_bytes(&be, "muon_second");
    const size_t threads = (size_t)omp_get_max_threads();
    const size_t tokens = (size_t)c->batch * c->seq_len;
    // A checkpoint downloads every state buffer into host memory before it writes; --resume reads
    // the file whole, into a buffer that doubles as it grows (base/io.c): up to twice its size.
    gm_mem_plan_add(&out->filled, "checkpoint", rc->resume[0] ? "checkpoint file read on --resume (up to twice its size)"
                                                               : "checkpoint: host copy of parameters and optimizer states",
                    rc->resume[0] ? 2 * state : state);
    // ids, targets, document ids and losses of a micro-batch, and the rotary tables built on the host.
    gm_mem_plan_add(&out->filled, "batch", "host batch: ids, targets, document ids, losses; rotary tables",
                    4 * tokens * sizeof(int32_t) + (size_t)c->seq_len * c->head_dim * sizeof(gm_real));
    // Measured (VmHWM and VmPeak against this plan at tiny and small scale, B 1 to 8, T 1024 to 4096,
    // 1 to 8 threads): a thread fills 1.4 MiB (its stack, OpenBLAS's packed panels); the heap and
    // the libraries' own allocations about 1 MiB more, and some runs map up to 17 MiB more at their
    // peak than others of the same flags. 4 MiB per thread and 64 MiB cover that with room.
    gm_mem_plan_add(&out->filled, "runtime", "runtime: 4 MiB per OpenMP thread, 64 MiB allocator and libraries",
                    threads * ((size_t)4 << 20) + ((size_t)64 << 20));
    gm_mem_plan_add(&out->mapped, "blas_buffers", "OpenBLAS buffer of each OpenMP thread (128 MiB each)", threads * GM_OPENBLAS_BUFFER_BYTES);
    gm_mem_plan_add(&out->mapped, "thread_stacks", "stacks of the other OpenMP threads (ulimit -s, OMP_STACKSIZE)", (threads - 1) * gm_thread_stack_bytes());
    gm_mem_plan_add(&out->mapped, "malloc_arenas", "malloc arenas of the other OpenMP threads (64 MiB each)",
                    (threads - 1) * GM_MALLOC_ARENA_BYTES);
    gm_mem_plan_add(&out->mapped, "shards", "train and val shards, mapped whole", gm_files_bytes(rc->train_data) + gm_files_bytes(rc->val_data));
    return 0;
}

const gm_host_limit *gm_host_over_limit(const gm_host_memory *lim, double backend_bytes, const gm_host_plan *host,
                                        double *need) {
    const double filled = backend_bytes + (double)host->filled.total, mapped = filled + (double)host->mapped.total;
    *need = filled;
    if (filled > lim->filled.bytes) return &lim->filled;
    if (mapped > lim->mapped.bytes) return *need = mapped, &lim->mapped;
    return NULL;
}
