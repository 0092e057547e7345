// Newton-Schulz coefficient sets, carried as data. A set is a list of (a, b, c) triples, one per
// iteration, for the odd quintic p(x) = a x + b x^3 + c x^5 applied to the singular values of X
// (in matrix form X <- a X + (b A + c A^2) X with A = X X^T), plus the normalization that puts the
// input's singular values into [0, 1]: X = G / (norm_scale * ||G||_F + norm_eps).
#ifndef GM_OPTIM_NS_COEFFS_H
#define GM_OPTIM_NS_COEFFS_H

#include "backend/backend.h"  // the gm_ns_coeffs type: a kernel parameter

// The sets we carry, in a fixed order (for reports): quintic, cubic, you5, polar-express.
int gm_ns_coeffs_count(void);
const gm_ns_coeffs *gm_ns_coeffs_at(int i);
// Look a set up by name; NULL with gm_fail naming the unknown set (and the known ones).
const gm_ns_coeffs *gm_ns_coeffs_find(const char *name);
// The scalar map: x after `steps` iterations of the set's polynomials (x already normalized).
// Newton-Schulz acts on each singular value independently through this map (in exact arithmetic).
double gm_ns_scalar_map(const gm_ns_coeffs *set, int steps, double x);

#endif
