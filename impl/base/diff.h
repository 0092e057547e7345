// How far one array of numbers is from a reference: the statistics every comparison report here
// prints (bench/backend_compare, bench/ckpt_diff). Values come as doubles (exact for float, int32
// and uint32 inputs).
#ifndef GM_BASE_DIFF_H
#define GM_BASE_DIFF_H

#include <stddef.h>

typedef struct {
    double max_abs;         // max |got - ref|; an element that differs where either is non-finite counts as inf
    double max_ref;         // max |ref| over the finite ref values
    double rel;             // max_abs / max_ref (max_abs itself, or inf, when max_ref is 0)
    double normwise;        // ||got - ref|| / ||ref|| over the elements, with the same conventions
    size_t nonfinite;       // elements where ref or got is not finite
    long first_nonfinite;   // the first such element, or -1
} gm_diff;

// Statistics of got against ref (n values each). Two NaNs at one place count as equal.
gm_diff gm_diff_of(const double *ref, const double *got, size_t n);

#endif
