// How far an orthogonalizer's output Q (rows, cols) is from the polar factor of its input G: the
// figures of the NS-vs-SVD harness (tests and bench/ns_report), all in fp64.
#ifndef GM_OPTIM_ORTHO_STATS_H
#define GM_OPTIM_ORTHO_STATS_H

// The reference, computed once per input G (fp64 SVD).
typedef struct {
    int rows, cols, k;  // k = min(rows, cols)
    double *P;          // (rows, cols) polar factor U V^T (gm_svd_polar_f64)
    double *s;          // (k) singular values of G, descending
    double nuclear;     // ||G||_* = sum(s)
} gm_polar_ref;

typedef struct {
    double polar_err;   // ||Q - U V^T||_F / ||U V^T||_F
    double smin, smax;  // extreme singular values of Q
    double orth_err;    // ||Q Q^T - I||_2 on the small side = max_i |s_i(Q)^2 - 1|
    double dual_gap;    // (||G||_* - <G, Q>) / ||G||_*: how much of the steepest-descent value Q loses
    double bound_viol;  // max(||Q||_2 - 1, 0): how far Q leaves the spectral-norm unit ball
    double fro;         // ||Q||_F
    // Extreme Euclidean norms of Q's rows and of its columns: NorMuon (backend.h `normuon`) makes
    // one of the two families equal, which an orthogonal Q need not have.
    double row_min, row_max, col_min, col_max;
} gm_ortho_stats;

int gm_polar_ref_init(gm_polar_ref *ref, const double *G, int rows, int cols);
void gm_polar_ref_free(gm_polar_ref *ref);
// Q (rows, cols) in fp64. The singular values of Q come from the eigenvalues of its small Gram
// matrix (dsyrk + dsyevd: a few times cheaper than an SVD at 768 x 3072); their absolute error is
// about eps * ||Q||_2^2, far below the bands measured here (s(Q) in [0.1, 2]).
int gm_ortho_stats_f64(const gm_polar_ref *ref, const double *G, const double *Q, gm_ortho_stats *st);

#endif
