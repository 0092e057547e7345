// Causal softmax attention with document masking and a sliding window counted in blocks, on
// (B, T, NH, HD). The fast kernels work on tiles of TILE query rows x TILE keys of one (b, head),
// read in place from the (B, T, NH, HD) layout (leading dimension NH*HD), with every product a
// BLAS GEMM (one OpenBLAS thread per OpenMP thread, as in matmul.c). A tile pair is skipped when
// no query may see any key (causality, window, disjoint documents), "full" when every query sees
// every key, and otherwise the token rule (attn_mask.h) masks it element by element.
// Forward: per query tile, S = scale Q K^T over its key tiles, exact row softmax, O = P V; keeps
// the log-sum-exp per row. Backward (FlashAttention-2 style, probabilities recomputed from lse):
// per (b, head), on one thread, for each key tile and each query tile that sees it:
// P = exp(S - lse), dP = dO V^T, dS = P (dP - D) scale with D = rowsum(dO o O), then
// dV += P^T dO, dK += dS^T Q, dQ += dS K. Every output element is owned by one thread and
// summed in a fixed order: deterministic whatever the thread count.
// The exp/tanh loops vectorize because the build has -fno-trapping-math (Makefile: why).
#include <math.h>
#include <stdlib.h>

#include "backend/attn_mask.h"
#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/fastmath.h"


enum { TILE = 128 };
enum { PAIR_SKIP = 0, PAIR_PARTIAL = 1, PAIR_FULL = 2 };


static inline int32_t doc_of(const int32_t *doc, int t) { return doc ? doc[t] : 0; }

// Queries [i0, i1) against keys [j0, j1); doc is the batch row's doc ids or NULL. Documents are
// numbered in token order, so a range's ids span [doc(first), doc(last)].
static int classify(const gm_attn_mask *m, const int32_t *doc, int i0, int i1, int j0, int j1) {
    if (j0 > i1 - 1) return PAIR_SKIP;
    int W = m->window_blocks, blk = m->block;
    if (W > 0 && i0 / blk - (j1 - 1) / blk >= W) return PAIR_SKIP;
    int32_t lo_q = doc_of(doc, i0), hi_q = doc_of(doc, i1 - 1), lo_k = doc_of(doc, j0), hi_k = doc_of(doc, j1 - 1);
    if (lo_q > hi_k || lo_k > hi_q) return PAIR_SKIP;
    int full = j1 - 1 <= i0 && lo_q == hi_k && lo_k == hi_q && (W <= 0 || (i1 - 1) / blk - j0 / blk < W);
    return full ? PAIR_FULL : PAIR_PARTIAL;
}

// Masked-out entries of a partial tile S (ld ldS, rows i0.., columns j0..) become -INFINITY.
static void mask_tile(gm_real *S, int ldS, const gm_attn_mask *m, const int32_t *doc, int i0, int i1, int j0,
                      int j1) {
    for (int i = i0; i < i1; i++) {
        gm_real *s = S + (size_t)(i - i0) * ldS;
        int32_t dq = doc_of(doc, i);
        for (int j = j0; j < j1; j++)
            if (!gm_attn_allowed(m, i, j, dq, doc_of(doc, j))) s[j - j0] = -INFINITY;
    }
}

