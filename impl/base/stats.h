// Order statistics of repeated timings: the median is what reports quote (robust to the odd run
// disturbed by another process), min and max show the spread.
#ifndef GM_BASE_STATS_H
#define GM_BASE_STATS_H

#include <stdlib.h>

static inline int gm_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Median of x (n >= 1); sorts x in place, so x[0] and x[n-1] are then the min and max.
static inline double gm_median(double *x, int n) {
    qsort(x, (size_t)n, sizeof(double), gm_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

#endif
