#include "backend/cpu/blas.h"

void gm_cpu_blas_single_thread(void) {
    static int done;
    if (!done) {
#pragma omp critical(gm_blas_threads)
        {
            openblas_set_num_threads(1);
            done = 1;
        }
    }
}
