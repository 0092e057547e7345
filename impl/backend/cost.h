// What each kernel of backend.h costs, from its arguments alone: FLOPs, bytes moved at the
// interface (elements read plus written, a read-modify-write counted twice, one pass each:
// activations at the priced backend's element size, act_bytes; everything else gm_real)
// and a short shape text. One function per entry of GM_BACKEND_KERNELS (gm_cost_<name>, same
// parameters), so the timing backend (backend/timing) prices every call the model and the
// optimizers make, and a new kernel cannot be added without its formula (a missing one is a link
// error). Nothing here reads backend memory: where a count depends on data (the document mask),
// the formula says what it assumes.
#ifndef GM_BACKEND_COST_H
#define GM_BACKEND_COST_H

#include "backend/backend.h"

// A library GEMM in BLAS's column-major terms: C (m, n) = op(A) op(B), op(A) (m, k), op(B) (k, n).
typedef struct {
    int transa, transb, m, n, k;
    int reads_c;  // beta = 1: C is added into (read, then written)
} gm_gemm_shape;

typedef struct {
    double act_bytes;  // in: bytes of the priced backend's activation element (be->act_size); 0: gm_real's
    double flops;      // multiply-adds count 2; transcendentals count 1
    double bytes;
    char shape[64];
    // The library GEMMs the call amounts to (a matmul: one forward, one per wanted gradient
    // backward), as the CUDA backend issues them (cuda/matmul.cu), so a report can hold the call
    // to the library's own time at those shapes; 0 for every other kernel.
    int n_gemm;
    gm_gemm_shape gemm[2];
} gm_kernel_cost;

#define GM_COST_PROTO(name, params, args) void gm_cost_##name(gm_kernel_cost *c, GM_UNPACK params);
GM_BACKEND_KERNELS(GM_COST_PROTO)
#undef GM_COST_PROTO

// Newton-Schulz FLOPs of one (rows, cols) matrix, X (m, n) with m <= n, per iteration: the Gram
// matrix by SYRK (m^2 n multiply-adds), B = b A + c A A (2 m^3), X' = a X + B X (2 m^2 n).
double gm_cost_ns_flops(int rows, int cols, int steps);
// (q, k) pairs a causal attention of T tokens admits with a window of w blocks of `block` tokens
// (w <= 0: none), per (batch, head); document boundaries are not counted.
double gm_cost_attn_pairs(int T, int block, int window_blocks);

#endif
