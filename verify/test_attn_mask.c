// Block-mask attention (document masking + sliding window in blocks) against the dense
// explicit-mask reference: documents shorter than a block, boundaries exactly at block edges,
// windows of 1 block and more, a sequence not a multiple of the block.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/attn_mask.h"
#include "backend/cpu/cpu.h"
#include "base/rng.h"
#include "helpers.h"

// EOT positions per case (row 0; row 1 gets random ones), -1 terminated.
typedef struct {
    const char *what;
    int T, block, window;
    int use_docs;
    int eot[12];
} mask_case;

static void run_case(const mask_case *c) {
    const gm_backend *be = gm_backend_cpu();
    int B = 2, T = c->T, NH = 2, HD = 8;
    size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
    gm_real *q = malloc(sizeof(gm_real) * n), *k = malloc(sizeof(gm_real) * n), *v = malloc(sizeof(gm_real) * n);
    gm_real *dout = malloc(sizeof(gm_real) * n);
    for (size_t i = 0; i < n; i++)
        q[i] = gm_rng_normal(7, 1, i), k[i] = gm_rng_normal(7, 2, i), v[i] = gm_rng_normal(7, 3, i),
        dout[i] = gm_rng_normal(7, 4, i);
    int32_t *ids = calloc((size_t)B * T, sizeof(int32_t)), *doc = malloc(sizeof(int32_t) * B * T);
    for (int i = 0; c->eot[i] >= 0; i++) ids[c->eot[i]] = 1;                         // EOT id 1 in row 0
    for (int t = 0; t < T; t++) ids[T + t] = gm_rng_u32(7, 5, t) % 23 == 0 ? 1 : 2;  // row 1: random
    gm_doc_ids(doc, ids, B, T, 1);
    gm_attn_mask m = {c->use_docs ? doc : NULL, c->block, c->window};
    uint8_t *dense = malloc((size_t)B * T * T);
    gm_cpu_attn_dense_mask(dense, B, T, m);
    double scale = 1.0 / sqrt(HD);
    gm_real *o1 = calloc(n, sizeof(gm_real)), *o2 = calloc(n, sizeof(gm_real));
    gm_real *l1 = calloc(nl, sizeof(gm_real)), *l2 = calloc(nl, sizeof(gm_real));
    gm_real *g1 = calloc(3 * n, sizeof(gm_real)), *g2 = calloc(3 * n, sizeof(gm_real));
    be->attn_fwd(be, gm_as_act(o1), l1, gm_as_act(q), gm_as_act(k), gm_as_act(v), B, T, NH, HD, scale, m);
    gm_cpu_attn_fwd_dense(o2, l2, q, k, v, B, T, NH, HD, scale, dense);
    be->attn_bwd(be, gm_as_act(g1), gm_as_act(g1 + n), gm_as_act(g1 + 2 * n), GM_GRAD_ADD, gm_as_act(dout), gm_as_act(q), gm_as_act(k), gm_as_act(v), gm_as_act(o1), l1, B, T, NH, HD, scale, m);
    gm_cpu_attn_bwd_dense(g2, g2 + n, g2 + 2 * n, dout, q, k, v, B, T, NH, HD, scale, dense);
    double tol = 200 * GM_REAL_EPS;
    cr_expect(th_rel_err(o1, o2, n) < tol, "%s: out %.3g", c->what, th_rel_err(o1, o2, n));
    cr_expect(th_rel_err(l1, l2, nl) < tol, "%s: lse", c->what);
    const char *names[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++)
        cr_expect(th_rel_err(g1 + g * n, g2 + g * n, n) < tol, "%s: %s %.3g", c->what, names[g],
                  th_rel_err(g1 + g * n, g2 + g * n, n));
    free(q), free(k), free(v), free(dout), free(ids), free(doc), free(dense);
    free(o1), free(o2), free(l1), free(l2), free(g1), free(g2);
}

