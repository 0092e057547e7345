// The floating-point type of the CPU reference path. The same sources are compiled twice: as
// float (the product) and, with -DGM_FP64, as double (the build the gradient checks and the fp64
// equivalence bars run on). Code that must be one precision whatever the build says so itself.
#ifndef GM_BASE_REAL_H
#define GM_BASE_REAL_H

#include <math.h>

#ifdef GM_FP64
typedef double gm_real;
static inline gm_real gm_sqrt(gm_real x) { return sqrt(x); }
#define GM_REAL_NAME "fp64"
#define GM_REAL_EPS 2.220446049250313e-16
#else
typedef float gm_real;
static inline gm_real gm_sqrt(gm_real x) { return sqrtf(x); }
#define GM_REAL_NAME "fp32"
#define GM_REAL_EPS 1.1920928955078125e-07
#endif

#endif
