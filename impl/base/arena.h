// Arena (bump) allocation: one malloc up front, aligned carving, release by mark.
// Activations and scratch buffers of a step come from an arena, so a step allocates nothing.
#ifndef GM_BASE_ARENA_H
#define GM_BASE_ARENA_H

#include <stddef.h>

typedef struct {
    char *base;
    size_t cap;
    size_t used;
    size_t peak;  // high-water mark, reported as peak memory
} gm_arena;

int gm_arena_init(gm_arena *a, size_t cap);
void gm_arena_free(gm_arena *a);
// `align` must be a power of two. Returns NULL (and gm_fail) when the arena is exhausted.
void *gm_arena_alloc(gm_arena *a, size_t bytes, size_t align);
static inline size_t gm_arena_mark(const gm_arena *a) { return a->used; }
// Release everything allocated after `mark`.
void gm_arena_reset(gm_arena *a, size_t mark);

#endif
