// A table of named views into one contiguous buffer: the parameters (and, with the same type,
// the activations of a step). Checkpoints, all-reduce, optimizers and tests walk the table;
// nothing indexes tensors by magic numbers.
#ifndef GM_MODEL_TABLE_H
#define GM_MODEL_TABLE_H

#include <stddef.h>
#include <stdint.h>

// Which optimizer a parameter belongs to (the optimizer split of each preset maps groups to
// optimizers). Activations use GM_GROUP_NONE.
typedef enum { GM_GROUP_NONE = 0, GM_GROUP_EMBED, GM_GROUP_HEAD, GM_GROUP_MATRIX, GM_GROUP_SCALAR } gm_group;

typedef enum {
    GM_INIT_NONE = 0,  // activations
    GM_INIT_NORMAL,    // N(0, a^2)
    GM_INIT_UNIFORM,   // U(-a, a)
    GM_INIT_CONST,     // element 0 = a, the others = b (zeros: a = b = 0)
} gm_init_kind;

typedef struct {
    char name[48];
    int ndim;
    int64_t shape[2];  // rows, cols (cols = 1 for vectors)
    size_t offset;     // in elements from the buffer's start
    size_t numel;
    gm_group group;
    gm_init_kind init;
    double init_a, init_b;
} gm_view;

typedef struct {
    gm_view *v;
    int n, cap;
    size_t total;  // elements of the buffer, alignment padding included
    size_t count;  // elements of the views (the parameter count)
    int failed;    // an add failed (message in gm_error()); builders check once at the end
} gm_table;

// Views start on 16-element boundaries (64 bytes in fp32) for SIMD and coalesced GPU access;
// the padding is zero and harmless to whole-buffer operations.
enum { GM_TABLE_ALIGN = 16 };

void gm_table_init(gm_table *t);
void gm_table_free(gm_table *t);
// Append a view; returns its index, or -1 (gm_fail) when out of memory or the name is taken.
int gm_table_add(gm_table *t, const char *name, int64_t rows, int64_t cols, gm_group group, gm_init_kind init, double a,
                 double b);
// Index of the view called `name`, -1 when absent.
int gm_table_find(const gm_table *t, const char *name);
// Index of the view holding element `at` of the buffer, -1 when it is alignment padding.
int gm_table_locate(const gm_table *t, size_t at);

#endif
