#include "base/diff.h"

#include <math.h>

gm_diff gm_diff_of(const double *ref, const double *got, size_t n) {
    gm_diff s = {0, 0, 0, 0, 0, -1};
    double d2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        const int finite = isfinite(ref[i]) && isfinite(got[i]);
        if (!finite) {
            if (s.first_nonfinite < 0) s.first_nonfinite = (long)i;
            s.nonfinite++;
        }
        const int equal = ref[i] == got[i] || (isnan(ref[i]) && isnan(got[i]));
        const double d = equal ? 0 : finite ? fabs(got[i] - ref[i]) : INFINITY;
        s.max_abs = fmax(s.max_abs, d), d2 += d * d;
        if (isfinite(ref[i])) s.max_ref = fmax(s.max_ref, fabs(ref[i])), r2 += ref[i] * ref[i];
    }
    s.rel = s.max_ref > 0 ? s.max_abs / s.max_ref : (s.max_abs > 0 ? INFINITY : 0);
    s.normwise = r2 > 0 ? sqrt(d2 / r2) : (d2 > 0 ? INFINITY : 0);
    return s;
}
