// The tensor-core attention (attention_mma.cu: bf16 mma.sync, head_dim 64 and 128; its forward
// also with 32 rows a warp; both passes on Hopper's wgmma, suite cuda_attn_wgmma), and cuDNN's
// fused attention on plain causal masks (attention_cudnn.cu, suite cuda_attn_cudnn, at the end),
// against the CPU backend and the naive GPU kernels (attention_naive.cu), over masks with
// documents, windows of 1 to many blocks, block sizes that do and do not divide the kernels' tiles,
// and sequence lengths that are not multiples of them; every run twice and bitwise equal (determinism); inputs
// rounded to bf16 on load (nearest even, bitwise); the dispatcher's choice; the refusal of other
// head dims. Skipped where no GPU is present. Passed on an H100 (2026-11-26, commit d81bddf,
// reports/gpu-h100/), also under compute-sanitizer memcheck and synccheck.
//
// Bars, LAPACK-style: a bound per element built from the unit roundoffs (u16 = 2^-8 for bf16,
// u32 = 2^-24 for fp32) and the reduction lengths, within a fixed factor BAR. The inputs q, k, v,
// dout are bf16 values (rounded on the host), so the only bf16 roundings left are the kernels':
// P (forward, dV) and dS (dQ, dK) as MMA operands, |delta| <= u16 each. To first order:
//   out_id  u16 sum_j P_ij |v_jd|              dv_jd  u16 sum_i P_ij |dout_id|
//   dq_id   u16 scale sum_j |dS_ij| |k_jd|     dk_jd  u16 scale sum_i |dS_ij| |q_id|
// and, for the fp32 arithmetic of both the kernel and its reference: score dot products of length
// HD (HD u32 a_ij, a_ij = scale sum_d |q_id k_jd| <= A), sums of up to K terms, exp and log: a
// relative f32 = 4 (HD A + K + 8) u32 on each magnitude above (the 4: two implementations, and
// tensor cores that truncate while accumulating), plus for dq and dk the fp32 error of dP - D,
// 2 HD u32 scale sum_j P_ij (sum_d |dout_id v_jd| + sum_d |dout_id out_id|) |k_jd| (and likewise
// for dk). lse has no bf16 term: f32 + 4 u32 |lse|. Gradients are added into prior values:
// 2 u32 |result| more. The magnitudes come from one exact (fp64) pass over the admitted pairs.
// A wrong fragment, stride or tile range gives errors of order one; a pair masked wrongly moves out
// by P_ij |v_j - out_i|, above these bounds wherever P_ij is above ~1 / 200.
//
// The mask itself is checked exactly by the counting cases: integer inputs with q . k = 0 for every
// pair (q on the first half of the head dims, k on the second), so every admitted pair has P = 1
// (the backward is handed lse = 0 and out = 0, hence D = 0), and every sum is of integers below
// 2^24: exact in fp32 in any order, on tensor cores too. Then out = (sum of admitted v) / count,
// lse = log(count), dv = sum of admitted dout, dq = scale sum dS k, dk = scale sum dS q with
// dS = dout . v (an integer <= HD, exact in bf16), all to within 4 u32 (a few final roundings;
// lse 8 u32, for log2f's 1 ulp): one pair admitted or refused wrongly moves some sum by a whole
// unit. (The naive kernels scale every term of dq and dk before summing: (K + 4) u32 there, K the
// longest sum; cuDNN rounds the scaled dS to bf16: u16 more on dq and dk. All terms are >= 0, so
// these bounds are rigorous.)
// The activation element (cuda_check.h): q, k, v, dout, the prior gradients and the out both
// backwards read go up through cc_act_to_gpu (the CPU backward reads the same rounded out, and the
// bounds' D is computed from it), so both sides compute from the same values. Where the element is
// bf16 the kernels then round out, dq, dk, dv once more, at their store: each bound b above becomes
// (1 + u16) b + u16 |ref| against the CPU (unrounded) and (1 + u16) b + 2 u16 / (1 - u16) |ref|
// against the naive GPU, whose outputs round too (cc_act_widen); lse is fp32, unchanged. The
// counting cases' sums above 2^8 are then not exact in bf16 either: there the store's rounding can
// hide one pair's unit in out, dq, dk, dv, while lse = log(count) (fp32) still tells every count.
// Before any GPU ran this, the kernels' device code ran on a CPU under a host emulation of mma.sync,
// ldmatrix and the warp collectives (outside the repository; fp32 accumulation rounded, not
// truncated): worst ratios |error| / bound of 0.25 to 0.46 on the bf16 bars, <= 0.5 counting.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/attn_mask.h"
#include "backend/cuda/attention.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/device.h"
#include "base/bf16.h"
#include "base/error.h"
#include "base/rng.h"
#include "cuda_check.h"

// A GPU, and a build with the tensor-core kernels (CUDA_ARCH compute_80 or later).
#define REQUIRE_MMA()                                                                                        \
    do {                                                                                                     \
        CC_REQUIRE_GPU();                                                                                    \
        if (!gm_cuda_attn_mma_built())                                                                       \
            cr_skip_test("GPU test skipped: no tensor-core attention in this build (CUDA_ARCH < compute_80)"); \
    } while (0)

#define U16 0x1p-8
#define U32 0x1p-24
#define BAR 2.0
// Gaussian values rounded to bf16 (so the kernels' rounding on load is exact).
static gm_real *randn_bf16(cc_env *e, size_t n, double scale) {
    gm_real *x = cc_randn(e, n, scale);
    for (size_t i = 0; i < n; i++) x[i] = gm_round_bf16(x[i]);
    return x;
}

static double *zeros(size_t n) {
    double *x = calloc(n ? n : 1, sizeof(double));
    cr_assert(x);
    return x;
}

typedef struct {
    double *out, *lse, *dq, *dk, *dv;  // per element, same layouts as the outputs
} bounds;

// The bounds of the header from one fp64 pass over every admitted pair; bout: the out the backwards
// read (D = dout . bout); gref: the reference's accumulated gradients dq | dk | dv (for the 2 u32
// |result| term).
static bounds make_bounds(const gm_real *q, const gm_real *k, const gm_real *v, const gm_real *dout, const gm_real *bout,
                          const gm_real *gref, const gm_attn_mask *m, int B, int T, int NH, int HD, double scale) {
    const size_t n = (size_t)B * T * NH * HD;
    bounds bd = {zeros(n), zeros((size_t)B * NH * T), zeros(n), zeros(n), zeros(n)};
    double *Nq = zeros(n), *Nk = zeros(n), *s = zeros((size_t)T), A = 0;
    int *per_key = calloc((size_t)T, sizeof(int)), K = 1;
    cr_assert(per_key);
#define AT(b, t, h) ((((size_t)(b) * T + (t)) * NH + (h)) * HD)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int32_t *doc = m->doc ? m->doc + (size_t)b * T : NULL;
            memset(per_key, 0, sizeof(int) * T);
            for (int i = 0; i < T; i++) {
                const gm_real *qi = q + AT(b, i, h), *gi = dout + AT(b, i, h);
                double mx = -INFINITY;
                int nk = 0;
                for (int j = 0; j <= i; j++) {
                    s[j] = -INFINITY;
                    if (!gm_attn_allowed(m, i, j, doc ? doc[i] : 0, doc ? doc[j] : 0)) continue;
                    const gm_real *kj = k + AT(b, j, h);
                    double dot = 0, a = 0;
                    for (int d = 0; d < HD; d++) dot += (double)qi[d] * kj[d], a += fabs((double)qi[d] * kj[d]);
                    s[j] = scale * dot, A = fmax(A, scale * a), mx = fmax(mx, s[j]);
                    nk++, per_key[j]++;
                }
                K = nk > K ? nk : K;
                double sum = 0;
                for (int j = 0; j <= i; j++)
                    if (s[j] > -INFINITY) sum += exp(s[j] - mx);
                const double lse = mx + log(sum);
                bd.lse[((size_t)b * NH + h) * T + i] = lse;
                const gm_real *oi = bout + AT(b, i, h);
                double D = 0, aD = 0;
                for (int d = 0; d < HD; d++) D += (double)gi[d] * oi[d], aD += fabs((double)gi[d] * oi[d]);
                for (int j = 0; j <= i; j++) {
                    if (s[j] == -INFINITY) continue;
                    const gm_real *kj = k + AT(b, j, h), *vj = v + AT(b, j, h);
                    const double p = exp(s[j] - lse);
                    double dp = 0, ap = 0;
                    for (int d = 0; d < HD; d++) dp += (double)gi[d] * vj[d], ap += fabs((double)gi[d] * vj[d]);
                    const double ds = scale * fabs(p * (dp - D)), nn = scale * p * (ap + aD);
                    double *bo = bd.out + AT(b, i, h), *bq = bd.dq + AT(b, i, h), *nq = Nq + AT(b, i, h);
                    double *bk = bd.dk + AT(b, j, h), *bv = bd.dv + AT(b, j, h), *nk_ = Nk + AT(b, j, h);
                    for (int d = 0; d < HD; d++) {
                        bo[d] += p * fabs(vj[d]), bv[d] += p * fabs(gi[d]);
                        bq[d] += ds * fabs(kj[d]), nq[d] += nn * fabs(kj[d]);
                        bk[d] += ds * fabs(qi[d]), nk_[d] += nn * fabs(qi[d]);
                    }
                }
            }
            for (int j = 0; j < T; j++) K = per_key[j] > K ? per_key[j] : K;
        }