void gm_cpu_attn_fwd(const gm_backend *be, gm_actval *out_act, gm_real *lse, const gm_actval *q_act, const gm_actval *k_act,
                     const gm_actval *v_act, int B, int T, int NH, int HD, double scale, gm_attn_mask mask) {
    gm_real *out = gm_as_real(out_act);
    const gm_real *q = gm_as_real(q_act);
    const gm_real *k = gm_as_real(k_act);
    const gm_real *v = gm_as_real(v_act);
    (void)be;
    gm_cpu_blas_single_thread();
    const int ld = NH * HD, nt = (T + TILE - 1) / TILE;
#pragma omp parallel if ((size_t)B * NH * T * T * HD > 2 * GM_CPU_PAR_MIN)
    {
        gm_real *S = malloc(sizeof(gm_real) * (size_t)TILE * nt * TILE);  // one query tile's scores
        int *cls = malloc(sizeof(int) * (size_t)nt);
#pragma omp for collapse(3) schedule(dynamic, 1)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int qt = 0; qt < nt; qt++) {
                    const int32_t *doc = mask.doc ? mask.doc + (size_t)b * T : NULL;
                    int i0 = qt * TILE, i1 = i0 + TILE < T ? i0 + TILE : T, bq = i1 - i0;
                    const int ldS = nt * TILE;
                    const gm_real *Q = q + ((size_t)b * T * NH + h) * HD + (size_t)i0 * ld;
                    for (int kt = 0; kt <= qt; kt++) {
                        int j0 = kt * TILE, j1 = j0 + TILE < T ? j0 + TILE : T;
                        cls[kt] = classify(&mask, doc, i0, i1, j0, j1);
                        if (cls[kt] == PAIR_SKIP) continue;
                        const gm_real *K = k + ((size_t)b * T * NH + h) * HD + (size_t)j0 * ld;
                        GM_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, bq, j1 - j0, HD, scale, Q, ld, K, ld, 0.0, S + j0,
                             ldS);
                        if (cls[kt] == PAIR_PARTIAL) mask_tile(S + j0, ldS, &mask, doc, i0, i1, j0, j1);
                    }
                    for (int r = 0; r < bq; r++) {
                        gm_real *s = S + (size_t)r * ldS, mx = -INFINITY;
                        for (int kt = 0; kt <= qt; kt++) {
                            if (cls[kt] == PAIR_SKIP) continue;
                            int j0 = kt * TILE, j1 = j0 + TILE < T ? j0 + TILE : T;
#pragma omp simd reduction(max : mx)
                            for (int j = j0; j < j1; j++) mx = s[j] > mx ? s[j] : mx;
                        }
                        double sum = 0;
                        for (int kt = 0; kt <= qt; kt++) {
                            if (cls[kt] == PAIR_SKIP) continue;
                            int j0 = kt * TILE, j1 = j0 + TILE < T ? j0 + TILE : T;
                            gm_real ps = 0;
#pragma omp simd reduction(+ : ps)
                            for (int j = j0; j < j1; j++) {
                                gm_real p = s[j] == -INFINITY ? 0 : gm_fexp(s[j] - mx);
                                s[j] = p;
                                ps += p;
                            }
                            sum += ps;
                        }
                        gm_real inv = (gm_real)(1.0 / sum);
                        for (int kt = 0; kt <= qt; kt++) {
                            if (cls[kt] == PAIR_SKIP) continue;
                            int j0 = kt * TILE, j1 = j0 + TILE < T ? j0 + TILE : T;
#pragma omp simd
                            for (int j = j0; j < j1; j++) s[j] *= inv;
                        }
                        lse[((size_t)b * NH + h) * T + i0 + r] = (gm_real)(mx + log(sum));
                    }
                    gm_real *O = out + ((size_t)b * T * NH + h) * HD + (size_t)i0 * ld;
                    double beta = 0;
                    for (int kt = 0; kt <= qt; kt++) {
                        if (cls[kt] == PAIR_SKIP) continue;
                        int j0 = kt * TILE, j1 = j0 + TILE < T ? j0 + TILE : T;
                        const gm_real *V = v + ((size_t)b * T * NH + h) * HD + (size_t)j0 * ld;
                        GM_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, HD, j1 - j0, 1.0, S + j0, ldS, V, ld, beta,
                             O, ld);
                        beta = 1;
                    }
                }
        free(S);
        free(cls);
    }
}

