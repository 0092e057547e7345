// Arena: aligned carving, exhaustion reported (not a crash), release by mark, peak tracking.
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "base/error.h"

Test(arena, aligned_allocations_do_not_overlap) {
    gm_arena a;
    cr_assert_eq(gm_arena_init(&a, 4096), 0);
    char *p1 = gm_arena_alloc(&a, 3, 1);
    float *p2 = gm_arena_alloc(&a, 10 * sizeof(float), 16);
    double *p3 = gm_arena_alloc(&a, 5 * sizeof(double), 64);
    cr_assert(p1 && p2 && p3);
    cr_assert_eq((uintptr_t)p2 % 16, 0);
    cr_assert_eq((uintptr_t)p3 % 64, 0);
    cr_assert((char *)p2 >= p1 + 3);
    cr_assert((char *)p3 >= (char *)(p2 + 10));
    memset(p1, 1, 3), memset(p2, 2, 40), memset(p3, 3, 40);
    cr_assert_eq(p1[2], 1);
    gm_arena_free(&a);
}

Test(arena, exhaustion_is_an_error_not_a_crash) {
    gm_arena a;
    cr_assert_eq(gm_arena_init(&a, 256), 0);
    cr_assert_not_null(gm_arena_alloc(&a, 200, 8));
    cr_assert_null(gm_arena_alloc(&a, 100, 8));
    cr_assert(strstr(gm_error(), "arena: out of space"), "%s", gm_error());
    cr_assert_null(gm_arena_alloc(&a, 8, 3));
    cr_assert(strstr(gm_error(), "power of two"), "%s", gm_error());
    gm_arena_free(&a);
}

Test(arena, reset_to_mark_reuses_space_and_keeps_peak) {
    gm_arena a;
    cr_assert_eq(gm_arena_init(&a, 1024), 0);
    gm_arena_alloc(&a, 100, 8);
    size_t mark = gm_arena_mark(&a);
    void *q = gm_arena_alloc(&a, 500, 8);
    gm_arena_reset(&a, mark);
    cr_assert_eq(gm_arena_alloc(&a, 500, 8), q, "space after the mark is handed out again");
    cr_assert_eq(a.peak, a.used);
    gm_arena_reset(&a, 0);
    cr_assert_eq(a.used, 0);
    cr_assert_geq(a.peak, 600);
    gm_arena_free(&a);
}