#undef AT
    const double f32 = 4 * (HD * A + K + 8) * U32;
    for (size_t i = 0; i < (size_t)B * NH * T; i++) bd.lse[i] = BAR * (f32 + 4 * U32 * fabs(bd.lse[i]));
    for (size_t i = 0; i < n; i++) {
        bd.out[i] = BAR * (U16 + f32) * bd.out[i];
        bd.dq[i] = BAR * ((U16 + f32) * bd.dq[i] + 2 * HD * U32 * Nq[i] + 2 * U32 * fabs(gref[i]));
        bd.dk[i] = BAR * ((U16 + f32) * bd.dk[i] + 2 * HD * U32 * Nk[i] + 2 * U32 * fabs(gref[n + i]));
        bd.dv[i] = BAR * ((U16 + f32) * bd.dv[i] + 2 * U32 * fabs(gref[2 * n + i]));
    }
    free(Nq), free(Nk), free(s), free(per_key);
    return bd;
}

static void free_bounds(bounds *bd) { free(bd->out), free(bd->lse), free(bd->dq), free(bd->dk), free(bd->dv); }

// Host copy of a device output: activations (act) or gm_real memory (lse).
static gm_real *fetch(const cc_env *e, const void *dev, size_t n, int act) {
    cc_sync(e, "attention");
    return act ? cc_act_from_gpu(e, dev, n) : cc_from_gpu(e, dev, n);
}

// A copy of bound, for an activation output widened by its store to the element against ref
// (cc_act_widen; ref_rounded: ref is another kernel's output).
static double *widened(const cc_env *e, const double *bound, const gm_real *ref, size_t n, int act, int ref_rounded) {
    double *w = zeros(n);
    memcpy(w, bound, sizeof(double) * n);
    if (act) cc_act_widen(e, w, ref, n, ref_rounded);
    return w;
}

// How the implementation under test writes its gradients: cuDNN's backward sets them (into
// poisoned memory, so an element it leaves unwritten fails; the CPU adds into zeros), the others add
// into random priors.
static gm_grad_write write_of(gm_cuda_attn_impl impl) { return impl == GM_CUDA_ATTN_CUDNN ? GM_GRAD_SET : GM_GRAD_ADD; }
static const char *name_of(gm_cuda_attn_impl impl) {
    return impl == GM_CUDA_ATTN_CUDNN   ? "cuDNN"
           : impl == GM_CUDA_ATTN_WGMMA ? "wgmma"
           : impl == GM_CUDA_ATTN_WGMMA1 ? "wgmma, one-pass backward"
           : impl == GM_CUDA_ATTN_MMA32 ? "tensor cores, 32 rows a warp"
           : impl == GM_CUDA_ATTN_NAIVE ? "the naive kernels"
                                        : "tensor cores";
}

// One case: CPU reference, naive GPU, the implementation under test (tensor cores or cuDNN,
// twice). Both backwards get the CPU forward's out and lse, so each comparison sees one kernel's
// error only.
static void run_case(cc_env *e, const cc_attn_case *c, gm_cuda_attn_impl test) {
    const gm_backend *cpu = e->cpu, *gpu = e->gpu;
    const int B = 2, T = c->T, NH = c->NH, HD = c->HD;
    const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
    gm_real *q = randn_bf16(e, n, c->qscale), *k = randn_bf16(e, n, 1.0), *v = randn_bf16(e, n, 1.0);
    const gm_grad_write w = write_of(test);
    gm_real *dout = randn_bf16(e, n, 1.0), *g0 = cc_randn(e, 3 * n, 0.5);  // prior dq | dk | dv
    if (w == GM_GRAD_SET) memset(g0, 0, sizeof(gm_real) * 3 * n);
    gm_actval *gq = cc_act_to_gpu(e, q, n), *gk = cc_act_to_gpu(e, k, n), *gv = cc_act_to_gpu(e, v, n);
    gm_actval *gdout = cc_act_to_gpu(e, dout, n);
    // [0]: naive, [1]: under test, [2]: under test again; each gradient added into the prior g0, or
    // set (write_of).
    gm_actval *gout[3], *gg[3];
    gm_real *glse[3];
    for (int r = 0; r < 3; r++)
        gout[r] = cc_act_poisoned(e, n), glse[r] = cc_poisoned(e, nl),
        gg[r] = w == GM_GRAD_SET ? cc_act_poisoned(e, 3 * n) : cc_act_to_gpu(e, g0, 3 * n);
    int32_t *doc = cc_attn_docs(e, c, B);
    const double scale = 1.0 / sqrt(HD);

    gm_attn_mask cm = {c->use_docs ? doc : NULL, c->block, c->window};
    gm_real *out = malloc(sizeof(gm_real) * n), *lse = malloc(sizeof(gm_real) * nl), *g = malloc(sizeof(gm_real) * 3 * n);
    gm_real *bout = malloc(sizeof(gm_real) * n);  // the backwards' out: rounded to the element by its upload
    cr_assert(out && lse && g && bout);
    memcpy(g, g0, sizeof(gm_real) * 3 * n);
    cpu->attn_fwd(cpu, gm_as_act(out), lse, gm_as_act(q), gm_as_act(k), gm_as_act(v), B, T, NH, HD, scale, cm);
    memcpy(bout, out, sizeof(gm_real) * n);
    gm_actval *gout_c = cc_act_to_gpu(e, bout, n);
    cpu->attn_bwd(cpu, gm_as_act(g), gm_as_act(g + n), gm_as_act(g + 2 * n), GM_GRAD_ADD, gm_as_act(dout), gm_as_act(q),
                  gm_as_act(k), gm_as_act(v), gm_as_act(bout), lse, B, T, NH, HD, scale, cm);
    bounds bd = make_bounds(q, k, v, dout, bout, g, &cm, B, T, NH, HD, scale);

    int32_t *gdoc = cc_to_gpu(e, doc, sizeof(int32_t) * B * T);
    gm_real *glse_c = cc_to_gpu(e, lse, sizeof(gm_real) * nl);
    gm_attn_mask gm = {c->use_docs ? gdoc : NULL, c->block, c->window};
    const gm_cuda_attn_impl impl[3] = {GM_CUDA_ATTN_NAIVE, test, test};
    for (int r = 0; r < 3; r++) {
        gm_cuda_attn_fwd_with(impl[r], gpu, gout[r], glse[r], gq, gk, gv, B, T, NH, HD, scale, gm);
        gm_cuda_attn_bwd_with(impl[r], gpu, gg[r], gm_act_at(gpu, gg[r], n), gm_act_at(gpu, gg[r], 2 * n), w, gdout, gq,
                              gk, gv, gout_c, glse_c, B, T, NH, HD, scale, gm);
    }

    char what[256];
    const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
    const double *bnd[5] = {bd.out, bd.lse, bd.dq, bd.dk, bd.dv};
    const size_t len[5] = {n, nl, n, n, n}, at[5] = {0, 0, 0, n, 2 * n};
    const int act[5] = {1, 0, 1, 1, 1};
    const gm_real *cpus[5] = {out, lse, g, g + n, g + 2 * n};
    for (int t = 0; t < 5; t++) {
        gm_real *res[3];  // naive, under test, under test again
        for (int r = 0; r < 3; r++) {
            const void *dev = t == 0 ? (const void *)gout[r] : t == 1 ? (const void *)glse[r] : gm_act_at(gpu, gg[r], at[t]);
            res[r] = fetch(e, dev, len[t], act[t]);
        }
        double *b_cpu = widened(e, bnd[t], cpus[t], len[t], act[t], 0);
        double *b_naive = widened(e, bnd[t], res[0], len[t], act[t], 1);
        snprintf(what, sizeof what, "%s (T=%d NH=%d HD=%d block=%d window=%d docs=%d): %s, %s vs CPU", c->what, T, NH,
                 HD, c->block, c->window, c->use_docs, names[t], name_of(test));
        cc_check_within(e, what, res[1], cpus[t], b_cpu, len[t]);
        snprintf(what, sizeof what, "%s: %s, %s vs naive GPU", c->what, names[t], name_of(test));
        cc_check_within(e, what, res[1], res[0], b_naive, len[t]);
        // The naive kernels are fp32: within the same bounds of the CPU (their own test holds them
        // to 200 ulp); a failure here points at the reference, not at the implementation under test.
        snprintf(what, sizeof what, "%s: %s, naive GPU vs CPU", c->what, names[t]);
        cc_check_within(e, what, res[0], cpus[t], b_cpu, len[t]);
        snprintf(what, sizeof what, "%s: %s, %s run twice", c->what, names[t], name_of(test));
        cc_check_equal(e, what, res[2], res[1], len[t]);
        for (int r = 0; r < 3; r++) free(res[r]);
        free(b_cpu), free(b_naive);
    }

    for (int r = 0; r < 3; r++) gpu->free(gpu, gout[r]), gpu->free(gpu, glse[r]), gpu->free(gpu, gg[r]);
    gpu->free(gpu, gdoc), gpu->free(gpu, gq), gpu->free(gpu, gk), gpu->free(gpu, gv), gpu->free(gpu, gdout);
    gpu->free(gpu, gout_c), gpu->free(gpu, glse_c);
    free_bounds(&bd);
    free(q), free(k), free(v), free(dout), free(g0), free(doc), free(out), free(lse), free(g), free(bout);
}

