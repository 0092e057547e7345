#include "train/ceilings.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "base/stats.h"
#include "base/timer.h"

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
