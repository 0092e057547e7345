// The CPU backend's kernels, one concept per file, gathered into the struct by cpu_backend.c:
// gm_cpu_<name> for every entry of GM_BACKEND_KERNELS.
#ifndef GM_BACKEND_CPU_CPU_OPS_H
#define GM_BACKEND_CPU_CPU_OPS_H

#include "backend/backend.h"

// Loops with less work than this (elements touched) run on one thread: below it a parallel
// region costs more than it saves, and idle OpenMP threads spinning beside a busy process (tests
// run 2 at a time on 2 cores) slow both down by orders of magnitude.
#define GM_CPU_PAR_MIN ((size_t)1 << 16)

// Items [*lo, *hi) of n for thread t of nt: contiguous slices in thread order.
static inline void gm_cpu_slice(size_t n, int t, int nt, size_t *lo, size_t *hi) {
    *lo = n * (size_t)t / (size_t)nt;
    *hi = n * (size_t)(t + 1) / (size_t)nt;
}

#define GM_CPU_PROTO(name, params, args) void gm_cpu_##name(const gm_backend *be, GM_UNPACK params);
GM_BACKEND_KERNELS(GM_CPU_PROTO)
#undef GM_CPU_PROTO

// Record a kernel's failure for the backend's next sync (the first one since the last sync is
// kept). Safe to call from OpenMP threads.
void gm_cpu_record_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
