#include "backend/cost.h"

#include <stdio.h>

#define F ((double)sizeof(gm_real))  // bytes per parameter, statistic or optimizer-state element
// Bytes per activation element: the priced backend's (gm_kernel_cost.act_bytes), gm_real's when unset.
#define E (c->act_bytes > 0 ? c->act_bytes : F)

// Start a kernel's cost: everything but the priced backend's element size.
static void begin(gm_kernel_cost *c, double flops, double bytes) {
    *c = (gm_kernel_cost){.act_bytes = c->act_bytes, .flops = flops, .bytes = bytes};
}

// How many times a gradient output is read besides written: once when added into.
static int written_read(gm_grad_write write) { return write == GM_GRAD_ADD; }

static void shape(gm_kernel_cost *c, const char *fmt, long long a, long long b, long long d, long long e) {
    snprintf(c->shape, sizeof c->shape, fmt, a, b, d, e);
}

double gm_cost_ns_flops(int rows, int cols, int steps) {
    double m = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
    return steps * (3 * m * m * n + 2 * m * m * m);
}

double gm_cost_attn_pairs(int T, int block, int window_blocks) {
    double pairs = 0;
    for (long long q = 0; q < T; q++) {
        long long lo = window_blocks > 0 ? (q / block - window_blocks + 1) * block : 0;
        pairs += (double)(q - (lo > 0 ? lo : 0) + 1);
    }
    return pairs;
}

void gm_cost_copy(gm_kernel_cost *c, void *dst, const void *src, size_t bytes) {
    (void)dst, (void)src;
    begin(c, 0, 2.0 * (double)bytes);
    shape(c, "%lld bytes", (long long)bytes, 0, 0, 0);
}

void gm_cost_fill(gm_kernel_cost *c, gm_real *p, gm_real value, size_t n) {
    (void)p, (void)value;
    begin(c, 0, F * (double)n);
    shape(c, "%lld", (long long)n, 0, 0, 0);
}

// Gather: reads the rows and ids, writes out. Scatter-add: reads dout, read-modify-writes rows.
void gm_cost_embed_fwd(gm_kernel_cost *c, gm_actval *out, const int32_t *ids, const gm_real *table, int N, int C) {
    (void)out, (void)ids, (void)table;
    begin(c, 0, (E + F) * N * C + 4.0 * N);
    shape(c, "%lldx%lld", N, C, 0, 0);
}
void gm_cost_embed_bwd(gm_kernel_cost *c, gm_real *dtable, const int32_t *ids, const gm_actval *dout, int N, int V,
                       int C) {
    (void)dtable, (void)ids, (void)dout;
    begin(c, (double)N * C, E * N * C + 2 * F * N * C + 4.0 * N);
    shape(c, "%lldx%lld into %lldx%lld", N, C, V, C);
}

// fwd: 2 N C OC flops, reads inp and W (and the residual), writes out. bwd: each wanted product 2 N C
// OC, reads dout and the other operand, writes its output (dW and an added dinp: read-modify-writes).
void gm_cost_matmul_fwd(gm_kernel_cost *c, gm_actval *out, const gm_actval *inp, const gm_real *W, int N, int C, int OC,
                        double scale, const gm_actval *res) {
    (void)out, (void)inp, (void)W, (void)scale;
    begin(c, 2.0 * N * C * OC, E * ((double)N * C + (1.0 + (res != NULL)) * N * OC) + F * (double)OC * C);
    shape(c, res ? "%lldx%lld @ %lldx%lld^T +res" : "%lldx%lld @ %lldx%lld^T", N, C, OC, C);
    // out^T (OC, N) = W inp^T (+ res^T): row-major (R, C) is column-major (C, R)
    c->gemm[c->n_gemm++] = (gm_gemm_shape){1, 0, OC, N, C, res != NULL};
}
void gm_cost_matmul_bwd(gm_kernel_cost *c, gm_actval *dinp, gm_grad_write dinp_write, gm_real *dW, const gm_actval *dout,
                        const gm_actval *inp, const gm_real *W, int N, int C, int OC) {
    (void)dout, (void)inp, (void)W;
    const double nc = (double)N * C, oc = (double)OC * C, no = (double)N * OC;
    begin(c, 0, 0);
    if (dinp) c->flops += 2 * nc * OC, c->bytes += E * (no + (1 + written_read(dinp_write)) * nc) + F * oc;
    if (dW) c->flops += 2 * nc * OC, c->bytes += E * (no + nc) + F * 2 * oc;
    shape(c, "%lldx%lld @ %lldx%lld^T", N, C, OC, C);
    // dinp^T (C, N) = W^T dout^T; dW^T (C, OC) = inp^T dout
    if (dinp) c->gemm[c->n_gemm++] = (gm_gemm_shape){0, 0, C, N, OC, written_read(dinp_write)};
    if (dW) c->gemm[c->n_gemm++] = (gm_gemm_shape){0, 1, C, OC, N, 1};
}