// A counting case (header): integer inputs, P = 1 on every admitted pair, exact references; the
// implementation under test and the naive kernels.
static void run_counting_case(cc_env *e, const cc_attn_case *c, gm_cuda_attn_impl test) {
    const gm_backend *gpu = e->gpu;
    const int B = 2, T = c->T, NH = c->NH, HD = c->HD;
    const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T, rows = (size_t)B * T * NH;
    const double scale = 1.0 / sqrt(HD);
    gm_real *x = malloc(sizeof(gm_real) * 4 * n);  // q | k | v | dout
    cr_assert(x);
    gm_real *q = x, *k = x + n, *v = x + 2 * n, *dout = x + 3 * n;
    const uint64_t st = e->stream++;
    for (size_t r = 0; r < rows; r++)
        for (int d = 0; d < HD; d++) {
            const size_t i = r * HD + d;
            const uint32_t u = gm_rng_u32(e->seed, st, i);
            q[i] = d < HD / 2 ? (gm_real)(u % 4) : 0, k[i] = d < HD / 2 ? 0 : (gm_real)(u / 4 % 4);
            v[i] = (gm_real)(u / 16 % 2), dout[i] = (gm_real)(u / 32 % 2);
        }
    int32_t *doc = cc_attn_docs(e, c, B);
    gm_attn_mask hm = {c->use_docs ? doc : NULL, c->block, c->window};
    // Exact references: out, lse, then dq | dk | dv.
    double *ro = zeros(n), *rl = zeros(nl), *rg = zeros(3 * n);
    int *per_key = calloc((size_t)T, sizeof(int)), K = 1;
    cr_assert(per_key);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            memset(per_key, 0, sizeof(int) * T);
            for (int i = 0; i < T; i++) {
                const size_t ri = (((size_t)b * T + i) * NH + h) * HD;
                int count = 0;
                for (int j = 0; j <= i; j++) {
                    if (!gm_attn_allowed(&hm, i, j, doc[(size_t)b * T + i], doc[(size_t)b * T + j])) continue;
                    const size_t rj = (((size_t)b * T + j) * NH + h) * HD;
                    double dp = 0;
                    for (int d = 0; d < HD; d++) dp += dout[ri + d] * v[rj + d];
                    for (int d = 0; d < HD; d++) {
                        ro[ri + d] += v[rj + d], rg[2 * n + rj + d] += dout[ri + d];
                        rg[ri + d] += scale * dp * k[rj + d], rg[n + rj + d] += scale * dp * q[ri + d];
                    }
                    count++, per_key[j]++;
                }
                for (int d = 0; d < HD; d++) ro[ri + d] /= count;
                rl[((size_t)b * NH + h) * T + i] = log(count);
                K = count > K ? count : K;
            }
            for (int j = 0; j < T; j++) K = per_key[j] > K ? per_key[j] : K;
        }
    gm_real *ref_o = malloc(sizeof(gm_real) * n), *ref_l = malloc(sizeof(gm_real) * nl), *ref_g = malloc(sizeof(gm_real) * 3 * n);
    double *bo = zeros(n), *bl = zeros(nl), *bg = zeros(3 * n), *bgn = zeros(3 * n);  // bgn: the naive kernels'
    cr_assert(ref_o && ref_l && ref_g);
    for (size_t i = 0; i < n; i++) ref_o[i] = (gm_real)ro[i], bo[i] = 4 * U32 * fabs(ro[i]);
    // lse: log2f's ulp (2 u32 relative), the product with ln 2, this reference's rounding: 8 u32.
    for (size_t i = 0; i < nl; i++) ref_l[i] = (gm_real)rl[i], bl[i] = 8 * U32 * fmax(1, fabs(rl[i]));
    // cuDNN's graph rounds dS with the scale in it, scale (dP - D) P, an MMA operand not exact in
    // bf16: u16 on each term of dq and dk, all >= 0, so u16 |dq| (on an H200 at ecc8627 its dq was
    // 1.5 times the bound without this term).
    const double ds_scaled = test == GM_CUDA_ATTN_CUDNN ? U16 : 0;
    for (size_t i = 0; i < 3 * n; i++)
        ref_g[i] = (gm_real)rg[i], bg[i] = ((i < 2 * n ? ds_scaled : 0) + 4 * U32) * fabs(rg[i]),
        bgn[i] = (i < 2 * n ? K + 4 : 4) * U32 * fabs(rg[i]);
    // The exact references do not round; the device stores out, dq, dk, dv to the element.
    cc_act_widen(e, bo, ref_o, n, 0), cc_act_widen(e, bg, ref_g, 3 * n, 0), cc_act_widen(e, bgn, ref_g, 3 * n, 0);

    int32_t *gdoc = cc_to_gpu(e, doc, sizeof(int32_t) * B * T);
    gm_actval *gx = cc_act_to_gpu(e, x, 4 * n);  // small integers: exact in the element
    gm_actval *gq = gx, *gk = gm_act_at(gpu, gx, n), *gv = gm_act_at(gpu, gx, 2 * n), *gdo = gm_act_at(gpu, gx, 3 * n);
    gm_actval *zero_out = cc_act_zeroed(e, n);  // out = 0, lse = 0 for the backward
    gm_real *zero_lse = gpu->alloc(gpu, sizeof(gm_real) * nl);
    cr_assert(zero_lse, "%s", gm_error());
    gm_attn_mask gm = {c->use_docs ? gdoc : NULL, c->block, c->window};
    const gm_cuda_attn_impl impl[2] = {test, GM_CUDA_ATTN_NAIVE};
    const char *iname[2] = {name_of(test), "naive GPU"};
    char what[256];
    for (int r = 0; r < 2; r++) {
        gm_actval *out = cc_act_poisoned(e, n);
        gm_actval *g = write_of(test) == GM_GRAD_SET ? cc_act_poisoned(e, 3 * n) : cc_act_zeroed(e, 3 * n);
        gm_real *lse = cc_poisoned(e, nl);
        gm_cuda_attn_fwd_with(impl[r], gpu, out, lse, gq, gk, gv, B, T, NH, HD, scale, gm);
        gm_cuda_attn_bwd_with(impl[r], gpu, g, gm_act_at(gpu, g, n), gm_act_at(gpu, g, 2 * n), write_of(test), gdo, gq,
                              gk, gv, zero_out, zero_lse, B, T, NH, HD, scale, gm);
        snprintf(what, sizeof what, "counting, %s (T=%d HD=%d block=%d window=%d docs=%d), %s: out", c->what, T, HD,
                 c->block, c->window, c->use_docs, iname[r]);
        cc_act_expect_within(e, what, out, ref_o, bo, n);
        snprintf(what, sizeof what, "counting, %s, %s: lse", c->what, iname[r]);
        cc_expect_within(e, what, lse, ref_l, bl, nl);
        snprintf(what, sizeof what, "counting, %s, %s: dq | dk | dv", c->what, iname[r]);
        cc_act_expect_within(e, what, g, ref_g, r ? bgn : bg, 3 * n);
        gpu->free(gpu, out), gpu->free(gpu, lse), gpu->free(gpu, g);
    }
    gpu->free(gpu, gdoc), gpu->free(gpu, gx), gpu->free(gpu, zero_out), gpu->free(gpu, zero_lse);
    free(x), free(doc), free(ro), free(rl), free(rg), free(ref_o), free(ref_l), free(ref_g), free(bo), free(bl), free(bg);
    free(bgn), free(per_key);
}

