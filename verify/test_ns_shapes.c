// Every matrix shape Muon sees at full scale (refdata/records/PRESETS.md): attention 768x768
// (also the q, k, v chunks record #4 cuts from the fused 2304x768 c_attn), MLP c_fc 3072x768 and
// c_proj 768x3072, and the fused c_attn 2304x768 that muon-v1 (#3) orthogonalizes whole.
// (Embeddings, value embeddings and the head are Adam's.) One fp32 run of the speedrun's quintic,
// 5 steps, per shape, held to the band its scalar map predicts from the input's fp64 SVD; the
// full sweep over sets, precisions and steps is bench/ns_report's.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "optim/orthogonalize.h"
#include "ortho_fixtures.h"

static void check_full_shape(int m, int n) {
    const int k = m < n ? m : n, steps = 5;
    const size_t mn = (size_t)m * n;
    const gm_ns_coeffs *set = gm_ns_coeffs_find("quintic");
    float *G = malloc(mn * 4), *X = malloc(mn * 4);
    double *Gd = malloc(mn * 8), *s = malloc(k * 8), *so = malloc(k * 8), *pred = malloc(k * 8), *amp = malloc(k * 8);
    cr_assert(G && X && Gd && s && so && pred && amp);
    th_gauss_f32(G, m, n, 2024 + m);
    gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = set, .steps = steps, .bf16 = 0, .norm_src = GM_NS_NORM_OF_X};
    cr_assert_eq(gm_ns_f32(&cfg, G, X, m, n, GM_MM_BLAS), 0, "%s", gm_error());
    th_to_f64(G, Gd, (int)mn);
    cr_assert_eq(gm_singular_values_f64(Gd, m, n, s), 0, "%s", gm_error());
    th_ns_predict(set, steps, s, k, pred, amp);
    th_to_f64(X, Gd, (int)mn);
    cr_assert_eq(gm_singular_values_f64(Gd, m, n, so), 0, "%s", gm_error());
    double d = th_sorted_maxdiff(so, pred, k);
    double tol = sqrt((double)(m > n ? m : n)) * 1.1920928955078125e-07 * th_max(amp, k);
    cr_expect_leq(d, tol, "quintic fp32 %dx%d: singular values [%.5f, %.5f] off the predicted [%.5f, %.5f] by %.3g > %.3g",
                  m, n, th_min(so, k), th_max(so, k), th_min(pred, k), th_max(pred, k), d, tol);
    free(G), free(X), free(Gd), free(s), free(so), free(pred), free(amp);
}

Test(ns_shapes, attention_768x768) { check_full_shape(768, 768); }
Test(ns_shapes, mlp_c_fc_3072x768) { check_full_shape(3072, 768); }
Test(ns_shapes, mlp_c_proj_768x3072) { check_full_shape(768, 3072); }
Test(ns_shapes, fused_c_attn_2304x768) { check_full_shape(2304, 768); }