// ~3 flops per element (square-accumulate, scale), reads x, writes out and rstd; bwd ~6, reads
// dout, x, rstd, writes dinp.
void gm_cost_rmsnorm_fwd(gm_kernel_cost *c, gm_actval *out, gm_real *rstd, const gm_actval *inp, int N, int C,
                         double eps) {
    (void)out, (void)rstd, (void)inp, (void)eps;
    begin(c, 3.0 * N * C, E * 2.0 * N * C + F * N);
    shape(c, "%lldx%lld", N, C, 0, 0);
}
void gm_cost_rmsnorm_bwd(gm_kernel_cost *c, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                         const gm_actval *inp, const gm_real *rstd, int N, int C) {
    (void)dinp, (void)dout, (void)inp, (void)rstd;
    begin(c, 6.0 * N * C, E * (3.0 + written_read(dinp_write)) * N * C + F * N);
    shape(c, "%lldx%lld", N, C, 0, 0);
}

// 3 flops per element; reads x and the (T, HD/2) cos and sin tables, writes out (bwd: dinp); a view
// (token stride ld) moves the same elements.
void gm_cost_rotary_fwd(gm_kernel_cost *c, gm_actval *out, const gm_actval *inp, const gm_real *cos_t,
                        const gm_real *sin_t, int B, int T, int NH, int HD, int ld) {
    (void)out, (void)inp, (void)cos_t, (void)sin_t, (void)ld;
    const double n = (double)B * T * NH * HD;
    begin(c, 3 * n, E * 2 * n + F * (double)T * HD);
    shape(c, "%lldx%lldx%lldx%lld", B, T, NH, HD);
}
void gm_cost_rotary_bwd(gm_kernel_cost *c, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                        const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, int ld) {
    (void)dinp, (void)dout, (void)cos_t, (void)sin_t, (void)ld;
    const double n = (double)B * T * NH * HD;
    begin(c, 3 * n, E * (2 + written_read(dinp_write)) * n + F * (double)T * HD);
    shape(c, "%lldx%lldx%lldx%lld", B, T, NH, HD);
}

// QK-norm and rotary fused: the two kernels' flops; reads x and the tables, writes out and rstd
// (bwd: reads dout, x, rstd and the tables, writes dinp); the normed tensor never stored.
void gm_cost_qknorm_rotary_fwd(gm_kernel_cost *c, gm_actval *out, gm_real *rstd, const gm_actval *inp,
                               const gm_real *cos_t, const gm_real *sin_t, int B, int T, int NH, int HD, int ld,
                               double eps) {
    (void)out, (void)rstd, (void)inp, (void)cos_t, (void)sin_t, (void)ld, (void)eps;
    const double n = (double)B * T * NH * HD, rows = (double)B * T * NH;
    begin(c, 6 * n, E * 2 * n + F * (rows + (double)T * HD));
    shape(c, "%lldx%lldx%lldx%lld", B, T, NH, HD);
}
void gm_cost_qknorm_rotary_bwd(gm_kernel_cost *c, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                               const gm_actval *inp, const gm_real *rstd, const gm_real *cos_t, const gm_real *sin_t,
                               int B, int T, int NH, int HD, int ld) {
    (void)dinp, (void)dout, (void)inp, (void)rstd, (void)cos_t, (void)sin_t, (void)ld;
    const double n = (double)B * T * NH * HD, rows = (double)B * T * NH;
    begin(c, 9 * n, E * (3 + written_read(dinp_write)) * n + F * (rows + (double)T * HD));
    shape(c, "%lldx%lldx%lldx%lld", B, T, NH, HD);
}