// Every case both ways: against the references at the bf16 bars, and counting; a case above
// GM_GPU_TEST_MAX_WORK left out (cc_attn_case_fits). Unset on a GPU, so every case runs; the GPU
// report's racecheck sets 6e7 for these tests (under a sanitizer that multiplies their time by ~40:
// reports/gpu-h200/), which keeps the cases up to T ~330, tile edges and masks among them. The
// long-window and record-shape tests, whose point is their length, take no cap: the racecheck stage
// leaves them out by name.
static void run_cases(const cc_attn_case *cases, size_t count, gm_cuda_attn_impl test) {
    cc_env e = cc_begin();
    int ran = 0;
    for (size_t i = 0; i < count; i++) {
        if (!cc_attn_case_fits(&cases[i])) continue;
        run_case(&e, &cases[i], test), run_counting_case(&e, &cases[i], test);
        ran++;
    }
    cc_expect_some_ran(ran);
}

Test(cuda_attn_mma, head_dim_64) {
    REQUIRE_MMA();
    const cc_attn_case cases[] = {
        {"T = 1", 1, 2, 64, 128, 0, 0, 1.0, {-1}},
        {"causal, T = 200 (not a multiple of the tiles)", 200, 2, 64, 128, 0, 0, 1.0, {-1}},
        {"records' block 128, window 1, docs", 600, 2, 64, 128, 1, 1, 1.0, {0, 100, 128, 129, 255, 256, 511, -1}},
        {"block 128, window 3, docs over tile edges", 1000, 2, 64, 128, 3, 1, 1.0, {0, 5, 300, 301, 640, 999, -1}},
        {"block 16 (below the tiles), window 5, docs", 333, 2, 64, 16, 5, 1, 1.0, {10, 40, 64, 65, 200, -1}},
        {"block 5 (dividing no tile), window 7, docs", 260, 2, 64, 5, 7, 1, 1.0, {50, 51, 120, 191, 192, -1}},
        {"block 200 (above the tiles), window 2", 777, 2, 64, 200, 2, 0, 1.0, {-1}},
        {"every token its own document", 150, 2, 64, 128, 0, 1, 1.0, {CC_ALL_EOT, -1}},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], GM_CUDA_ATTN_MMA);
}

Test(cuda_attn_mma, head_dim_128) {
    REQUIRE_MMA();
    const cc_attn_case cases[] = {
        {"T = 65 (one tile and a row), docs", 65, 2, 128, 128, 0, 1, 1.0, {0, 33, -1}},
        {"causal, several tiles, peaky softmax", 333, 2, 128, 128, 0, 0, 3.0, {-1}},
        {"block 128, window 2, docs at tile edges", 700, 2, 128, 128, 2, 1, 1.0,
         {0, 64, 128, 129, 191, 192, 256, 383, 384, 640, -1}},
        {"block 64, window 9 (many tiles), docs", 1200, 1, 128, 64, 9, 1, 1.0, {0, 700, 701, 1100, -1}},
        {"one document (no EOT), window 4 blocks of 32", 500, 2, 128, 32, 4, 1, 1.0, {-1}},
        {"block 5, window 3, docs, peaky", 300, 2, 128, 5, 3, 1, 2.0, {0, 127, 128, 129, -1}},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], GM_CUDA_ATTN_MMA);
}

// Counting only (cheap on the host), at lengths where the record's window ends inside the sequence.
Test(cuda_attn_mma, counting_long_windows) {
    REQUIRE_MMA();
    const cc_attn_case cases[] = {
        {"record's block 128, window 14, docs", 2600, 1, 128, 128, 14, 1, 1.0, {0, 1000, 1001, 1791, 1792, 2500, -1}},
        {"record's block 128, window 14, no docs", 2600, 1, 64, 128, 14, 0, 1.0, {-1}},
        {"block 128, window 1, docs", 3000, 2, 128, 128, 1, 1, 1.0, {0, 127, 128, 1500, -1}},
        {"no window, docs", 1500, 1, 64, 128, 0, 1, 1.0, {0, 64, 65, 700, 1499, -1}},
    };
    cc_env e = cc_begin();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_counting_case(&e, &cases[i], GM_CUDA_ATTN_MMA);
}

// The record's shape scaled to T = 8192: B = 1, NH = 6, HD = 128, window 14 blocks of 128 (the
// softcap schedule's end), documents of ~700 tokens. Against the naive GPU kernels, with the
// magnitudes of the bounds from the naive kernels themselves (out: attention of |v|; dv: backward
// of |dout|; A and K from the inputs and the window), so no host pass over 10^8 pairs is needed;
// dq and dk get their element-wise bars in the small cases above. Every output run twice, bitwise.
Test(cuda_attn_mma, record_shape_window_14) {
    REQUIRE_MMA();
    cc_env e = cc_begin();
    const gm_backend *gpu = e.gpu;
    const int B = 1, T = 8192, NH = 6, HD = 128, block = 128, window = 14;
    const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
    const double scale = 1.0 / sqrt(HD);
    gm_real *q = randn_bf16(&e, n, 1.0), *k = randn_bf16(&e, n, 1.0), *v = randn_bf16(&e, n, 1.0);
    gm_real *dout = randn_bf16(&e, n, 1.0), *av = malloc(sizeof(gm_real) * n), *adout = malloc(sizeof(gm_real) * n);
    int32_t *ids = malloc(sizeof(int32_t) * T), *doc = malloc(sizeof(int32_t) * T);
    cr_assert(av && adout && ids && doc);
    for (size_t i = 0; i < n; i++) av[i] = fabsf(v[i]), adout[i] = fabsf(dout[i]);
    uint64_t st = e.stream++;
    for (int t = 0; t < T; t++) ids[t] = gm_rng_u32(e.seed, st, (uint64_t)t) % 700 == 0;
    gm_doc_ids(doc, ids, B, T, 1);
    double qmax = 0, kmax = 0;  // largest row norms: A <= scale |q_i| |k_j|
    for (size_t r = 0; r < (size_t)B * T * NH; r++) {
        double nq = 0, nk = 0;
        for (int d = 0; d < HD; d++) nq += (double)q[r * HD + d] * q[r * HD + d], nk += (double)k[r * HD + d] * k[r * HD + d];
        qmax = fmax(qmax, sqrt(nq)), kmax = fmax(kmax, sqrt(nk));
    }
    const double f32 = 4 * (HD * scale * qmax * kmax + window * block + 8) * U32;

    int32_t *gdoc = cc_to_gpu(&e, doc, sizeof(int32_t) * T);
    gm_actval *gq = cc_act_to_gpu(&e, q, n), *gk = cc_act_to_gpu(&e, k, n), *gv = cc_act_to_gpu(&e, v, n);
    gm_actval *gdout = cc_act_to_gpu(&e, dout, n), *gav = cc_act_to_gpu(&e, av, n), *gadout = cc_act_to_gpu(&e, adout, n);
    gm_attn_mask gm = {gdoc, block, window};
    // Naive: out, lse, gradients from zero, and the magnitudes; tensor cores twice on the naive
    // forward's out and lse.
    gm_actval *nout = cc_act_poisoned(&e, n), *ng = cc_act_zeroed(&e, 3 * n);
    gm_actval *mo = cc_act_poisoned(&e, n), *mg = cc_act_zeroed(&e, 3 * n);
    gm_real *nlse = cc_poisoned(&e, nl), *mlse = cc_poisoned(&e, nl);
    gm_cuda_attn_fwd_with(GM_CUDA_ATTN_NAIVE, gpu, nout, nlse, gq, gk, gv, B, T, NH, HD, scale, gm);
    gm_cuda_attn_bwd_with(GM_CUDA_ATTN_NAIVE, gpu, ng, gm_act_at(gpu, ng, n), gm_act_at(gpu, ng, 2 * n), GM_GRAD_ADD,
                          gdout, gq, gk, gv, nout, nlse, B, T, NH, HD, scale, gm);
    gm_cuda_attn_fwd_with(GM_CUDA_ATTN_NAIVE, gpu, mo, mlse, gq, gk, gav, B, T, NH, HD, scale, gm);
    gm_cuda_attn_bwd_with(GM_CUDA_ATTN_NAIVE, gpu, mg, gm_act_at(gpu, mg, n), gm_act_at(gpu, mg, 2 * n), GM_GRAD_ADD,
                          gadout, gq, gk, gv, nout, nlse, B, T, NH, HD, scale, gm);
    cc_sync(&e, "record shape: naive kernels");
    gm_real *ref_out = cc_act_from_gpu(&e, nout, n), *ref_lse = cc_from_gpu(&e, nlse, nl);
    gm_real *ref_dv = cc_act_from_gpu(&e, gm_act_at(gpu, ng, 2 * n), n), *mag_o = cc_act_from_gpu(&e, mo, n);
    gm_real *mag_dv = cc_act_from_gpu(&e, gm_act_at(gpu, mg, 2 * n), n);
    // The magnitudes came through the element too: the sums they stand for are up to 1 / (1 - u)
    // larger. Both sides of each comparison are device outputs: cc_act_widen with ref_rounded.
    const double mag = 1 / (1 - cc_act_unit(&e));
    double *b_out = zeros(n), *b_lse = zeros(nl), *b_dv = zeros(n);
    for (size_t i = 0; i < n; i++)
        b_out[i] = BAR * (U16 + f32) * mag * mag_o[i],
        b_dv[i] = BAR * ((U16 + f32) * mag * mag_dv[i] + 2 * U32 * fabs(ref_dv[i]));
    for (size_t i = 0; i < nl; i++) b_lse[i] = BAR * (f32 + 4 * U32 * fabs(ref_lse[i]));
    cc_act_widen(&e, b_out, ref_out, n, 1), cc_act_widen(&e, b_dv, ref_dv, n, 1);

    gm_actval *tout[2], *tg[2];
    gm_real *tlse[2];
    for (int r = 0; r < 2; r++) {
        tout[r] = cc_act_poisoned(&e, n), tlse[r] = cc_poisoned(&e, nl), tg[r] = cc_act_zeroed(&e, 3 * n);
        gm_cuda_attn_fwd_with(GM_CUDA_ATTN_MMA, gpu, tout[r], tlse[r], gq, gk, gv, B, T, NH, HD, scale, gm);
        gm_cuda_attn_bwd_with(GM_CUDA_ATTN_MMA, gpu, tg[r], gm_act_at(gpu, tg[r], n), gm_act_at(gpu, tg[r], 2 * n),
                              GM_GRAD_ADD, gdout, gq, gk, gv, nout, nlse, B, T, NH, HD, scale, gm);
    }
    cc_act_expect_within(&e, "record shape: out, tensor cores vs naive GPU", tout[0], ref_out, b_out, n);
    cc_expect_within(&e, "record shape: lse, tensor cores vs naive GPU", tlse[0], ref_lse, b_lse, nl);
    cc_act_expect_within(&e, "record shape: dv, tensor cores vs naive GPU", gm_act_at(gpu, tg[0], 2 * n), ref_dv, b_dv,
                         n);
    gm_real *first = cc_act_from_gpu(&e, tout[0], n);
    cc_act_expect_equal(&e, "record shape: out, tensor cores run twice", tout[1], first, n);
    free(first);
    first = cc_from_gpu(&e, tlse[0], nl);
    cc_expect_equal(&e, "record shape: lse, tensor cores run twice", tlse[1], first, nl);
    free(first);
    first = cc_act_from_gpu(&e, tg[0], 3 * n);
    cc_act_expect_equal(&e, "record shape: dq | dk | dv, tensor cores run twice", tg[1], first, 3 * n);
    free(first);

    for (int r = 0; r < 2; r++) gpu->free(gpu, tout[r]), gpu->free(gpu, tlse[r]), gpu->free(gpu, tg[r]);
    gpu->free(gpu, gdoc), gpu->free(gpu, gq), gpu->free(gpu, gk), gpu->free(gpu, gv), gpu->free(gpu, gdout);
    gpu->free(gpu, gav), gpu->free(gpu, gadout), gpu->free(gpu, nout), gpu->free(gpu, nlse), gpu->free(gpu, ng);
    gpu->free(gpu, mo), gpu->free(gpu, mlse), gpu->free(gpu, mg);
    free(q), free(k), free(v), free(dout), free(av), free(adout), free(ids), free(doc);
    free(ref_out), free(ref_lse), free(ref_dv), free(mag_o), free(mag_dv), free(b_out), free(b_lse), free(b_dv);
}

