// Shared fixtures of the orthogonalizer suites: test matrices and the scalar-map prediction of
// what Newton-Schulz does to each singular value.
#ifndef GM_VERIFY_ORTHO_FIXTURES_H
#define GM_VERIFY_ORTHO_FIXTURES_H

#include <stdint.h>

#include "optim/ns_coeffs.h"

// G (rows, cols) with iid N(0, 1) entries (Philox stream `seed`), as double and float.
void th_gauss_f64(double *G, int rows, int cols, uint64_t seed);
void th_gauss_f32(float *G, int rows, int cols, uint64_t seed);
// G (rows, cols) = U diag(s) V^T with k = min(rows, cols) prescribed singular values s and random
// orthonormal U (rows, k), V (cols, k) (Householder QR of Gaussian matrices).
void th_with_spectrum(double *G, int rows, int cols, const double *s, uint64_t seed);
void th_to_f32(const double *x, float *y, int n);
void th_to_f64(const float *x, double *y, int n);

// What NS (set, steps) does to a matrix whose singular values are s (k, any order), normalized
// by norm_scale * ||G||_F + norm_eps with ||G||_F = sqrt(sum s^2):
//   pred[i] = |map(x_i)|, the singular values of the exact-arithmetic output;
//   amp[i]  = first-order sensitivity of pred[i] to the rounding errors of a run: the sum over
//             the roundings (the normalized input, then A, B and the new X of each step) of the
//             size of the error each injects into this singular value, ||X_k||_2 * ptilde_k, times
//             the slopes |p_j'| of the later steps along this value's trajectory. ptilde_k is the
//             polynomial with absolute coefficients at ||X_k||_2 (the classical bound for the
//             error of evaluating a polynomial, Higham, "Accuracy and Stability of Numerical
//             Algorithms", ch. 5). A run whose products err by a relative e (in 2-norm) moves
//             singular value i by about e * amp[i].
void th_ns_predict(const gm_ns_coeffs *set, int steps, const double *s, int k, double *pred, double *amp);

// The same for Gram NS (gm_gram_ns_*, a non-square input) with restarts before the iterations in
// the bit mask `restarts`: pred as above (Gram NS is NS in exact arithmetic); amp the first-order
// sensitivity of singular value i to the roundings of the run, the sum over every product P = A B
// of the Gram iteration (and its rounding) of (||A||_2 ||B||_2 + ||P||_2) times the derivative of
// the output value with respect to that product's value along this value's path. R's errors are
// absolute, about eps ||R||_2, so small singular values (R's eigenvalue s^2) get large amp: the
// reason for the restarts.
void th_gram_predict(const gm_ns_coeffs *set, int steps, unsigned restarts, const double *s, int k, double *pred,
                     double *amp);

// Largest |a_i - b_i| after sorting both (k values each); sorting does not increase this distance,
// so it bounds the pairing of measured with predicted singular values.
double th_sorted_maxdiff(const double *a, const double *b, int k);
// One fp32 run of the speedrun's quintic, 5 steps, on G (rows, cols); Criterion-asserts that its
// singular values are those the scalar map predicts from G's fp64 SVD, within sqrt(n) eps32 amp.
void th_check_quintic_band_f32(const float *G, int rows, int cols, const char *label);

double th_max(const double *x, int k);
double th_min(const double *x, int k);

#endif