// Over the (q, k) pairs the causal window admits (documents not counted: an upper bound when a
// document mask is on): fwd QK^T and PV, 4 HD flops per pair; bwd recomputes QK^T and forms dV, dP,
// dQ, dK, 10 HD per pair (exponentials not counted). Bytes as if K/V stayed in cache: fwd reads q,
// k, v, writes out and lse; bwd reads q, k, v, out, dout, lse, writes dq, dk, dv.
static void attn_cost(gm_kernel_cost *c, int B, int T, int NH, int HD, gm_attn_mask mask, double flops_per_pair,
                      double passes) {
    const double pairs = (double)B * NH * gm_cost_attn_pairs(T, mask.block, mask.window_blocks);
    const double n = (double)B * T * NH * HD;
    begin(c, flops_per_pair * HD * pairs, E * passes * n + F * (double)B * NH * T);
    snprintf(c->shape, sizeof c->shape, "%dx%dx%dx%d w%d%s", B, T, NH, HD, mask.window_blocks, mask.doc ? " doc" : "");
}
void gm_cost_attn_fwd(gm_kernel_cost *c, gm_actval *out, gm_real *lse, const gm_actval *q, const gm_actval *k,
                      const gm_actval *v, int B, int T, int NH, int HD, double scale, gm_attn_mask mask) {
    (void)out, (void)lse, (void)q, (void)k, (void)v, (void)scale;
    attn_cost(c, B, T, NH, HD, mask, 4, 4);
}
void gm_cost_attn_bwd(gm_kernel_cost *c, gm_actval *dq, gm_actval *dk, gm_actval *dv, gm_grad_write dqkv_write,
                      const gm_actval *dout, const gm_actval *q, const gm_actval *k, const gm_actval *v, const gm_actval *out,
                      const gm_real *lse, int B, int T, int NH, int HD, double scale, gm_attn_mask mask) {
    (void)dq, (void)dk, (void)dv, (void)dout, (void)q, (void)k, (void)v, (void)out, (void)lse, (void)scale;
    attn_cost(c, B, T, NH, HD, mask, 10, 8 + 3 * written_read(dqkv_write));
}

// ReLU^2 ~2 flops per element (GELU counted alike), reads x writes out; bwd ~3, reads dout and x,
// writes dinp.
void gm_cost_act_fwd(gm_kernel_cost *c, gm_act act, gm_actval *out, const gm_actval *inp, size_t n) {
    (void)out, (void)inp;
    begin(c, 2.0 * (double)n, E * 2.0 * (double)n);
    snprintf(c->shape, sizeof c->shape, "%zu %s", n, act == GM_ACT_GELU ? "gelu" : "relu2");
}
void gm_cost_act_bwd(gm_kernel_cost *c, gm_act act, gm_actval *dinp, gm_grad_write dinp_write, const gm_actval *dout,
                     const gm_actval *inp, size_t n) {
    (void)dinp, (void)dout, (void)inp;
    begin(c, 3.0 * (double)n, E * (3.0 + written_read(dinp_write)) * (double)n);
    snprintf(c->shape, sizeof c->shape, "%zu %s", n, act == GM_ACT_GELU ? "gelu" : "relu2");
}

