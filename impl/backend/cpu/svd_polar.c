// The SVD reference orthogonalizer: thin SVD by LAPACK's divide-and-conquer gesdd, and the polar
// factor U V^T built from it; fp64 and fp32 from one body (svd_polar.inc).
#include "backend/cpu/linalg.h"

#include <cblas.h>
#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

#define T double
#define SFX f64
#define GESDD LAPACKE_dgesdd
#define GEMM cblas_dgemm
#define EPS 2.220446049250313e-16
#include "backend/cpu/svd_polar.inc"
#undef T
#undef SFX
#undef GESDD
#undef GEMM
#undef EPS

#define T float
#define SFX f32
#define GESDD LAPACKE_sgesdd
#define GEMM cblas_sgemm
#define EPS 1.1920928955078125e-07
#include "backend/cpu/svd_polar.inc"
#undef T
#undef SFX
#undef GESDD
#undef GEMM
#undef EPS

int gm_singular_values_f64(const double *A, int m, int n, double *s) {
    return svd_run_f64("singular-values", 'N', A, m, n, NULL, s, NULL);
}
