// base/diff.h on inputs with known answers: the comparison statistics of the reports.
#include <criterion/criterion.h>
#include <math.h>

#include "base/diff.h"

Test(diff, known_values) {
    const double ref[] = {3, -4, 0, 1}, got[] = {3, -4.5, 0.25, 1};
    const gm_diff s = gm_diff_of(ref, got, 4);
    cr_assert_eq(s.max_abs, 0.5);
    cr_assert_eq(s.max_ref, 4);
    cr_assert_eq(s.rel, 0.125);
    cr_assert_float_eq(s.normwise, sqrt((0.25 + 0.0625) / 26), 1e-15);
    cr_assert_eq(s.nonfinite, 0);
    cr_assert_eq(s.first_nonfinite, -1);
}

Test(diff, non_finite_values) {
    const double ref[] = {1, NAN, 2, INFINITY}, got[] = {1, NAN, INFINITY, INFINITY};
    const gm_diff s = gm_diff_of(ref, got, 4);
    cr_assert_eq(s.nonfinite, 3);
    cr_assert_eq(s.first_nonfinite, 1);
    cr_assert(isinf(s.max_abs), "a finite value that became inf is an infinite error");
    const gm_diff same = gm_diff_of(ref, ref, 4);
    cr_assert_eq(same.max_abs, 0, "NaN against NaN and inf against inf count as equal");
}