void gm_cpu_attn_bwd(const gm_backend *be, gm_actval *dq_act, gm_actval *dk_act, gm_actval *dv_act, gm_grad_write dqkv_write,
                     const gm_actval *dout_act, const gm_actval *q_act, const gm_actval *k_act, const gm_actval *v_act, const gm_actval *out_act,
                     const gm_real *lse, int B, int T, int NH, int HD, double scale, gm_attn_mask mask) {
    gm_real *dq = gm_as_real(dq_act);
    gm_real *dk = gm_as_real(dk_act);
    gm_real *dv = gm_as_real(dv_act);
    const gm_real *dout = gm_as_real(dout_act);
    const gm_real *q = gm_as_real(q_act);
    const gm_real *k = gm_as_real(k_act);
    const gm_real *v = gm_as_real(v_act);
    const gm_real *out = gm_as_real(out_act);
    (void)be;
    gm_cpu_blas_single_thread();
    const int ld = NH * HD, nt = (T + TILE - 1) / TILE;
    gm_real *D = malloc(sizeof(gm_real) * (size_t)B * NH * T);  // (B, NH, T): rowsum(dO o O)
#pragma omp parallel if ((size_t)B * NH * T * T * HD > 2 * GM_CPU_PAR_MIN)
    {
        gm_real *P = malloc(sizeof(gm_real) * (size_t)TILE * TILE), *dS = malloc(sizeof(gm_real) * (size_t)TILE * TILE);
#pragma omp for collapse(2) schedule(dynamic, 1)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                const int32_t *doc = mask.doc ? mask.doc + (size_t)b * T : NULL;
                size_t base = ((size_t)b * T * NH + h) * HD;  // element (b, 0, h, 0)
                gm_real *Dbh = D + ((size_t)b * NH + h) * T;
                const gm_real *lbh = lse + ((size_t)b * NH + h) * T;
                for (int i = 0; i < T; i++) {
                    const gm_real *o = out + base + (size_t)i * ld, *g = dout + base + (size_t)i * ld;
                    gm_real acc = 0;
                    for (int d = 0; d < HD; d++) acc += o[d] * g[d];
                    Dbh[i] = acc;
                    // The tile GEMMs below add into this head's rows: a SET starts them at zero.
                    if (dqkv_write == GM_GRAD_SET)
                        for (int d = 0; d < HD; d++) dq[base + (size_t)i * ld + d] = dk[base + (size_t)i * ld + d] =
                            dv[base + (size_t)i * ld + d] = 0;
                }
                for (int kt = 0; kt < nt; kt++) {
                    int j0 = kt * TILE, j1 = j0 + TILE < T ? j0 + TILE : T, bk = j1 - j0;
                    for (int qt = kt; qt < nt; qt++) {
                        int i0 = qt * TILE, i1 = i0 + TILE < T ? i0 + TILE : T, bq = i1 - i0;
                        int cls = classify(&mask, doc, i0, i1, j0, j1);
                        if (cls == PAIR_SKIP) continue;
                        const gm_real *Q = q + base + (size_t)i0 * ld, *K = k + base + (size_t)j0 * ld;
                        const gm_real *V = v + base + (size_t)j0 * ld, *G = dout + base + (size_t)i0 * ld;
                        GM_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, HD, scale, Q, ld, K, ld, 0.0, P, bk);
                        if (cls == PAIR_PARTIAL) mask_tile(P, bk, &mask, doc, i0, i1, j0, j1);
                        GM_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, bq, bk, HD, 1.0, G, ld, V, ld, 0.0, dS, bk);
                        for (int r = 0; r < bq; r++) {
                            gm_real *pr = P + (size_t)r * bk, *dr = dS + (size_t)r * bk;
                            const gm_real l = lbh[i0 + r], Dr = Dbh[i0 + r], sc = (gm_real)scale;
#pragma omp simd
                            for (int c = 0; c < bk; c++) {
                                gm_real p = pr[c] == -INFINITY ? 0 : gm_fexp(pr[c] - l);
                                pr[c] = p;
                                dr[c] = p * (dr[c] - Dr) * sc;
                            }
                        }
                        // dV (bk, HD) += P^T dO ; dK (bk, HD) += dS^T Q ; dQ (bq, HD) += dS K
                        GM_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, bk, HD, bq, 1.0, P, bk, G, ld, 1.0,
                             dv + base + (size_t)j0 * ld, ld);
                        GM_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, bk, HD, bq, 1.0, dS, bk, Q, ld, 1.0,
                             dk + base + (size_t)j0 * ld, ld);
                        GM_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, HD, bk, 1.0, dS, bk, K, ld, 1.0,
                             dq + base + (size_t)i0 * ld, ld);
                    }
                }
            }
        free(P);
        free(dS);
    }
    free(D);
}

