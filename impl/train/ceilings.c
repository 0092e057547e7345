#include "train/ceilings.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm.h"
#include "base/error.h"
#include "base/rng.h"
#include "base/stats.h"
#include "base/timer.h"
#include "train/hardware.h"

enum { SGEMM_N = 2048, REPS = 5 };
#define MEMCPY_BYTES ((size_t)256 << 20)

double gm_ceiling_sgemm(int threads) {
    const int n = SGEMM_N, saved = openblas_get_num_threads();
    float *A = malloc(sizeof(float) * n * n), *B = malloc(sizeof(float) * n * n), *C = malloc(sizeof(float) * n * n);
    if (!A || !B || !C) gm_die("ceilings: out of memory for the sgemm ceiling");
    for (size_t i = 0; i < (size_t)n * n; i++) A[i] = gm_rng_normal(1, 1, i), B[i] = gm_rng_normal(1, 2, i);
    openblas_set_num_threads(threads);
    double t[REPS];
    for (int r = -1; r < REPS; r++) {
        uint64_t t0 = gm_now_ns();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
        if (r >= 0) t[r] = gm_seconds_since(t0);
    }
    openblas_set_num_threads(saved);
    free(A), free(B), free(C);
    return 2.0 * n * n * (double)n / gm_median(t, REPS) * 1e-9;
}

double gm_ceiling_memcpy(int threads) {
    char *src = malloc(MEMCPY_BYTES), *dst = malloc(MEMCPY_BYTES);
    if (!src || !dst) gm_die("ceilings: out of memory for the memcpy ceiling");
    memset(src, 1, MEMCPY_BYTES), memset(dst, 2, MEMCPY_BYTES);
    double t[REPS];
    for (int r = -1; r < REPS; r++) {
        uint64_t t0 = gm_now_ns();
#pragma omp parallel num_threads(threads)
        {
            size_t nt = (size_t)omp_get_num_threads(), i = (size_t)omp_get_thread_num();
            size_t chunk = MEMCPY_BYTES / nt, at = i * chunk;
            memcpy(dst + at, src + at, i + 1 == nt ? MEMCPY_BYTES - at : chunk);
        }
        if (r >= 0) t[r] = gm_seconds_since(t0);
    }
    free(src), free(dst);
    return 2.0 * (double)MEMCPY_BYTES / gm_median(t, REPS) * 1e-9;
}

// ---- library ceilings -----------------------------------------------------------------------

enum { LIB_REPS = 5 };
#define SAMPLE_S 0.02  // each sample: enough calls to take ~20 ms, so launch and sync costs vanish

struct gm_lib_ceilings {
    const gm_backend *be;
    int cuda;              // cuBLAS (or its reference) on device buffers; else OpenBLAS on host buffers
    size_t elem;           // bytes per GEMM operand element: bf16 on CUDA, fp32 on the CPU
    int square;            // the square GEMM's edge
    size_t copy_bytes;     // the copy ceiling's buffer
    void *buf[3];          // A, B, C of the GEMMs (device or host)
    size_t cap[3];         // their sizes in elements
    char device[300], gemm_name[160], copy_name[120];
};

static void lib_free(gm_lib_ceilings *lc, int i) {
    if (!lc->buf[i]) return;
    if (lc->cuda) lc->be->free(lc->be, lc->buf[i]);
    else free(lc->buf[i]);
    lc->buf[i] = NULL, lc->cap[i] = 0;
}

// Buffer i with room for n elements, filled once with small values (0.01: no overflow at any k).
static void *lib_buffer(gm_lib_ceilings *lc, int i, size_t n) {
    if (lc->cap[i] >= n) return lc->buf[i];
    lib_free(lc, i);
    const size_t bytes = n * lc->elem;
    if (lc->cuda) {
        // bf16 pairs read from fp32 fill values: each half a finite number
        if (!(lc->buf[i] = lc->be->alloc(lc->be, bytes))) return NULL;
        lc->be->fill(lc->be, lc->buf[i], (gm_real)0.01, bytes / sizeof(gm_real));
    } else {
        float *h = malloc(bytes);
        if (!h) return gm_fail("ceilings: out of memory for a %zu-byte GEMM operand", bytes), NULL;
        for (size_t e = 0; e < n; e++) h[e] = 0.01f;
        lc->buf[i] = h;
    }
    lc->cap[i] = n;
    return lc->buf[i];
}

gm_lib_ceilings *gm_lib_ceilings_open(const gm_backend *be, int device) {
    gm_lib_ceilings *lc = calloc(1, sizeof *lc);
    if (!lc) return gm_fail("ceilings: out of memory"), NULL;
    lc->be = be, lc->cuda = !strcmp(be->name, "cuda");
    if (lc->cuda) {
        lc->elem = 2, lc->square = 8192, lc->copy_bytes = (size_t)1 << 30;
        if (gm_cuda_device_name(device, lc->device, sizeof lc->device)) return free(lc), NULL;
        const int ref = gm_cuda_libs_of(be) == GM_CUDA_LIBS_REF;
        snprintf(lc->gemm_name, sizeof lc->gemm_name, "%s, bf16 in and out, fp32 accumulation",
                 ref ? "the reference GEMM kernel (GM_CUDA_LIBS=ref: not cuBLAS)" : "cuBLAS GEMM");
        snprintf(lc->copy_name, sizeof lc->copy_name, "device-to-device copy");
    } else {
        lc->elem = sizeof(float), lc->square = SGEMM_N, lc->copy_bytes = MEMCPY_BYTES;
        char *cpu = gm_cpu_model();
        snprintf(lc->device, sizeof lc->device, "%s, %d OpenMP threads", cpu, omp_get_max_threads());
        free(cpu);
        snprintf(lc->gemm_name, sizeof lc->gemm_name, "OpenBLAS sgemm on %d threads", omp_get_max_threads());
        snprintf(lc->copy_name, sizeof lc->copy_name, "the %s backend's copy", be->name);
    }
    return lc;
}