Test(attn_mask, block_mask_matches_dense_reference) {
    const mask_case cases[] = {
        {"causal only", 40, 8, 0, 0, {-1}},
        {"window 1 block, no docs", 40, 8, 1, 0, {-1}},
        {"window 3 blocks, T not a multiple of the block", 45, 8, 3, 0, {-1}},
        {"docs at block edges", 48, 8, 0, 1, {0, 8, 16, 24, 40, -1}},
        {"docs one token before/after edges", 48, 8, 2, 1, {7, 9, 15, 17, 31, 33, -1}},
        {"docs shorter than a block", 48, 8, 4, 1, {0, 2, 3, 5, 11, 12, 13, 30, 31, -1}},
        {"one document spanning everything, window 2", 64, 16, 2, 1, {0, -1}},
        {"no EOT at all (doc 0), window 2", 64, 16, 2, 1, {-1}},
        {"records' block size 128, window 1", 300, 128, 1, 1, {0, 100, 128, 129, 255, 256, -1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

// The rule itself, on hand-made positions (independent of both kernels).
Test(attn_mask, token_rule_by_hand) {
    int32_t doc[6] = {1, 1, 2, 2, 2, 3};
    gm_attn_mask m = {doc, 2, 2};
    cr_expect(gm_attn_allowed(&m, 1, 0, doc[1], doc[0]));   // same doc, same block
    cr_expect(!gm_attn_allowed(&m, 0, 1, doc[0], doc[1]));  // future
    cr_expect(!gm_attn_allowed(&m, 2, 1, doc[2], doc[1]));  // other document
    cr_expect(gm_attn_allowed(&m, 4, 2, doc[4], doc[2]));   // block 2 sees block 1 (window 2)
    gm_attn_mask w1 = {NULL, 2, 1};
    cr_expect(!gm_attn_allowed(&w1, 2, 1, 0, 0));  // window 1: only its own block
    cr_expect(gm_attn_allowed(&w1, 3, 2, 0, 0));
    int32_t ids[6] = {5, 0, 5, 5, 0, 0}, got[6];
    gm_doc_ids(got, ids, 1, 6, 0);
    const int32_t want[6] = {0, 1, 1, 1, 2, 3};  // an EOT opens its document
    cr_expect(memcmp(got, want, sizeof want) == 0);
}

// The window clause as per-row bounds (attn_mask.h: what the tensor-core kernels test instead of
// dividing per pair) against the rule itself, every causal pair of every position up to 700, for
// block sizes 1, 3, 64, 128 and windows 0 (none), 1, 2, 7, 14 and one wider than the sequence.
Test(attn_mask, window_bounds_equal_the_rule) {
    const int blocks[] = {1, 3, 64, 128}, windows[] = {0, 1, 2, 7, 14, 1000000000};
    long long checked = 0;
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
            const gm_attn_mask m = {NULL, blocks[b], windows[w]};
            for (int q = 0; q < 700; q++) {
                const long long lo = gm_attn_first_key(&m, q);
                for (int k = 0; k <= q; k++, checked++) {
                    const int rule = gm_attn_allowed(&m, q, k, 0, 0);
                    if (rule != (k >= lo) || rule != (q < gm_attn_query_end(&m, k)))
                        cr_assert_fail("block %d window %d: q %d k %d: rule %d, first key %lld, query end %lld",
                                       blocks[b], windows[w], q, k, rule, lo, gm_attn_query_end(&m, k));
                }
            }
        }
    cr_expect_gt(checked, 5000000);
}

// bench/attn_tile_count.py, the count behind the wgmma kernels' warpgroup spans (attention_mma_fwd.cuh's
// fwd_wg_span): its figures on a case counted by hand, its spans and unmasked tiles against the rule
// above pair by pair, a bad flag (verify/attn_tile_count_check.py).
Test(attn_tile_count, by_hand) { th_py_check("verify/attn_tile_count_check.py", "by_hand"); }
Test(attn_tile_count, spans_against_the_rule) {
    th_py_check("verify/attn_tile_count_check.py", "spans_against_the_rule");
}
Test(attn_tile_count, bad_flag) { th_py_check("verify/attn_tile_count_check.py", "bad_flag"); }
