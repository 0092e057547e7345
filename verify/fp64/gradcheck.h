// Central-difference gradient checks in fp64 (this folder builds with gm_real = double).
// The function checked is L = sum_i w_i * out_i for fixed random weights w, so one backward
// with dout = w gives the whole gradient of L; each input element is perturbed by +-h and +-2h (fourth-order stencil).
#ifndef GM_VERIFY_FP64_GRADCHECK_H
#define GM_VERIFY_FP64_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "base/real.h"

typedef struct {
    const char *name;
    gm_real *x;   // the input (perturbed in place, restored)
    gm_real *dx;  // its gradient buffer, filled by the backward (which must ADD into it)
    size_t n;
} gc_input;

typedef struct {
    void *ctx;
    size_t nout;
    void (*fwd)(void *ctx, gm_real *out);         // out (nout) from the current inputs
    void (*bwd)(void *ctx, const gm_real *dout);  // dx += dL/dx for dout = dL/dout
    // Optional (NULL: smooth everywhere). For a piecewise-smooth function (ReLU^2 has a jump in
    // its second derivative at 0), a fingerprint of the piece the last fwd evaluated in. A
    // difference quotient whose points straddle pieces has an O(h) error that says nothing about
    // the backward, so such elements are replaced by others.
    uint64_t (*piece)(void *ctx);
} gc_fn;

// Checks every input: up to `max_elems` elements per input (all when the input is smaller and
// smooth around every element),
// relative error ||g - g_fd|| / ||g_fd|| over them. The backward runs on gradient buffers
// pre-filled with random values, which are subtracted afterwards, so a kernel that overwrites
// instead of adding fails. Returns the largest relative error; names and errors are printed
// to stderr on failure by the caller's assert.
double gc_check(gc_fn fn, gc_input *in, int nin, size_t max_elems, uint64_t seed, double *per_input_err);

// Fill x (n) with normal(0, std) values from stream `stream`.
void gc_randn(gm_real *x, size_t n, double std, uint64_t seed, uint64_t stream);

#endif
