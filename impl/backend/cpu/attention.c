// Causal softmax attention with document masking and a sliding window counted in blocks, on
// (B, T, NH, HD). The fast kernel walks (query block, key block) pairs the way the records'
// FlexAttention block mask does: pairs outside the window or with disjoint documents are skipped,
// "full" pairs need no per-element test, the rest apply the token rule. Forward keeps only the
// log-sum-exp per row; the backward recomputes probabilities (FlashAttention-2 style: dq by
// query rows, then dk/dv by key rows, so both passes are parallel and deterministic).
#include <math.h>
#include <stdlib.h>

#include "backend/attn_mask.h"
#include "backend/cpu/cpu_ops.h"

enum { PAIR_SKIP = 0, PAIR_PARTIAL = 1, PAIR_FULL = 2 };

typedef struct {
    gm_attn_mask m;
    const int32_t *doc;  // row b of the mask's doc array, or NULL
    int T, blk, nblk;
} mask_row;

static mask_row mask_row_of(gm_attn_mask m, int b, int T) {
    mask_row r = {m, m.doc ? m.doc + (size_t)b * T : NULL, T, 0, 0};
    // Without a window the block size only groups work; a whole row is one block then.
    r.blk = m.window_blocks > 0 ? m.block : (m.block > 0 ? m.block : T);
    r.nblk = (T + r.blk - 1) / r.blk;
    return r;
}

static inline int32_t doc_at(const mask_row *r, int t) { return r->doc ? r->doc[t] : 0; }

// Documents are numbered in token order, so a block's ids span [doc(first), doc(last)].
static int classify(const mask_row *r, int Q, int K) {
    if (K > Q) return PAIR_SKIP;
    if (r->m.window_blocks > 0 && Q - K >= r->m.window_blocks) return PAIR_SKIP;
    int qend = (Q + 1) * r->blk < r->T ? (Q + 1) * r->blk : r->T;
    int kend = (K + 1) * r->blk < r->T ? (K + 1) * r->blk : r->T;
    int32_t lo_q = doc_at(r, Q * r->blk), hi_q = doc_at(r, qend - 1);
    int32_t lo_k = doc_at(r, K * r->blk), hi_k = doc_at(r, kend - 1);
    if (lo_q > hi_k || lo_k > hi_q) return PAIR_SKIP;
    return (Q > K && lo_q == hi_k && lo_k == hi_q) ? PAIR_FULL : PAIR_PARTIAL;
}

static inline int pair_allows(const mask_row *r, int cls, int i, int j) {
    return cls == PAIR_FULL || gm_attn_allowed(&r->m, i, j, doc_at(r, i), doc_at(r, j));
}

