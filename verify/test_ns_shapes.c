// Every matrix shape Muon sees at full scale (refdata/records/PRESETS.md): attention 768x768
// (also the q, k, v chunks record #4 cuts from the fused 2304x768 c_attn), MLP c_fc 3072x768 and
// c_proj 768x3072, and the fused c_attn 2304x768 that muon-v1 (#3) orthogonalizes whole.
// (Embeddings, value embeddings and the head are Adam's.) One fp32 run of the speedrun's quintic,
// 5 steps, per shape, held to the band its scalar map predicts from the input's fp64 SVD; the
// full sweep over sets, precisions and steps is bench/ns_report's.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "ortho_fixtures.h"

static void check_full_shape(int m, int n) {
    float *G = malloc((size_t)m * n * 4);
    cr_assert(G);
    th_gauss_f32(G, m, n, 2024 + m);
    char label[64];
    snprintf(label, sizeof label, "gaussian %dx%d", m, n);
    th_check_quintic_band_f32(G, m, n, label);
    free(G);
}

Test(ns_shapes, attention_768x768) { check_full_shape(768, 768); }
Test(ns_shapes, mlp_c_fc_3072x768) { check_full_shape(3072, 768); }
Test(ns_shapes, mlp_c_proj_768x3072) { check_full_shape(768, 3072); }
Test(ns_shapes, fused_c_attn_2304x768) { check_full_shape(2304, 768); }
