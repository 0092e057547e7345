// The CPU backend's dense linear algebra for Muon's orthogonalizers (gm_ortho in backend.h), in
// explicit precisions: Newton-Schulz (fp64, and fp32 with optional bf16 emulation) and the SVD
// polar factor (LAPACK gesdd). The backend's `orthogonalize` kernel runs the gm_real form; the
// NS-vs-SVD harness (tests, bench/ns_report) compares the precisions and matmul implementations.
#ifndef GM_BACKEND_CPU_LINALG_H
#define GM_BACKEND_CPU_LINALG_H

#include "backend/backend.h"

// How the matrix products are computed: OpenBLAS, or plain loops (the reference tests compare to).
typedef enum { GM_MM_BLAS, GM_MM_NAIVE } gm_mm_impl;

// Newton-Schulz: out (rows, cols) from G; cfg->method is ignored. out may not alias G. -1 with
// gm_fail on bad arguments, non-finite input or out of memory (out is then untouched).
int gm_ns_f64(const gm_ortho *cfg, const double *G, double *out, int rows, int cols, gm_mm_impl mm);
int gm_ns_f32(const gm_ortho *cfg, const float *G, float *out, int rows, int cols, gm_mm_impl mm);
// Gram Newton-Schulz (gram_newton_schulz.inc), the same contract; cfg->gram_restarts applies.
int gm_gram_ns_f64(const gm_ortho *cfg, const double *G, double *out, int rows, int cols, gm_mm_impl mm);
int gm_gram_ns_f32(const gm_ortho *cfg, const float *G, float *out, int rows, int cols, gm_mm_impl mm);

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