static inline gm_real dot(const gm_real *a, const gm_real *b, int n) {
    gm_real s = 0;
    for (int d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

// Index of element (b, t, h, 0) of a (B, T, NH, HD) tensor.
static inline size_t at(int b, int t, int h, int T, int NH, int HD) { return (((size_t)b * T + t) * NH + h) * HD; }

// ---- the dense reference: explicit (T, T) mask and probabilities ----

void gm_cpu_attn_dense_mask(uint8_t *mask, int B, int T, gm_attn_mask m) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                int32_t di = m.doc ? m.doc[(size_t)b * T + i] : 0, dj = m.doc ? m.doc[(size_t)b * T + j] : 0;
                mask[((size_t)b * T + i) * T + j] = (uint8_t)gm_attn_allowed(&m, i, j, di, dj);
            }
}

// P (T, T) for one (b, h): row softmax of scale*q k^T over the mask; returns lse per row.
static void dense_probs(gm_real *P, gm_real *lse_row, const gm_real *q, const gm_real *k, int b, int h, int T, int NH,
                        int HD, double scale, const uint8_t *mask) {
    for (int i = 0; i < T; i++) {
        double mx = -INFINITY, sum = 0;
        const uint8_t *mrow = mask + ((size_t)b * T + i) * T;
        for (int j = 0; j < T; j++) {
            double s = mrow[j] ? scale * dot(q + at(b, i, h, T, NH, HD), k + at(b, j, h, T, NH, HD), HD) : -INFINITY;
            P[(size_t)i * T + j] = (gm_real)s;
            mx = s > mx ? s : mx;
        }
        for (int j = 0; j < T; j++) sum += mrow[j] ? exp(P[(size_t)i * T + j] - mx) : 0;
        for (int j = 0; j < T; j++)
            P[(size_t)i * T + j] = mrow[j] ? (gm_real)(exp(P[(size_t)i * T + j] - mx) / sum) : 0;
        if (lse_row) lse_row[i] = (gm_real)(mx + log(sum));
    }
}

void gm_cpu_attn_fwd_dense(gm_real *out, gm_real *lse, const gm_real *q, const gm_real *k, const gm_real *v, int B,
                           int T, int NH, int HD, double scale, const uint8_t *mask) {
    gm_real *P = malloc(sizeof(gm_real) * (size_t)T * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            dense_probs(P, lse + ((size_t)b * NH + h) * T, q, k, b, h, T, NH, HD, scale, mask);
            for (int i = 0; i < T; i++)
                for (int d = 0; d < HD; d++) {
                    double acc = 0;
                    for (int j = 0; j < T; j++) acc += (double)P[(size_t)i * T + j] * v[at(b, j, h, T, NH, HD) + d];
                    out[at(b, i, h, T, NH, HD) + d] = (gm_real)acc;
                }
        }
    free(P);
}

// Textbook softmax backward: dP = dout v^T, dS = P * (dP - rowsum(P * dP)).
void gm_cpu_attn_bwd_dense(gm_real *dq, gm_real *dk, gm_real *dv, const gm_real *dout, const gm_real *q,
                           const gm_real *k, const gm_real *v, int B, int T, int NH, int HD, double scale,
                           const uint8_t *mask) {
    gm_real *P = malloc(sizeof(gm_real) * (size_t)T * T), *dS = malloc(sizeof(gm_real) * (size_t)T * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            dense_probs(P, NULL, q, k, b, h, T, NH, HD, scale, mask);
            for (int i = 0; i < T; i++) {
                double rowsum = 0;
                for (int j = 0; j < T; j++) {
                    double dp = dot(dout + at(b, i, h, T, NH, HD), v + at(b, j, h, T, NH, HD), HD);
                    dS[(size_t)i * T + j] = (gm_real)dp;
                    rowsum += P[(size_t)i * T + j] * dp;
                }
                for (int j = 0; j < T; j++)
                    dS[(size_t)i * T + j] = (gm_real)(P[(size_t)i * T + j] * (dS[(size_t)i * T + j] - rowsum) * scale);
            }
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++) {
                    gm_real ds = dS[(size_t)i * T + j], p = P[(size_t)i * T + j];
                    for (int d = 0; d < HD; d++) {
                        dq[at(b, i, h, T, NH, HD) + d] += ds * k[at(b, j, h, T, NH, HD) + d];
                        dk[at(b, j, h, T, NH, HD) + d] += ds * q[at(b, i, h, T, NH, HD) + d];
                        dv[at(b, j, h, T, NH, HD) + d] += p * dout[at(b, i, h, T, NH, HD) + d];
                    }
                }
        }
    free(P);
    free(dS);
}
