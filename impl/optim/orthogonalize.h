// Orthogonalizers for Muon: replace an update matrix G (rows, cols) by (an approximation of) its
// polar factor Q = U V^T, where G = U S V^T is the thin SVD.
//   svd            : Q from LAPACK's SVD (the reference).
//   newton-schulz  : an odd matrix polynomial iteration (coefficient set, steps) that maps each
//                    singular value s of the normalized G through a scalar map, leaving U, V alone.
// Rank-deficient G: singular values at (or numerically at) zero stay zero in both, so the result
// is the partial isometry U_r V_r^T over the nonzero singular values (NS cannot do otherwise, and
// the SVD path follows it: a zero update stays a zero update). Non-finite input is refused.
#ifndef GM_OPTIM_ORTHOGONALIZE_H
#define GM_OPTIM_ORTHOGONALIZE_H

#include "base/real.h"
#include "optim/ns_coeffs.h"

typedef enum { GM_ORTHO_SVD, GM_ORTHO_NS } gm_ortho_method;

// Which tensor the NS normalizer's Frobenius norm is taken of, when bf16 is emulated:
// OF_G: the input as given (records #3, #4: X = bf16(G) / (||G|| + eps));
// OF_X: the input rounded to the working precision (records #8 onward: X = bf16(G), X / (||X|| + eps)).
// Identical without bf16.
typedef enum { GM_NS_NORM_OF_G, GM_NS_NORM_OF_X } gm_ns_norm_src;

// How the matrix products are computed: OpenBLAS, or plain loops (the reference tests compare to).
typedef enum { GM_MM_BLAS, GM_MM_NAIVE } gm_mm_impl;

typedef struct {
    gm_ortho_method method;
    const gm_ns_coeffs *coeffs;  // NS: coefficient set (gm_ns_coeffs_find("quintic"))
    int steps;                   // NS: iterations, >= 1
    int bf16;                    // NS: round the normalized input and every matmul output to bf16
                                 //     (as bf16 GEMMs with fp32 accumulation do)
    gm_ns_norm_src norm_src;     // NS: see above
    // NS, optional (NULL in training): called after iteration k = 1..steps with the iterate as a
    // (rows, cols) fp64 matrix, so the harness gets every step count from one run.
    void (*observe)(void *ctx, int k, const double *X, int rows, int cols);
    void *observe_ctx;
} gm_ortho;

// The entry Muon calls: out (rows, cols) = orthogonalize(G (rows, cols)) in gm_real (fp32, or fp64
// in the -DGM_FP64 build). out may not alias G. Returns -1 with gm_fail on bad arguments,
// non-finite input or out of memory; out is then untouched.
int gm_orthogonalize(const gm_ortho *cfg, const gm_real *G, gm_real *out, int rows, int cols);

// Precision-explicit forms (the harness compares them). cfg->method is ignored: these are NS.
int gm_ns_f64(const gm_ortho *cfg, const double *G, double *out, int rows, int cols, gm_mm_impl mm);
int gm_ns_f32(const gm_ortho *cfg, const float *G, float *out, int rows, int cols, gm_mm_impl mm);

// Thin SVD, A (m, n) = U (m, k) diag(s) (k) Vt (k, n), k = min(m, n), s descending (LAPACK gesdd).
int gm_svd_f64(const double *A, int m, int n, double *U, double *s, double *Vt);
int gm_svd_f32(const float *A, int m, int n, float *U, float *s, float *Vt);
// Singular values only (k = min(m, n), descending).
int gm_singular_values_f64(const double *A, int m, int n, double *s);
// Polar factor Q (m, n) = U_r Vt_r, over singular values above max(m, n) * eps * s_max.
int gm_svd_polar_f64(const double *G, double *Q, int rows, int cols);
int gm_svd_polar_f32(const float *G, float *Q, int rows, int cols);

// Shared argument check: rows, cols >= 1, every entry finite. `is_f64` says G is double, else
// float. `who` prefixes the message.
int gm_ortho_check_input(const char *who, const void *G, int is_f64, int rows, int cols);

#endif
