// The CPU backend struct: host memory, the kernels of this folder, and the error slot its sync
// reports.
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_ops.h"
#include "base/error.h"

static void *cpu_alloc(const gm_backend *be, size_t bytes) {
    (void)be;
    // 64-byte aligned for SIMD; aligned_alloc needs a multiple of the alignment.
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) {
        gm_fail("cpu backend: cannot allocate %zu bytes", bytes);
        return NULL;
    }
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void cpu_free(const gm_backend *be, void *p) {
    (void)be;
    free(p);
}

void gm_cpu_copy(const gm_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memmove(dst, src, bytes);
}

// Zero (the gradient reset: every parameter's gradient, each step) goes through memset, whose
// streaming stores do not first read the lines they overwrite: about 3x a store loop's rate on the
// 2-core EPYC VM. One slice per thread either way.
void gm_cpu_fill(const gm_backend *be, gm_real *p, gm_real value, size_t n) {
    (void)be;
    const int zero = value == 0 && !signbit(value);
#pragma omp parallel if (n > GM_CPU_PAR_MIN)
    {
        size_t lo, hi;
        gm_cpu_slice(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        if (zero)
            memset(p + lo, 0, (hi - lo) * sizeof *p);
        else
            for (size_t i = lo; i < hi; i++) p[i] = value;
    }
}

// The first failure since the last sync. Kernels run on the calling thread (and its OpenMP team),
// so one slot per process suffices; the critical section orders concurrent recorders.
static char cpu_error[1024];
static int cpu_failed;

void gm_cpu_record_error(const char *fmt, ...) {
    char msg[sizeof cpu_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
#pragma omp critical(gm_cpu_error)
    if (!cpu_failed) {
        memcpy(cpu_error, msg, sizeof cpu_error);
        cpu_failed = 1;
    }
}

static int cpu_sync(const gm_backend *be) {
    (void)be;
    if (!cpu_failed) return 0;
    cpu_failed = 0;
    return gm_fail("%s", cpu_error);
}

#define GM_CPU_FIELD(name, params, args) .name = gm_cpu_##name,
static const gm_backend cpu_backend = {
    .name = "cpu-" GM_REAL_NAME,
    .ctx = NULL,
    .host_visible = 1,
    .act_size = sizeof(gm_real),
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = gm_cpu_copy,
    .download = gm_cpu_copy,
    .sync = cpu_sync,
    GM_BACKEND_KERNELS(GM_CPU_FIELD)};
#undef GM_CPU_FIELD

const gm_backend *gm_backend_cpu(void) { return &cpu_backend; }
