// The naive CUDA attention kernels (attention_naive.cu: forward, and the backward that recomputes
// probabilities from the lse), asked for by name, against the CPU backend at fp32 bars, with
// causal, sliding-window (whole blocks, block sizes above and below the kernel's 32-row tiles) and
// document masks, head dims from 2 to 128, sequence lengths that are not multiples of anything,
// and a second backward run that must repeat bit for bit. They are the GPU-side reference of the
// tensor-core kernels (test_cuda_attention_mma.c). Skipped where no GPU is present.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/act_io.h"
#include "backend/attn_mask.h"
#include "backend/cpu/cpu.h"
#include "backend/cuda/attention.h"
#include "backend/cuda/cuda.h"
#include "base/error.h"
#include "cuda_check.h"

static gm_real *dup(const gm_real *x, size_t n) {
    gm_real *y = malloc(sizeof(gm_real) * n);
    cr_assert(y);
    memcpy(y, x, sizeof(gm_real) * n);
    return y;
}

// The backward runs on the CPU forward's out and lse on both sides (out rounded to the activation
// element first, and the CPU's backward reading that same rounded copy), so each comparison sees
// one kernel's error. out, dq, dk, dv round once to the element at their store: cc_act_tol of the
// fp32 bar (lse is fp32).
static void run_case(cc_env *e, const cc_attn_case *c) {
    const gm_backend *cpu = e->cpu, *gpu = e->gpu;
    int B = 2, T = c->T, NH = c->NH, HD = c->HD;
    size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
    gm_real *q = cc_randn(e, n, c->qscale), *k = cc_randn(e, n, 1.0), *v = cc_randn(e, n, 1.0);
    gm_real *dout = cc_randn(e, n, 1.0), *g0 = cc_randn(e, 3 * n, 0.5);  // prior dq | dk | dv
    gm_actval *gq = cc_act_to_gpu(e, q, n), *gk = cc_act_to_gpu(e, k, n), *gv = cc_act_to_gpu(e, v, n);
    gm_actval *gdout = cc_act_to_gpu(e, dout, n), *gg = cc_act_to_gpu(e, g0, 3 * n), *gout = cc_act_poisoned(e, n);
    gm_actval *gdq = gg, *gdk = gm_act_at(gpu, gg, n), *gdv = gm_act_at(gpu, gg, 2 * n);
    int32_t *doc = cc_attn_docs(e, c, B);
    double scale = 1.0 / sqrt(HD);

    gm_attn_mask cm = {c->use_docs ? doc : NULL, c->block, c->window};
    gm_real *out = malloc(sizeof(gm_real) * n), *lse = malloc(sizeof(gm_real) * nl), *g = dup(g0, 3 * n);
    cpu->attn_fwd(cpu, gm_as_act(out), lse, gm_as_act(q), gm_as_act(k), gm_as_act(v), B, T, NH, HD, scale, cm);
    gm_real *bout = dup(out, n);  // the backward's out: rounded to the element by its upload
    gm_actval *gbout = cc_act_to_gpu(e, bout, n);
    cpu->attn_bwd(cpu, gm_as_act(g), gm_as_act(g + n), gm_as_act(g + 2 * n), GM_GRAD_ADD, gm_as_act(dout), gm_as_act(q),
                  gm_as_act(k), gm_as_act(v), gm_as_act(bout), lse, B, T, NH, HD, scale, cm);

    int32_t *gdoc = cc_to_gpu(e, doc, sizeof(int32_t) * B * T);
    gm_real *glse = cc_poisoned(e, nl), *gblse = cc_to_gpu(e, lse, sizeof(gm_real) * nl);
    gm_attn_mask gm = {c->use_docs ? gdoc : NULL, c->block, c->window};
    gm_cuda_attn_fwd_with(GM_CUDA_ATTN_NAIVE, gpu, gout, glse, gq, gk, gv, B, T, NH, HD, scale, gm);
    gm_cuda_attn_bwd_with(GM_CUDA_ATTN_NAIVE, gpu, gdq, gdk, gdv, GM_GRAD_ADD, gdout, gq, gk, gv, gbout, gblse, B, T,
                          NH, HD, scale, gm);

    char what[200];
    const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
    const void *gpus[5] = {gout, glse, gdq, gdk, gdv};
    const gm_real *cpus[5] = {out, lse, g, g + n, g + 2 * n};
    const double act_tol = cc_act_tol(e, CC_TOL_ATTN);
    for (int t = 0; t < 5; t++) {
        snprintf(what, sizeof what, "%s (T=%d NH=%d HD=%d block=%d window=%d docs=%d): %s", c->what, T, NH, HD,
                 c->block, c->window, c->use_docs, names[t]);
        if (t == 1)
            cc_expect_close(e, what, gpus[t], cpus[t], nl, CC_TOL_ATTN);
        else
            cc_act_expect_close(e, what, gpus[t], cpus[t], n, act_tol);
    }
    // The backward again on the same inputs: every output row has one owner summing in a fixed
    // order, so the bits repeat.
    gm_real *first = cc_act_from_gpu(e, gg, 3 * n);
    cr_assert_eq(gm_act_upload(gpu, gg, g0, 3 * n), 0, "%s", gm_error());
    gm_cuda_attn_bwd_with(GM_CUDA_ATTN_NAIVE, gpu, gdq, gdk, gdv, GM_GRAD_ADD, gdout, gq, gk, gv, gbout, gblse, B, T,
                          NH, HD, scale, gm);
    snprintf(what, sizeof what, "%s: backward run twice", c->what);
    cc_act_expect_equal(e, what, gg, first, 3 * n);

    gpu->free(gpu, gdoc), gpu->free(gpu, gq), gpu->free(gpu, gk), gpu->free(gpu, gv), gpu->free(gpu, gdout);
    gpu->free(gpu, gout), gpu->free(gpu, glse), gpu->free(gpu, gg), gpu->free(gpu, gbout), gpu->free(gpu, gblse);
    free(q), free(k), free(v), free(dout), free(g0), free(doc), free(out), free(lse), free(g), free(first), free(bout);
}