void gm_lib_ceilings_close(gm_lib_ceilings *lc) {
    if (!lc) return;
    for (int i = 0; i < 3; i++) lib_free(lc, i);
    free(lc);
}

const char *gm_lib_ceilings_device(const gm_lib_ceilings *lc) { return lc->device; }
const char *gm_lib_ceilings_gemm_name(const gm_lib_ceilings *lc) { return lc->gemm_name; }
const char *gm_lib_ceilings_copy_name(const gm_lib_ceilings *lc) { return lc->copy_name; }
int gm_lib_ceilings_square(const gm_lib_ceilings *lc) { return lc->square; }
size_t gm_lib_ceilings_copy_bytes(const gm_lib_ceilings *lc) { return lc->copy_bytes; }

// `calls` GEMMs at s, finished; seconds, or < 0 on a backend error.
static double gemm_calls(gm_lib_ceilings *lc, gm_gemm_shape s, int calls) {
    // Column-major: op(A) (m, k) is stored (m, k), or (k, m) when transposed; likewise B.
    const int lda = s.transa ? s.k : s.m, ldb = s.transb ? s.n : s.k;
    void *A = lib_buffer(lc, 0, (size_t)s.m * s.k), *B = lib_buffer(lc, 1, (size_t)s.k * s.n);
    void *C = lib_buffer(lc, 2, (size_t)s.m * s.n);
    if (!A || !B || !C) return -1;
    if (lc->cuda && lc->be->sync(lc->be)) return -1;
    const int saved = openblas_get_num_threads();
    if (!lc->cuda) openblas_set_num_threads(omp_get_max_threads());
    const uint64_t t0 = gm_now_ns();
    for (int c = 0; c < calls; c++)
        if (lc->cuda)
            gm_cuda_gemm_with(gm_cuda_libs_of(lc->be), lc->be, s.transa, s.transb, s.m, s.n, s.k, 1.0f, GM_GEMM_BF16,
                              A, lda, 0, B, ldb, 0, 0.0f, GM_GEMM_BF16, C, s.m, 0, 1);
        else
            cblas_sgemm(CblasColMajor, s.transa ? CblasTrans : CblasNoTrans, s.transb ? CblasTrans : CblasNoTrans, s.m,
                        s.n, s.k, 1.0f, A, lda, B, ldb, 0.0f, C, s.m);
    if (lc->cuda && lc->be->sync(lc->be)) return -1;
    const double t = gm_seconds_since(t0);
    if (!lc->cuda) openblas_set_num_threads(saved);
    return t;
}

static gm_gemm_shape square_of(const gm_lib_ceilings *lc) {
    return (gm_gemm_shape){0, 0, lc->square, lc->square, lc->square, 0};
}

void gm_lib_ceilings_warm_up(gm_lib_ceilings *lc, double seconds) {
    const uint64_t t0 = gm_now_ns();
    while (gm_seconds_since(t0) < seconds)
        if (gemm_calls(lc, square_of(lc), 1) < 0) return;  // the error comes back from the measurement
}

double gm_lib_ceiling_gemm_ms(gm_lib_ceilings *lc, gm_gemm_shape s) {
    double one = gemm_calls(lc, s, 1);  // the first call also makes the buffers and the library's plan
    if (one < 0 || (one = gemm_calls(lc, s, 1)) < 0) return -1;
    const int calls = one >= SAMPLE_S ? 1 : one * 1000 < SAMPLE_S ? 1000 : (int)(SAMPLE_S / one);
    double t[LIB_REPS];
    for (int r = 0; r < LIB_REPS; r++)
        if ((t[r] = gemm_calls(lc, s, calls)) < 0) return -1;
    return gm_median(t, LIB_REPS) / calls * 1e3;
}

double gm_lib_ceiling_square_gflops(gm_lib_ceilings *lc) {
    const double n = lc->square, ms = gm_lib_ceiling_gemm_ms(lc, square_of(lc));
    return ms > 0 ? 2 * n * n * n / (ms * 1e6) : -1;
}

double gm_lib_ceiling_copy_gbs(gm_lib_ceilings *lc) {
    const gm_backend *be = lc->be;
    void *src = be->alloc(be, lc->copy_bytes), *dst = be->alloc(be, lc->copy_bytes);
    double t[LIB_REPS], gbs = -1;
    if (src && dst) {
        be->fill(be, src, (gm_real)1, lc->copy_bytes / sizeof(gm_real));
        be->copy(be, dst, src, lc->copy_bytes);  // warm-up: first touch of dst
        int r = be->sync(be) ? LIB_REPS + 1 : 0;
        for (; r < LIB_REPS; r++) {
            const uint64_t t0 = gm_now_ns();
            be->copy(be, dst, src, lc->copy_bytes);
            if (be->sync(be)) break;
            t[r] = gm_seconds_since(t0);
        }
        if (r == LIB_REPS) gbs = 2.0 * (double)lc->copy_bytes / gm_median(t, LIB_REPS) * 1e-9;
    }
    if (src) be->free(be, src);
    if (dst) be->free(be, dst);
    return gbs;
}
