// Exponential (and tanh) for the CPU kernels' inner loops: in fp32 a branch-free Cephes-style
// polynomial (~1 ulp) that the compiler vectorizes; in fp64 (GM_FP64) libm, so the gradient checks
// keep full double accuracy.
#ifndef GM_BACKEND_CPU_FASTMATH_H
#define GM_BACKEND_CPU_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/real.h"

#ifdef GM_FP64
static inline double gm_fexp(double x) { return exp(x); }
static inline double gm_ftanh(double x) { return tanh(x); }
#else
// exp(x); x is clamped to [-87, 88] (exp(-87) ~ 1.6e-38: callers that need an exact 0 for
// -INFINITY select it themselves). NaN gives NaN: the polynomial then runs on 0, so that the
// exponent bits are always built from a finite n (a NaN n was a shift of a negative int).
static inline float gm_fexp(float x) {
    float c = x == x ? x : 0.0f;
    c = c < -87.0f ? -87.0f : c;
    c = c > 88.0f ? 88.0f : c;
    float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
    float r = c - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t e = (uint32_t)((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &e, sizeof s);
    return x == x ? p * s : x;
}
static inline float gm_ftanh(float x) {
    float a = x < 0 ? -x : x;
    float z = x * x;  // small |x|: odd polynomial (Cephes tanhf)
    float ps = (((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
               3.33332819422e-1f;
    ps = ps * z * x + x;
    float e = gm_fexp(2.0f * (a > 44.0f ? 44.0f : a));  // large |x|: 1 - 2/(exp(2|x|)+1)
    float pl = 1.0f - 2.0f / (e + 1.0f);
    pl = x < 0 ? -pl : pl;
    return a < 0.625f ? ps : pl;
}
#endif

#endif