// Two forward forms that must give the same bits (out and lse) on every case: `form` against `base`
// (what: how they differ, for the messages). Rows 1 and up of a batch get random EOTs.
static void expect_same_forward_bits(const cc_attn_case *cases, size_t count, gm_cuda_attn_impl base,
                                     gm_cuda_attn_impl form, const char *what_differs) {
    cc_env e = cc_begin();
    const gm_backend *gpu = e.gpu;
    int ran = 0;
    for (size_t ci = 0; ci < count; ci++) {
        const cc_attn_case *c = &cases[ci];
        if (!cc_attn_case_fits(c)) continue;
        const int B = 2, T = c->T, NH = c->NH, HD = c->HD;
        const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
        const double scale = 1.0 / sqrt(HD);
        gm_real *q = randn_bf16(&e, n, c->qscale), *k = randn_bf16(&e, n, 1.0), *v = randn_bf16(&e, n, 1.0);
        gm_actval *gq = cc_act_to_gpu(&e, q, n), *gk = cc_act_to_gpu(&e, k, n), *gv = cc_act_to_gpu(&e, v, n);
        int32_t *doc = cc_attn_docs(&e, c, B), *gdoc = cc_to_gpu(&e, doc, sizeof(int32_t) * B * T);
        const gm_attn_mask gm = {c->use_docs ? gdoc : NULL, c->block, c->window};
        gm_actval *out_base = cc_act_poisoned(&e, n), *out_form = cc_act_poisoned(&e, n);
        gm_real *lse_base = cc_poisoned(&e, nl), *lse_form = cc_poisoned(&e, nl);
        gm_cuda_attn_fwd_with(base, gpu, out_base, lse_base, gq, gk, gv, B, T, NH, HD, scale, gm);
        gm_cuda_attn_fwd_with(form, gpu, out_form, lse_form, gq, gk, gv, B, T, NH, HD, scale, gm);
        char what[256];
        gm_real *want = cc_act_from_gpu(&e, out_base, n);
        snprintf(what, sizeof what, "%s: out, %s", c->what, what_differs);
        cc_act_expect_equal(&e, what, out_form, want, n);
        free(want);
        want = cc_from_gpu(&e, lse_base, nl);
        snprintf(what, sizeof what, "%s: lse, %s", c->what, what_differs);
        cc_expect_equal(&e, what, lse_form, want, nl);
        free(want);
        gpu->free(gpu, gq), gpu->free(gpu, gk), gpu->free(gpu, gv), gpu->free(gpu, gdoc);
        gpu->free(gpu, out_base), gpu->free(gpu, out_form), gpu->free(gpu, lse_base), gpu->free(gpu, lse_form);
        free(q), free(k), free(v), free(doc);
        ran++;
    }
    cc_expect_some_ran(ran);
}

// Masks like the bounded cases' (windows, documents, blocks that divide no tile, T past the tiles)
// and the record's shape, for the forms that must agree bit for bit.
static const cc_attn_case SAME_BITS_CASES[] = {
    {"HD 64, causal, T = 200", 200, 2, 64, 128, 0, 0, 1.0, {-1}},
    {"HD 64, block 5, window 7, docs", 260, 2, 64, 5, 7, 1, 1.0, {50, 51, 120, 191, 192, -1}},
    {"HD 128, T = 65, docs", 65, 2, 128, 128, 0, 1, 1.0, {0, 33, -1}},
    {"HD 128, block 128, window 2, docs at tile edges", 700, 2, 128, 128, 2, 1, 1.0,
     {0, 64, 128, 129, 191, 192, 256, 383, 384, 640, -1}},
    {"HD 128, peaky, block 64, window 9, docs", 1200, 1, 128, 64, 9, 1, 3.0, {0, 700, 701, 1100, -1}},
    {"record: HD 128 x 6 heads, block 128, window 14, docs", 4096, 6, 128, 128, 14, 1, 1.0,
     {0, 700, 1500, 1501, 2900, -1}},
};
#define SAME_BITS_CASES_N (sizeof SAME_BITS_CASES / sizeof SAME_BITS_CASES[0])

// The forward with 32 query rows per warp (GM_CUDA_ATTN_MMA32: 4 warps a block) issues, for each
// output element, the MMAs, softmax steps and store of the 16-row one (8 warps) in the same order;
// only a K or V fragment now feeds two m-tiles. So out and lse must be the same bits; the backward
// is one code for both.
Test(cuda_attn_mma, forward_32_rows_per_warp_same_bits) {
    REQUIRE_MMA();
    expect_same_forward_bits(SAME_BITS_CASES, SAME_BITS_CASES_N, GM_CUDA_ATTN_MMA, GM_CUDA_ATTN_MMA32,
                             "32 vs 16 rows per warp");
}