// out = a x + b y: 3 flops per element, reads x (and y; a view of x the same elements), writes out.
// bwd, one pass on every backend:
// reads dout, and x (y) where its coefficient is learnable (the dot product); writes dx, dy (read
// too when added into). Without y there is no dy or dpb.
void gm_cost_lincomb_fwd(gm_kernel_cost *c, gm_actval *out, double ca, const gm_real *pa, const gm_actval *x, double cb,
                         const gm_real *pb, const gm_actval *y, size_t n, int x_cols, int x_ld) {
    (void)out, (void)ca, (void)pa, (void)x, (void)cb, (void)pb, (void)x_cols, (void)x_ld;
    const double dn = (double)n;
    begin(c, (y ? 3 : 1) * dn, E * (y ? 3 : 2) * dn);
    snprintf(c->shape, sizeof c->shape, "%zu%s", n, pa || pb ? " learnable" : "");
}
// The two kernels' flops; reads x (and y), writes sum, out and rstd: the norm's read of sum saved.
void gm_cost_lincomb_rmsnorm_fwd(gm_kernel_cost *c, gm_actval *sum, gm_actval *out, gm_real *rstd, double ca,
                                 const gm_real *pa, const gm_actval *x, double cb, const gm_real *pb, const gm_actval *y,
                                 int N, int C, double eps) {
    (void)sum, (void)out, (void)rstd, (void)ca, (void)pa, (void)x, (void)cb, (void)eps;
    const double nc = (double)N * C;
    begin(c, ((y ? 3 : 1) + 3) * nc, E * (y ? 4 : 3) * nc + F * N);
    snprintf(c->shape, sizeof c->shape, "%dx%d%s", N, C, pa || pb ? " learnable" : "");
}

void gm_cost_lincomb_bwd(gm_kernel_cost *c, gm_actval *dx, gm_grad_write dx_write, gm_actval *dy, gm_grad_write dy_write,
                         gm_real *dpa, gm_real *dpb, const gm_actval *dout, double ca, const gm_real *pa,
                         const gm_actval *x, double cb, const gm_real *pb, const gm_actval *y, size_t n, int x_cols,
                         int x_ld) {
    (void)dout, (void)ca, (void)pa, (void)x, (void)cb, (void)pb, (void)x_cols, (void)x_ld;
    if (!y) dy = NULL, dpb = NULL;
    const double dn = (double)n;
    const int outs = (dx != NULL) + (dy != NULL), dots = (dpa != NULL) + (dpb != NULL);
    const int reads = (dx ? written_read(dx_write) : 0) + (dy ? written_read(dy_write) : 0);
    begin(c, (outs + 2 * dots) * dn, E * (1 + outs + reads + dots) * dn);
    snprintf(c->shape, sizeof c->shape, "%zu%s", n, dots ? " learnable" : "");
}

// Softcap + cross-entropy over (N, V) logits: max, tanh cap, exp-sum, ~5 flops per logit; with
// dlogits ~8 and a second pass that writes them.
void gm_cost_xent_fwd_bwd(gm_kernel_cost *c, gm_real *losses, gm_actval *dlogits, const gm_actval *logits,
                          const int32_t *targets, int N, int V, double cap, double dloss_scale) {
    (void)losses, (void)logits, (void)targets, (void)dloss_scale;
    const double nv = (double)N * V;
    begin(c, (dlogits ? 8 : 5) * nv, E * (dlogits ? 2 : 1) * nv + F * N);
    snprintf(c->shape, sizeof c->shape, "%dx%d cap %g%s", N, V, cap, dlogits ? " +grad" : "");
}

// ~13 flops per element (moments, bias-corrected step with sqrt and divide); reads g (twice with
// normalize_grad), read-modify-writes p, m, v.
void gm_cost_adam_update(gm_kernel_cost *c, gm_real *p, const gm_real *g, gm_real *m, gm_real *v, int count,
                         const gm_adam_span *spans, const gm_adam_args *a) {
    (void)p, (void)g, (void)m, (void)v;
    size_t n = 0;
    for (int i = 0; i < count; i++) n += spans[i].n;
    const double dn = (double)n;
    begin(c, (13 + 2 * a->normalize_grad) * dn, F * (7 + a->normalize_grad) * dn);
    snprintf(c->shape, sizeof c->shape, "%zu in %d tensors", n, count);
}

