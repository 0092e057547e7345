// The coefficient data is what the sources print (numbers copied by hand from the records named
// in ns_coeffs.c, not produced by our code), the per-step rule, and the scalar map.
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "optim/ns_coeffs.h"

Test(ns_coeffs, sets_hold_the_published_numbers) {
    const gm_ns_coeffs *q = gm_ns_coeffs_find("quintic");
    cr_assert_not_null(q, "%s", gm_error());
    cr_expect(q->ntriples == 1 && q->abc[0][0] == 3.4445 && q->abc[0][1] == -4.7750 && q->abc[0][2] == 2.0315);
    cr_expect(q->norm_scale == 1.0 && q->norm_eps == 1e-7);
    const gm_ns_coeffs *c = gm_ns_coeffs_find("cubic");
    cr_assert_not_null(c);
    cr_expect(c->abc[0][0] == 1.5 && c->abc[0][1] == -0.5 && c->abc[0][2] == 0.0);
    const gm_ns_coeffs *y = gm_ns_coeffs_find("you5");
    cr_assert_not_null(y);
    cr_expect(y->ntriples == 5 && y->abc[0][0] == 4.0848 && y->abc[4][1] == -3.0525 && y->abc[4][2] == 1.2012);
    const gm_ns_coeffs *p = gm_ns_coeffs_find("polar-express");
    cr_assert_not_null(p);
    cr_expect(p->ntriples == 5 && p->abc[0][0] == 8.156554524902461 && p->abc[4][2] == 0.42323551169305323);
    cr_expect(p->norm_scale == 1.02 && p->norm_eps == 1e-6);
    cr_expect_eq(gm_ns_coeffs_count(), 4);
}

Test(ns_coeffs, iterations_past_the_list_reuse_the_last_triple) {
    const gm_ns_coeffs *y = gm_ns_coeffs_find("you5");
    cr_expect_eq(gm_ns_triple(y, 0), y->abc[0]);
    cr_expect_eq(gm_ns_triple(y, 4), y->abc[4]);
    cr_expect_eq(gm_ns_triple(y, 9), y->abc[4]);
    const gm_ns_coeffs *q = gm_ns_coeffs_find("quintic");
    cr_expect_eq(gm_ns_triple(q, 7), q->abc[0]);
}

Test(ns_coeffs, scalar_map_iterates_the_polynomials) {
    // Cubic from 0.5: 0.5 * (1.5 - 0.5 * 0.25) = 0.6875, then 0.6875 * (1.5 - 0.5 * 0.47265625).
    const gm_ns_coeffs *c = gm_ns_coeffs_find("cubic");
    cr_expect(fabs(gm_ns_scalar_map(c, 1, 0.5) - 0.6875) < 1e-15);
    cr_expect(fabs(gm_ns_scalar_map(c, 2, 0.5) - 0.6875 * (1.5 - 0.5 * 0.47265625)) < 1e-15);
    // The cubic converges to 1 for inputs in (0, sqrt(3)); 0 and odd symmetry are preserved.
    cr_expect(fabs(gm_ns_scalar_map(c, 60, 0.01) - 1.0) < 1e-12);
    cr_expect_eq(gm_ns_scalar_map(c, 5, 0.0), 0.0);
    cr_expect_eq(gm_ns_scalar_map(c, 5, -0.3), -gm_ns_scalar_map(c, 5, 0.3));
    // The quintic's p(1) = a + b + c = 0.701.
    cr_expect(fabs(gm_ns_scalar_map(gm_ns_coeffs_find("quintic"), 1, 1.0) - 0.701) < 1e-12);
}
