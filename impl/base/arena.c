#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"

enum { ARENA_BASE_ALIGN = 64 };

int gm_arena_init(gm_arena *a, size_t cap) {
    a->used = a->peak = 0;
    a->cap = cap;
    a->base = cap ? aligned_alloc(ARENA_BASE_ALIGN, (cap + ARENA_BASE_ALIGN - 1) / ARENA_BASE_ALIGN * ARENA_BASE_ALIGN) : NULL;
    if (cap && !a->base) return gm_fail("arena: cannot allocate %zu bytes", cap);
    return 0;
}

void gm_arena_free(gm_arena *a) {
    free(a->base);
    a->base = NULL;
    a->cap = a->used = 0;
}

void *gm_arena_alloc(gm_arena *a, size_t bytes, size_t align) {
    if (align == 0 || (align & (align - 1)) || align > ARENA_BASE_ALIGN) {
        gm_fail("arena: alignment %zu is not a power of two <= %d", align, ARENA_BASE_ALIGN);
        return NULL;
    }
    size_t start = (a->used + align - 1) & ~(align - 1);
    if (start > a->cap || bytes > a->cap - start) {
        gm_fail("arena: out of space (%zu bytes requested, %zu of %zu used)", bytes, a->used, a->cap);
        return NULL;
    }
    a->used = start + bytes;
    if (a->used > a->peak) a->peak = a->used;
    return a->base + start;
}

void gm_arena_reset(gm_arena *a, size_t mark) {
    if (mark <= a->used) a->used = mark;
}
