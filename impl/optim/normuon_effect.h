// NorMuon's effect on an orthogonalized update: the figures of bench/ns_report's NorMuon section
// (and verify/test_normuon_effect.c). NorMuon (record #43, backend.h `normuon`) divides each line
// of the update (a row or a column, gm_muon_normuon_by_row) by the root of its second-moment EMA
// and rescales the whole matrix back to its Frobenius norm; a per-line scaling D O of an orthogonal
// O is orthogonal only when D is a multiple of the identity, so the final update is by design not
// orthogonal.
#ifndef GM_OPTIM_NORMUON_EFFECT_H
#define GM_OPTIM_NORMUON_EFFECT_H

#include "optim/ortho_stats.h"

// O[0..T-1]: T updates (rows, cols), fp64, run one after another through the CPU backend's
// `normuon` kernel (working precision gm_real) from a zero second-moment state, with one second
// moment per row (by_row) or per column and EMA coefficient beta2. before = the stats of O[T-1]
// and after = those of NorMuon(O[T-1]), both against ref (the polar factor of G, the matrix O[T-1]
// was made from). N, when not NULL, receives NorMuon(O[T-1]) (rows, cols) in fp64.
int gm_normuon_effect(const gm_polar_ref *ref, const double *G, const double *const *O, int T, int by_row,
                      double beta2, gm_ortho_stats *before, gm_ortho_stats *after, double *N);

#endif