static void run_cases(const cc_attn_case *cases, size_t count) {
    cc_env e = cc_begin();
    int ran = 0;
    for (size_t i = 0; i < count; i++) {
        const cc_attn_case *c = &cases[i];
        if (!cc_attn_case_fits(c)) continue;
        run_case(&e, c);
        ran++;
    }
    cc_expect_some_ran(ran);
}

Test(cuda_attn, causal_and_window) {
    CC_REQUIRE_GPU();
    const cc_attn_case cases[] = {
        {"causal only", 40, 2, 8, 8, 0, 0, 1.0, {-1}},
        {"T = 1", 1, 2, 32, 128, 0, 0, 1.0, {-1}},
        {"head dim 2", 33, 2, 2, 4, 0, 0, 1.0, {-1}},
        {"window 1 block of 8", 40, 2, 8, 8, 1, 0, 1.0, {-1}},
        {"window 3 blocks, T not a multiple of the block", 45, 2, 8, 8, 3, 0, 1.0, {-1}},
        {"head dim 128, several key tiles, peaky softmax", 257, 3, 128, 128, 0, 0, 3.0, {-1}},
        {"head dim 48 (not a multiple of 32)", 77, 2, 48, 16, 2, 0, 1.0, {-1}},
        {"block 5 (below the tile size), window 3", 200, 2, 16, 5, 3, 0, 1.0, {-1}},
        {"block 64, window 3, many skipped tiles", 1000, 2, 64, 64, 3, 0, 1.0, {-1}},
    };
    run_cases(cases, sizeof cases / sizeof cases[0]);
}

Test(cuda_attn, document_masks) {
    CC_REQUIRE_GPU();
    const cc_attn_case cases[] = {
        {"docs at block edges", 48, 2, 8, 8, 0, 1, 1.0, {0, 8, 16, 24, 40, -1}},
        {"docs one token before/after edges, window 2", 48, 2, 8, 8, 2, 1, 1.0, {7, 9, 15, 17, 31, 33, -1}},
        {"docs shorter than a block, window 4", 48, 2, 8, 8, 4, 1, 1.0, {0, 2, 3, 5, 11, 12, 13, 30, 31, -1}},
        {"no EOT at all (doc 0), window 2", 64, 2, 16, 16, 2, 1, 1.0, {-1}},
        {"records' block 128, window 1", 300, 2, 64, 128, 1, 1, 1.0, {0, 100, 128, 129, 255, 256, -1}},
        {"block 128, no window, docs", 700, 2, 64, 128, 0, 1, 2.0, {0, 3, 200, 511, 512, 600, -1}},
        {"head dim 48, block 16, window 2, docs", 77, 2, 48, 16, 2, 1, 1.0, {10, 40, -1}},
        {"block 5, window 3, docs", 200, 2, 16, 5, 3, 1, 1.0, {50, 51, 120, -1}},
        {"block 64, window 3, docs over tile edges", 1000, 2, 64, 64, 3, 1, 1.0, {0, 5, 300, 301, 640, 999, -1}},
    };
    run_cases(cases, sizeof cases / sizeof cases[0]);
}