// The kernels round q, k, v to bf16 (nearest even) as they load them: raw fp32 inputs and the
// same inputs rounded on the host (base/bf16.h, the same rounding) give the same bits. (Where the
// activation element is bf16 the upload itself already rounds: both sides are then the same bits by
// construction, and the test shows only that the kernels' loads widen exactly.)
Test(cuda_attn_mma, rounds_inputs_on_load) {
    REQUIRE_MMA();
    cc_env e = cc_begin();
    const gm_backend *gpu = e.gpu;
    const int HDS[2] = {64, 128};
    for (int hi = 0; hi < 2; hi++) {
        const cc_attn_case c = {"rounding on load", 300, 2, HDS[hi], 32, 3, 1, 1.0, {0, 99, 100, 257, -1}};
        const int B = 2, T = c.T, NH = c.NH, HD = c.HD;
        const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
        const double scale = 1.0 / sqrt(HD);
        gm_real *raw[3];
        gm_actval *dev[2][3];
        for (int t = 0; t < 3; t++) {
            raw[t] = cc_randn(&e, n, 1.0);
            dev[0][t] = cc_act_to_gpu(&e, raw[t], n);
            for (size_t i = 0; i < n; i++) raw[t][i] = gm_round_bf16(raw[t][i]);
            dev[1][t] = cc_act_to_gpu(&e, raw[t], n);
        }
        gm_real *dout = cc_randn(&e, n, 1.0);
        gm_actval *gdout = cc_act_to_gpu(&e, dout, n);
        int32_t *doc = cc_attn_docs(&e, &c, B), *gdoc = cc_to_gpu(&e, doc, sizeof(int32_t) * B * T);
        gm_attn_mask gm = {gdoc, c.block, c.window};
        gm_actval *out[2], *g[2];
        gm_real *lse[2];
        for (int r = 0; r < 2; r++) {
            out[r] = cc_act_poisoned(&e, n), lse[r] = cc_poisoned(&e, nl), g[r] = cc_act_zeroed(&e, 3 * n);
            gm_cuda_attn_fwd_with(GM_CUDA_ATTN_MMA, gpu, out[r], lse[r], dev[r][0], dev[r][1], dev[r][2], B, T, NH, HD,
                                  scale, gm);
            // Both backwards on the first forward's out and lse: only q, k, v differ.
            gm_cuda_attn_bwd_with(GM_CUDA_ATTN_MMA, gpu, g[r], gm_act_at(gpu, g[r], n), gm_act_at(gpu, g[r], 2 * n),
                                  GM_GRAD_ADD, gdout, dev[r][0], dev[r][1], dev[r][2], out[0], lse[0], B, T, NH, HD,
                                  scale, gm);
        }
        char what[128];
        gm_real *want = cc_act_from_gpu(&e, out[1], n);
        snprintf(what, sizeof what, "HD %d: out of raw inputs vs of bf16-rounded inputs", HD);
        cc_act_expect_equal(&e, what, out[0], want, n);
        free(want);
        want = cc_from_gpu(&e, lse[1], nl);
        snprintf(what, sizeof what, "HD %d: lse of raw inputs vs of bf16-rounded inputs", HD);
        cc_expect_equal(&e, what, lse[0], want, nl);
        free(want);
        want = cc_act_from_gpu(&e, g[1], 3 * n);
        snprintf(what, sizeof what, "HD %d: dq | dk | dv of raw inputs vs of bf16-rounded inputs", HD);
        cc_act_expect_equal(&e, what, g[0], want, 3 * n);
        free(want);
        for (int r = 0; r < 2; r++) {
            gpu->free(gpu, out[r]), gpu->free(gpu, lse[r]), gpu->free(gpu, g[r]);
            for (int t = 0; t < 3; t++) gpu->free(gpu, dev[r][t]);
        }
        for (int t = 0; t < 3; t++) free(raw[t]);
        gpu->free(gpu, gdout), gpu->free(gpu, gdoc);
        free(dout), free(doc);
    }
}

// The backend's attn_fwd / attn_bwd at (B 1, T, 2 heads, HD) under `mask` give bitwise the results
// of `fwd` and `bwd` asked for by name (out, lse, and dq | dk | dv written as `w` says).
static void expect_backend_runs(cc_env *e, gm_cuda_attn_impl fwd, gm_cuda_attn_impl bwd, int T, int HD,
                                gm_attn_mask m, gm_grad_write w) {
    const gm_backend *gpu = e->gpu;
    const int B = 1, NH = 2;
    const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
    const double scale = 1.0 / sqrt(HD);
    gm_real *x = cc_randn(e, 4 * n, 1.0);
    gm_actval *gx = cc_act_to_gpu(e, x, 4 * n);  // q | k | v | dout
    gm_actval *gq = gx, *gk = gm_act_at(gpu, gx, n), *gv = gm_act_at(gpu, gx, 2 * n), *gdo = gm_act_at(gpu, gx, 3 * n);
    gm_actval *out[2], *g[2];
    gm_real *lse[2];
    for (int r = 0; r < 2; r++)
        out[r] = cc_act_poisoned(e, n), lse[r] = cc_poisoned(e, nl), g[r] = cc_act_zeroed(e, 3 * n);
    gpu->attn_fwd(gpu, out[0], lse[0], gq, gk, gv, B, T, NH, HD, scale, m);
    gpu->attn_bwd(gpu, g[0], gm_act_at(gpu, g[0], n), gm_act_at(gpu, g[0], 2 * n), w, gdo, gq, gk, gv, out[0], lse[0],
                  B, T, NH, HD, scale, m);
    gm_cuda_attn_fwd_with(fwd, gpu, out[1], lse[1], gq, gk, gv, B, T, NH, HD, scale, m);
    gm_cuda_attn_bwd_with(bwd, gpu, g[1], gm_act_at(gpu, g[1], n), gm_act_at(gpu, g[1], 2 * n), w, gdo, gq, gk, gv,
                          out[0], lse[0], B, T, NH, HD, scale, m);
    char what[128];
    gm_real *ref = cc_act_from_gpu(e, out[1], n);
    snprintf(what, sizeof what, "T %d HD %d: backend attn_fwd vs %s: out", T, HD, name_of(fwd));
    cc_act_expect_equal(e, what, out[0], ref, n);
    free(ref);
    ref = cc_from_gpu(e, lse[1], nl);
    snprintf(what, sizeof what, "T %d HD %d: backend attn_fwd vs %s: lse", T, HD, name_of(fwd));
    cc_expect_equal(e, what, lse[0], ref, nl);
    free(ref);
    ref = cc_act_from_gpu(e, g[1], 3 * n);
    snprintf(what, sizeof what, "T %d HD %d: backend attn_bwd vs %s: dq | dk | dv", T, HD, name_of(bwd));
    cc_act_expect_equal(e, what, g[0], ref, 3 * n);
    free(ref);
    for (int r = 0; r < 2; r++) gpu->free(gpu, out[r]), gpu->free(gpu, lse[r]), gpu->free(gpu, g[r]);
    gpu->free(gpu, gx);
    free(x);
}

// The backend's attn_fwd / attn_bwd run what gm_cuda_attn_auto_form names, and that is the rule
// attention.cu derives from the measured times (a windowed mask: cuDNN does not take it), at any
// length, with documents or not: head_dim 64 the 16-row mma kernels both ways; 128 wgmma both
// ways where it runs, else the forward with 32 rows a warp and the 16-row backward; other head dims
// the naive kernels.
Test(cuda_attn_mma, backend_picks_by_head_dim) {
    unsetenv("GM_CUDA_ATTN");  // the automatic choice, whatever the caller's environment pins
    REQUIRE_MMA();
    cc_env e = cc_begin();
    enum { T_LONG = 2000 };
    // documents of 97 tokens (ids t / 97, nondecreasing as the mask wants), for the longest T
    int32_t doc[T_LONG];
    for (int t = 0; t < T_LONG; t++) doc[t] = t / 97;
    int32_t *gdoc = cc_to_gpu(&e, doc, sizeof doc);
    const int hopper = gm_cuda_attn_wgmma_ready(e.gpu);
    const gm_cuda_attn_impl M16 = GM_CUDA_ATTN_MMA, fwd128 = hopper ? GM_CUDA_ATTN_WGMMA : GM_CUDA_ATTN_MMA32,
                            bwd128 = hopper ? GM_CUDA_ATTN_WGMMA : GM_CUDA_ATTN_MMA;
    const struct {
        int T, HD, docs;
        gm_cuda_attn_impl fwd, bwd;
    } want[] = {{200, 64, 0, M16, M16},
                {T_LONG, 64, 1, M16, M16},
                {200, 128, 0, fwd128, bwd128},
                {200, 128, 1, fwd128, bwd128},
                {T_LONG, 128, 0, fwd128, bwd128},
                {T_LONG, 128, 1, fwd128, bwd128},
                {200, 48, 0, GM_CUDA_ATTN_NAIVE, GM_CUDA_ATTN_NAIVE}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const int T = want[i].T, HD = want[i].HD;
        const gm_attn_mask m = {want[i].docs ? gdoc : NULL, 16, 3};
        const gm_cuda_attn_impl fwd = gm_cuda_attn_auto_form(e.gpu, 0, HD), bwd = gm_cuda_attn_auto_form(e.gpu, 1, HD);
        cr_expect_eq(fwd, want[i].fwd, "T %d HD %d docs %d: forward form %s, not %s", T, HD, want[i].docs, name_of(fwd),
                     name_of(want[i].fwd));
        cr_expect_eq(bwd, want[i].bwd, "T %d HD %d docs %d: backward form %s, not %s", T, HD, want[i].docs,
                     name_of(bwd), name_of(want[i].bwd));
        char what[96];  // its work: (query, key, dim) triples of 2 heads, the keys of a window and a block
        snprintf(what, sizeof what, "the backend's choice at T %d HD %d docs %d", T, HD, want[i].docs);
        if (cc_case_fits(what, 2.0 * 2 * T * fmin(T, m.block * (m.window_blocks + 1)) * HD))
            expect_backend_runs(&e, want[i].fwd, want[i].bwd, T, HD, m, GM_GRAD_ADD);
    }
    e.gpu->free(e.gpu, gdoc);
}

