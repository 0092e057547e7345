#include "backend/cpu/blas.h"

// Checked on every call rather than once: a harness may run OpenBLAS on all threads in between
// (bench: the sgemm ceiling at every thread count), and the kernels' policy must not depend on
// the order of such calls.
void gm_cpu_blas_single_thread(void) {
    if (openblas_get_num_threads() != 1) {
#pragma omp critical(gm_blas_threads)
        openblas_set_num_threads(1);
    }
}