// buf = mu buf + gmul g (3 flops), u = ... (3 more): reads g, read-modify-writes buf, writes u.
void gm_cost_momentum(gm_kernel_cost *c, gm_real *buf, gm_real *u, const gm_real *g, size_t n, double mu, double gmul,
                      int nesterov) {
    (void)buf, (void)g, (void)mu, (void)gmul, (void)nesterov;
    const double dn = (double)n;
    begin(c, (u ? 6 : 3) * dn, F * (u ? 4 : 3) * dn);
    snprintf(c->shape, sizeof c->shape, "%zu%s", n, u ? " +u" : "");
}

// normuon: two squares-and-adds per element (before and after), the scaling and the rescale (2
// multiplies); reads V three times, writes it twice; the line states are negligible.
void gm_cost_normuon(gm_kernel_cost *c, gm_real *V, gm_real *v2, int rows, int cols, int by_row, double beta2) {
    (void)V, (void)v2, (void)beta2;
    const double dn = (double)rows * cols;
    begin(c, 6 * dn, F * 5 * dn);
    snprintf(c->shape, sizeof c->shape, "%dx%d per %s", rows, cols, by_row ? "row" : "column");
}

// p - lr (u + wd mask p): up to 5 flops per element (the cautious sign test's product included);
// reads u, read-modify-writes p.
void gm_cost_muon_update(gm_kernel_cost *c, gm_real *p, const gm_real *u, size_t n, double lr, double wd, int cautious) {
    (void)p, (void)u, (void)lr, (void)wd;
    const double dn = (double)n;
    begin(c, (cautious ? 5 : 4) * dn, F * 3 * dn);
    snprintf(c->shape, sizeof c->shape, "%zu%s", n, cautious ? " cautious" : "");
}

// Newton-Schulz per item (gm_cost_ns_flops), bytes: every pass over the (m, n) matrix and the (m, m)
// Gram matrices, per step (cuda/newton_schulz.cu, bf16 with cfg->bf16 as it stores them): A = X X^T
// reads X twice, writes A (2 m n + m^2); B = c A A + b A reads A three times, writes B (4 m^2);
// X' = B X + a X reads B, X twice, writes X' (3 m n + m^2): steps (5 m n + 6 m^2) elements (each
// product reading C beside its operands and writing D, no copy between), plus reading G and
// writing out (gm_real). Gram NS is priced
// as plain NS (NS-equivalent flops: how fast it delivers what NS computes), so the two compare. The SVD path is
// priced as 4 m^2 n + 8 m^3 (a Golub-Kahan bidiagonalization and the products), a rough figure.
void gm_cost_orthogonalize(gm_kernel_cost *c, const gm_ortho *cfg, int count, const gm_ortho_item *items) {
    begin(c, 0, 0);
    for (int i = 0; i < count; i++) {
        const int r = items[i].rows, k = items[i].cols;
        const double m = r < k ? r : k, n = r < k ? k : r;
        if (cfg->method != GM_ORTHO_SVD) {
            c->flops += gm_cost_ns_flops(r, k, cfg->steps);
            c->bytes += (cfg->bf16 ? 2 : F) * cfg->steps * (5 * m * n + 6 * m * m) + F * 2 * m * n;
        } else {
            c->flops += 4 * m * m * n + 8 * m * m * m;
            c->bytes += F * 4 * m * n;
        }
    }
    double elements = 0;
    for (int i = 0; i < count; i++) elements += (double)items[i].rows * items[i].cols;
    const int ns = cfg->method != GM_ORTHO_SVD;
    snprintf(c->shape, sizeof c->shape, "%d matrices %.0f elements %s%d%s", count, elements,
             cfg->method == GM_ORTHO_GRAM_NS ? "GramNS" : ns ? "NS" : "SVD", ns ? cfg->steps : 0,
             cfg->bf16 && ns ? " bf16" : "");
}