// Asked for by name, the tensor-core kernels (either forward) refuse what they cannot do (an error
// at sync), rather than computing something else: a head_dim other than 64 and 128, a tensor off 16
// bytes, or a scale that is not positive (their softmax takes the raw scores' max for the scaled ones').
static void expect_refused(gm_cuda_attn_impl impl, int HD, int offset, double scale, const char *says) {
    cc_env e = cc_begin();
    gm_actval *buf = cc_act_poisoned(&e, 128 * HD + 4);
    gm_real *lse = cc_poisoned(&e, 128);
    gm_attn_mask m = {NULL, 128, 0};
    gm_cuda_attn_fwd_with(impl, e.gpu, buf, lse, gm_act_at(e.gpu, buf, (size_t)offset), buf, buf, 1, 128, 1, HD, scale, m);
    cr_expect_eq(gm_cuda_sync(e.gpu), -1, "HD %d, q offset %d elements, scale %g: accepted", HD, offset, scale);
    cr_expect(strstr(gm_error(), says) != NULL, "message: %s", gm_error());
    e.gpu->free(e.gpu, buf), e.gpu->free(e.gpu, lse);
}
Test(cuda_attn_mma, refuses_head_dim_32) {
    REQUIRE_MMA();
    expect_refused(GM_CUDA_ATTN_MMA, 32, 0, 1.0, "head_dim 64 or 128");
    expect_refused(GM_CUDA_ATTN_MMA32, 32, 0, 1.0, "head_dim 64 or 128");
}
Test(cuda_attn_mma, refuses_unaligned_tensor) {
    REQUIRE_MMA();
    expect_refused(GM_CUDA_ATTN_MMA, 64, 1, 1.0, "head_dim 64 or 128");
    expect_refused(GM_CUDA_ATTN_MMA32, 64, 1, 1.0, "head_dim 64 or 128");
}
Test(cuda_attn_mma, refuses_non_positive_scale) {
    REQUIRE_MMA();
    expect_refused(GM_CUDA_ATTN_MMA, 64, 0, 0.0, "head_dim 64 or 128");
    expect_refused(GM_CUDA_ATTN_MMA32, 128, 0, -0.5, "head_dim 64 or 128");
}

// ---- the kernels on Hopper's wgmma (GM_CUDA_ATTN_WGMMA: sm_90a machine code on an sm_90 GPU) ----

// The bounds and the counting cases of the mma kernels, forward and backward (the backward handed
// the CPU's out and lse; each run twice, bitwise). The order of the fp32 sums inside a wgmma is the
// hardware's, so the results are held to the bounds, not to mma.sync's bits. Skipped on other GPUs.
#define REQUIRE_WGMMA()                                                                                    \
    do {                                                                                                   \
        REQUIRE_MMA();                                                                                     \
        cc_env probe = cc_begin();                                                                         \
        if (!gm_cuda_attn_wgmma_ready(probe.gpu))                                                          \
            cr_skip_test("GPU test skipped: wgmma needs an sm_90 GPU and the sm_90a build (CUDA_ARCH)");   \
    } while (0)

// The cases of the wgmma forms.
static const cc_attn_case WGMMA_CASES[] = {
    {"HD 64, T = 1", 1, 2, 64, 128, 0, 0, 1.0, {-1}},
    {"HD 64, causal, T = 200", 200, 2, 64, 128, 0, 0, 1.0, {-1}},
    {"HD 64, block 5 (dividing no tile), window 7, docs", 260, 2, 64, 5, 7, 1, 1.0, {50, 51, 120, 191, 192, -1}},
    {"HD 128, T = 65 (one tile and a row), docs", 65, 2, 128, 128, 0, 1, 1.0, {0, 33, -1}},
    {"HD 128, causal, peaky", 333, 2, 128, 128, 0, 0, 3.0, {-1}},
    {"HD 128, block 128, window 2, docs at tile edges", 700, 2, 128, 128, 2, 1, 1.0,
     {0, 64, 128, 129, 191, 192, 256, 383, 384, 640, -1}},
    {"HD 128, block 64, window 14 (ending inside T), docs", 1300, 1, 128, 64, 14, 1, 1.0, {0, 500, 501, 895, 896, -1}},
};
#define WGMMA_CASES_N (sizeof WGMMA_CASES / sizeof WGMMA_CASES[0])

// The Hopper parts one at a time (gm_cuda_attn_wgmma_parts, exact: small integers), so that where
// the tests below fail, the report says which part: the TMA box copy (its tensor map, the rows
// past T), the TMA vector copy (the dk/dv kernel's per-query vectors), the 128-byte swizzled
// layout the threads' copies and the descriptors assume, or one of wgmma's three operand forms
// (both K-major; A from registers with B MN-major; the one-pass backward's dQ product, at head_dim
// 64 an N of 32 starting mid-row). Under the emulation the same device code passes (attn_emu
// parts; test_attn_emulated.c).
Test(cuda_attn_wgmma, parts_one_at_a_time) {
    REQUIRE_WGMMA();
    cc_env e = cc_begin();
    for (int HD = 64; HD <= 128; HD += 64) {
        char report[2048];
        const int rc = gm_cuda_attn_wgmma_parts(e.gpu, HD, report, sizeof report);
        cr_expect_eq(rc, 0, "head_dim %d: %d part(s) wrong:\n%s", HD, rc, report);
    }
}

Test(cuda_attn_wgmma, masks_and_head_dims) {
    REQUIRE_WGMMA();
    run_cases(WGMMA_CASES, WGMMA_CASES_N, GM_CUDA_ATTN_WGMMA);
}

// The one-pass backward (GM_CUDA_ATTN_WGMMA1; its forward is wgmma's) on the same cases and a long
// causal one, where each query tile's dq is summed over up to 16 key blocks, each waiting for the
// ones above it: within the bounds (its dq sums the key blocks' parts in another order than the
// other forms, inside the same fp32 bound), added into random priors (the tile's last block adds),
// and bitwise the same when run twice (the parts added in a fixed order). One list, so that under
// the racecheck stage's size cap, which leaves the long case out, the others are what is checked
// (as two lists the long one alone failed there: "nothing was checked", run 8).
Test(cuda_attn_wgmma, one_pass_backward) {
    REQUIRE_WGMMA();
    cc_attn_case cases[WGMMA_CASES_N + 1];
    memcpy(cases, WGMMA_CASES, sizeof WGMMA_CASES);
    cases[WGMMA_CASES_N] =
        (cc_attn_case){"HD 64, causal, T = 2000 (16 key blocks a tile)", 2000, 2, 64, 128, 0, 0, 1.0, {-1}};
    run_cases(cases, WGMMA_CASES_N + 1, GM_CUDA_ATTN_WGMMA1);
}

// The wgmma forward on persistent blocks (GM_CUDA_ATTN_WGMMA_PERSIST: as many as the GPU holds,
// each walking many blocks of 128 queries, the copies running on from one into the next) does each
// block's arithmetic as the wgmma forward does: the same bits. The record's shape gives each block
// several items (384 of them on an H100's or H200's 132 SMs); the smaller cases one or none.
Test(cuda_attn_wgmma, persistent_forward_same_bits) {
    REQUIRE_WGMMA();
    expect_same_forward_bits(SAME_BITS_CASES, SAME_BITS_CASES_N, GM_CUDA_ATTN_WGMMA, GM_CUDA_ATTN_WGMMA_PERSIST,
                             "persistent vs a block an item");
}

// The wgmma forward with its warpgroups taking turns to issue their products
// (GM_CUDA_ATTN_WGMMA_PINGPONG: named barriers, one per warpgroup's turn) does the wgmma forward's
// arithmetic in the same order: the same bits. A turn passed or taken wrongly would hang the block
// (the emulation stops there: attn_emulated/a_wrong_instruction_fails).
Test(cuda_attn_wgmma, pingpong_forward_same_bits) {
    REQUIRE_WGMMA();
    expect_same_forward_bits(SAME_BITS_CASES, SAME_BITS_CASES_N, GM_CUDA_ATTN_WGMMA, GM_CUDA_ATTN_WGMMA_PINGPONG,
                             "warpgroups taking turns vs not");
}

