// What an optimizer sees of a parameter: a name and a (rows, cols) matrix at an offset into the
// flat parameter and gradient buffers (vectors and scalars are rows = 1). Optimizers never learn
// what the model is; the training loop hands each one the views of its parameter group.
#ifndef GM_OPTIM_VIEW_H
#define GM_OPTIM_VIEW_H

#include <stddef.h>

typedef struct {
    const char *name;
    size_t offset;  // elements from the start of the flat buffers
    int rows, cols;
} gm_opt_view;

static inline size_t gm_view_numel(const gm_opt_view *v) { return (size_t)v->rows * (size_t)v->cols; }

#endif