static inline gm_real dot(const gm_real *a, const gm_real *b, int n) {
    gm_real s = 0;
    for (int d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

// Index of element (b, t, h, 0) of a (B, T, NH, HD) tensor.
static inline size_t at(int b, int t, int h, int T, int NH, int HD) { return (((size_t)b * T + t) * NH + h) * HD; }

void gm_cpu_attn_fwd(const gm_backend *be, gm_real *out, gm_real *lse, const gm_real *q, const gm_real *k,
                     const gm_real *v, int B, int T, int NH, int HD, double scale, gm_attn_mask mask) {
    (void)be;
#pragma omp parallel if ((size_t)B * NH * T * T * HD > 2 * GM_CPU_PAR_MIN)
    {
        gm_real *s = malloc(sizeof(gm_real) * (size_t)T);  // scores of one query row
#pragma omp for collapse(3) schedule(dynamic, 16)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < T; i++) {
                    mask_row r = mask_row_of(mask, b, T);
                    const gm_real *qi = q + at(b, i, h, T, NH, HD);
                    int Q = i / r.blk;
                    gm_real mx = -INFINITY;
                    for (int j = 0; j <= i; j++) s[j] = -INFINITY;
                    for (int K = 0; K <= Q; K++) {
                        int cls = classify(&r, Q, K);
                        if (cls == PAIR_SKIP) continue;
                        int jend = (K + 1) * r.blk - 1 < i ? (K + 1) * r.blk - 1 : i;
                        for (int j = K * r.blk; j <= jend; j++) {
                            if (!pair_allows(&r, cls, i, j)) continue;
                            s[j] = (gm_real)scale * dot(qi, k + at(b, j, h, T, NH, HD), HD);
                            mx = s[j] > mx ? s[j] : mx;
                        }
                    }
                    gm_real *oi = out + at(b, i, h, T, NH, HD);
                    for (int d = 0; d < HD; d++) oi[d] = 0;
                    gm_real sum = 0;
                    for (int j = 0; j <= i; j++) {
                        if (s[j] == -INFINITY) continue;
                        gm_real p = (gm_real)exp(s[j] - mx);
                        sum += p;
                        const gm_real *vj = v + at(b, j, h, T, NH, HD);
                        for (int d = 0; d < HD; d++) oi[d] += p * vj[d];
                    }
                    for (int d = 0; d < HD; d++) oi[d] /= sum;
                    lse[((size_t)b * NH + h) * T + i] = mx + (gm_real)log(sum);
                }
        free(s);
    }
}

// With P = softmax(S), S = scale*q k^T, D_i = dout_i . out_i = sum_j P_ij dP_ij:
// dS_ij = P_ij (dout_i . v_j - D_i); dq_i += scale sum_j dS_ij k_j; dk_j += scale sum_i dS_ij q_i;
// dv_j += sum_i P_ij dout_i.
void gm_cpu_attn_bwd(const gm_backend *be, gm_real *dq, gm_real *dk, gm_real *dv, const gm_real *dout, const gm_real *q,
                     const gm_real *k, const gm_real *v, const gm_real *out, const gm_real *lse, int B, int T, int NH,
                     int HD, double scale, gm_attn_mask mask) {
    (void)be;
    gm_real *D = malloc(sizeof(gm_real) * (size_t)B * NH * T);  // (B, NH, T)
    // Pass 1, by query rows: D_i and dq_i.
#pragma omp parallel for collapse(3) schedule(dynamic, 16) if ((size_t)B * NH * T * T * HD > 2 * GM_CPU_PAR_MIN)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                mask_row r = mask_row_of(mask, b, T);
                size_t ri = ((size_t)b * NH + h) * T + i;
                const gm_real *qi = q + at(b, i, h, T, NH, HD), *doi = dout + at(b, i, h, T, NH, HD);
                gm_real Di = dot(doi, out + at(b, i, h, T, NH, HD), HD);
                D[ri] = Di;
                gm_real *dqi = dq + at(b, i, h, T, NH, HD);
                int Q = i / r.blk;
                for (int K = 0; K <= Q; K++) {
                    int cls = classify(&r, Q, K);
                    if (cls == PAIR_SKIP) continue;
                    int jend = (K + 1) * r.blk - 1 < i ? (K + 1) * r.blk - 1 : i;
                    for (int j = K * r.blk; j <= jend; j++) {
                        if (!pair_allows(&r, cls, i, j)) continue;
                        const gm_real *kj = k + at(b, j, h, T, NH, HD);
                        gm_real p = (gm_real)exp((gm_real)scale * dot(qi, kj, HD) - lse[ri]);
                        gm_real ds = p * (dot(doi, v + at(b, j, h, T, NH, HD), HD) - Di) * (gm_real)scale;
                        for (int d = 0; d < HD; d++) dqi[d] += ds * kj[d];
                    }
                }
            }
            // Pass 2, by key rows: dk_j and dv_j over the queries that see key j.
#pragma omp parallel for collapse(3) schedule(dynamic, 16) if ((size_t)B * NH * T * T * HD > 2 * GM_CPU_PAR_MIN)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int j = 0; j < T; j++) {
                mask_row r = mask_row_of(mask, b, T);
                const gm_real *kj = k + at(b, j, h, T, NH, HD), *vj = v + at(b, j, h, T, NH, HD);
                gm_real *dkj = dk + at(b, j, h, T, NH, HD), *dvj = dv + at(b, j, h, T, NH, HD);
                int K = j / r.blk;
                for (int Q = K; Q < r.nblk; Q++) {
                    int cls = classify(&r, Q, K);
                    if (cls == PAIR_SKIP) continue;
                    int ibeg = Q * r.blk > j ? Q * r.blk : j;
                    int iend = (Q + 1) * r.blk < T ? (Q + 1) * r.blk : T;
                    for (int i = ibeg; i < iend; i++) {
                        if (!pair_allows(&r, cls, i, j)) continue;
                        size_t ri = ((size_t)b * NH + h) * T + i;
                        const gm_real *qi = q + at(b, i, h, T, NH, HD), *doi = dout + at(b, i, h, T, NH, HD);
                        gm_real p = (gm_real)exp((gm_real)scale * dot(qi, kj, HD) - lse[ri]);
                        gm_real ds = p * (dot(doi, vj, HD) - D[ri]) * (gm_real)scale;
                        for (int d = 0; d < HD; d++) {
                            dkj[d] += ds * qi[d];
                            dvj[d] += p * doi[d];
                        }
                    }
                }
            }
    free(D);
}

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