// GM_CUDA_WGMMA=off (read when the backend is made: set before this test's process makes it) keeps
// the wgmma forms from running on any GPU: none ready, none chosen, a wgmma form asked for by name
// refused, saying why. The GPU report's fallback when its first wgmma check fails.
Test(cuda_attn_wgmma, turned_off_by_the_environment) {
    setenv("GM_CUDA_WGMMA", "off", 1);
    REQUIRE_MMA();
    cc_env e = cc_begin();
    cr_expect(!gm_cuda_attn_wgmma_ready(e.gpu), "GM_CUDA_WGMMA=off: wgmma ready");
    for (int bwd = 0; bwd < 2; bwd++) {
        const gm_cuda_attn_impl auto_form = gm_cuda_attn_auto_form(e.gpu, bwd, 128);
        cr_expect(auto_form != GM_CUDA_ATTN_WGMMA, "GM_CUDA_WGMMA=off: the automatic %s is wgmma",
                  bwd ? "backward" : "forward");
    }
    expect_refused(GM_CUDA_ATTN_WGMMA, 128, 0, 1.0, "GM_CUDA_WGMMA not off");
    expect_refused(GM_CUDA_ATTN_WGMMA_PERSIST, 128, 0, 1.0, "GM_CUDA_WGMMA not off");
    expect_refused(GM_CUDA_ATTN_WGMMA_PINGPONG, 128, 0, 1.0, "GM_CUDA_WGMMA not off");
}

// GM_CUDA_ATTN pins the backend's attention: with wgmma,wgmma1 its attn_fwd runs wgmma's forward
// and attn_bwd the one-pass backward, bitwise what they compute asked for by name, on a windowed
// mask with documents, where the automatic choice runs wgmma's two backward kernels (other sums)
// and, at head_dim 64, the 16-row forward. Read when the backend is made: set before this test's
// process makes it.
Test(cuda_attn_wgmma, pinned_by_the_environment) {
    setenv("GM_CUDA_ATTN", "wgmma,wgmma1", 1);
    REQUIRE_WGMMA();
    cc_env e = cc_begin();
    int32_t doc[700];
    for (int t = 0; t < 700; t++) doc[t] = t / 97;
    int32_t *gdoc = cc_to_gpu(&e, doc, sizeof doc);
    const gm_attn_mask m = {gdoc, 16, 3};
    expect_backend_runs(&e, GM_CUDA_ATTN_WGMMA, GM_CUDA_ATTN_WGMMA1, 700, 128, m, GM_GRAD_ADD);
    expect_backend_runs(&e, GM_CUDA_ATTN_WGMMA, GM_CUDA_ATTN_WGMMA1, 300, 64, m, GM_GRAD_SET);
    e.gpu->free(e.gpu, gdoc);
}

// Asked for by name where it cannot run (no sm_90 GPU, or a build without sm_90a): an error at sync
// naming what it needs, nothing computed.
Test(cuda_attn_wgmma, refused_where_absent) {
    REQUIRE_MMA();
    cc_env e = cc_begin();
    if (gm_cuda_attn_wgmma_ready(e.gpu)) cr_skip_test("GPU test skipped: wgmma runs here (the test is for GPUs where it does not)");
    gm_actval *buf = cc_act_poisoned(&e, 128 * 64 * 3);
    gm_real *lse = cc_poisoned(&e, 128);
    const gm_attn_mask m = {NULL, 128, 0};
    gm_cuda_attn_fwd_with(GM_CUDA_ATTN_WGMMA, e.gpu, buf, lse, gm_act_at(e.gpu, buf, 128 * 64),
                          gm_act_at(e.gpu, buf, 128 * 64 * 2), buf, 1, 128, 1, 64, 0.125, m);
    cr_expect_eq(gm_cuda_sync(e.gpu), -1, "wgmma where it cannot run: accepted");
    cr_expect(strstr(gm_error(), "sm_90") != NULL, "message: %s", gm_error());
    e.gpu->free(e.gpu, buf), e.gpu->free(e.gpu, lse);
}

// ---- cuDNN's fused attention (attention_cudnn.cu): plain causal masks ----

// A GPU, bf16 activations, and cuDNN loadable (GM_REQUIRE_CUDNN=1: its absence fails the test).
#define REQUIRE_CUDNN()                                                                                    \
    do {                                                                                                   \
        CC_REQUIRE_GPU();                                                                                  \
        char why_[600];                                                                                    \
        if (gm_cuda_attn_cudnn_graph_check(0, 1, 64, 1, 64, why_, sizeof why_)) {                         \
            const char *req_ = getenv("GM_REQUIRE_CUDNN");                                                 \
            cr_assert(!(req_ && !strcmp(req_, "1")), "GM_REQUIRE_CUDNN=1 and %s", why_);                   \
            cr_skip_test("GPU test skipped: %s", why_);                                                    \
        }                                                                                                  \
        if (GM_CUDA_ACT_BYTES != 2) cr_skip_test("GPU test skipped: fp32 activations; cuDNN takes bf16"); \
    } while (0)

// The bars of the header hold for cuDNN too: its rounding points are the tensor cores' (P and dS
// bf16 MMA operands, fp32 accumulation, out and the gradients rounded at their store), except that
// its dS operand carries the scale, which the counting cases' bound for dq and dk allows for. Every
// case run twice and bitwise equal: the backward is the form cuDNN runs deterministically.
Test(cuda_attn_cudnn, plain_causal_against_cpu_and_naive) {
    REQUIRE_CUDNN();
    const cc_attn_case cases[] = {
        {"T = 1", 1, 2, 64, 128, 0, 0, 1.0, {-1}},
        {"T = 65, head_dim 128", 65, 2, 128, 128, 0, 0, 1.0, {-1}},
        {"T = 200 (not a multiple of the tiles)", 200, 2, 64, 128, 0, 0, 1.0, {-1}},
        {"several tiles, peaky softmax", 333, 2, 128, 128, 0, 0, 3.0, {-1}},
        {"six heads of 128", 1024, 6, 128, 128, 0, 0, 1.0, {-1}},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], GM_CUDA_ATTN_CUDNN);
}

// The backend's attn_fwd / attn_bwd run cuDNN on a plain causal mask (the backward where it sets
// the gradients), at both head dims of the tensor-core kernels.
Test(cuda_attn_cudnn, backend_picks_cudnn_for_plain_causal) {
    REQUIRE_CUDNN();
    cc_env e = cc_begin();
    const gm_attn_mask m = {NULL, 128, 0};
    expect_backend_runs(&e, GM_CUDA_ATTN_CUDNN, GM_CUDA_ATTN_CUDNN, 300, 128, m, GM_GRAD_SET);
    expect_backend_runs(&e, GM_CUDA_ATTN_CUDNN, GM_CUDA_ATTN_CUDNN, 300, 64, m, GM_GRAD_SET);
}

// Asked for by name, cuDNN refuses what it cannot express (an error at sync naming why): the
// records' window and documents, and adding into gradients.
Test(cuda_attn_cudnn, refuses_windows_documents_and_adding) {
    REQUIRE_CUDNN();
    cc_env e = cc_begin();
    const int T = 128, HD = 64;
    gm_actval *buf = cc_act_poisoned(&e, 8 * (size_t)T * HD);
    gm_real *lse = cc_poisoned(&e, T);
    int32_t ids[128] = {0};
    int32_t *doc = cc_to_gpu(&e, ids, sizeof ids);
    const gm_attn_mask masks[2] = {{NULL, 128, 14}, {doc, 128, 0}};
    const char *why[2] = {"a window of blocks", "documents"};
    for (int i = 0; i < 2; i++) {
        gm_cuda_attn_fwd_with(GM_CUDA_ATTN_CUDNN, e.gpu, buf, lse, buf, buf, buf, 1, T, 1, HD, 1.0, masks[i]);
        cr_expect_eq(gm_cuda_sync(e.gpu), -1, "mask with %s: accepted", why[i]);
        cr_expect(strstr(gm_error(), why[i]) != NULL, "message: %s", gm_error());
    }
    gm_cuda_attn_bwd_with(GM_CUDA_ATTN_CUDNN, e.gpu, buf, buf, buf, GM_GRAD_ADD, buf, buf, buf, buf, buf, lse, 1, T, 1,
                          HD, 1.0, masks[0]);
    cr_expect_eq(gm_cuda_sync(e.gpu), -1, "GM_GRAD_ADD: accepted");
    cr_expect(strstr(gm_error(), "cannot add into them") != NULL, "message: %s", gm_error());
    e.gpu->free(e.gpu, buf), e.gpu->free(e.gpu, lse), e.gpu->free(e.gpu, doc);
}
