// BLAS as the CPU backend uses it: the GEMM of gm_real's precision, and OpenBLAS kept to one
// thread so that OpenMP owns the cores (each OpenMP thread calls BLAS on its own slice: two thread
// pools spinning against each other made small matmuls ~40x slower than one thread).
#ifndef GM_BACKEND_CPU_BLAS_H
#define GM_BACKEND_CPU_BLAS_H

#include <cblas.h>

#ifdef GM_FP64
#define GM_GEMM cblas_dgemm
#else
#define GM_GEMM cblas_sgemm
#endif

// Set OpenBLAS to one thread if it is not (cheap to call before every kernel). Call it outside
// parallel regions: OpenBLAS's thread count is process-wide.
void gm_cpu_blas_single_thread(void);

#endif
