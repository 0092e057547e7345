#include "optim/muon.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "optim/schedule.h"

int gm_muon_init(gm_muon *m, const gm_muon_hparams *hp, const gm_opt_view *views, int n) {
    memset(m, 0, sizeof *m);
    m->hp = *hp;
    m->views = views;
    m->n = n;
    size_t maxn = 1;
    m->state_offset = malloc((size_t)(n > 0 ? n : 1) * sizeof *m->state_offset);
    for (int i = 0; m->state_offset && i < n; i++) {
        m->state_offset[i] = m->state_numel;
        m->state_numel += gm_view_numel(&views[i]);
        if (gm_view_numel(&views[i]) > maxn) maxn = gm_view_numel(&views[i]);
    }
    size_t total = m->state_numel ? m->state_numel : 1;
    m->buf = calloc(total, sizeof *m->buf);
    m->send = malloc(total * sizeof *m->send);
    m->recv = malloc(total * sizeof *m->recv);
    m->work = malloc(2 * maxn * sizeof *m->work);
    if (!m->state_offset || !m->buf || !m->send || !m->recv || !m->work) {
        gm_muon_free(m);
        return gm_fail("muon: out of memory for %zu state elements", total);
    }
    return 0;
}

void gm_muon_free(gm_muon *m) {
    free(m->buf);
    free(m->send);
    free(m->recv);
    free(m->work);
    free(m->state_offset);
    memset(m, 0, sizeof *m);
}

double gm_muon_scale_of(gm_muon_scale rule, int rows, int cols) {
    switch (rule) {
    case GM_MUON_SCALE_SQRT_MAX: return sqrt((double)(rows > cols ? rows : cols));
    case GM_MUON_SCALE_ASPECT: return sqrt(fmax(1.0, (double)rows / cols));
    default: return 1.0;
    }
}

// Orthogonalized, scaled update of view i into out (rows, cols), from its momentum buffer (already
// updated this step) and gradient g.
static int update_of(gm_muon *m, int i, const gm_real *g, double mu, gm_real *out) {
    const gm_opt_view *vw = &m->views[i];
    size_t n = gm_view_numel(vw);
    const gm_real *buf = m->buf + m->state_offset[i];
    gm_real *u = m->work, *blk = m->work + n;
    const gm_real rmu = (gm_real)mu, gmul = m->hp.form == GM_MOMENTUM_EMA ? (gm_real)(1.0 - mu) : 1;
    for (size_t j = 0; j < n; j++) u[j] = m->hp.nesterov ? gmul * g[j] + rmu * buf[j] : buf[j];
    // The fused QKV weight (rows == 3 cols) is three row blocks, each orthogonalized on its own.
    int nblocks = m->hp.split_qkv && vw->rows == 3 * vw->cols ? 3 : 1;
    int brows = vw->rows / nblocks;
    size_t bn = (size_t)brows * vw->cols;
    gm_real scale = (gm_real)gm_muon_scale_of(m->hp.scale, brows, vw->cols);
    for (int b = 0; b < nblocks; b++) {
        if (gm_orthogonalize(&m->hp.ortho, u + b * bn, blk, brows, vw->cols))
            return gm_fail("muon: %s: %s", vw->name, gm_error());
        for (size_t j = 0; j < bn; j++) out[b * bn + j] = scale * blk[j];
    }
    return 0;
}

int gm_muon_step(gm_muon *m, gm_real *params, const gm_real *grads, double lr_mult, int s, gm_comm *comm) {
    const int W = comm ? comm->world : 1, rank = comm ? comm->rank : 0;
    const double mu = gm_momentum_at(m->hp.momentum_from, m->hp.momentum, m->hp.momentum_warmup, s);
    const gm_real lr = (gm_real)(m->hp.lr * lr_mult);
    // Every rank keeps every momentum buffer current (elementwise, cheap), so any rank's checkpoint
    // holds the whole optimizer state; only the orthogonalization is sharded.
    const gm_real rmu = (gm_real)mu, gmul = m->hp.form == GM_MOMENTUM_EMA ? (gm_real)(1.0 - mu) : 1;
    for (int i = 0; i < m->n; i++) {
        gm_real *buf = m->buf + m->state_offset[i];
        const gm_real *g = grads + m->views[i].offset;
        size_t n = gm_view_numel(&m->views[i]);
        for (size_t j = 0; j < n; j++) buf[j] = rmu * buf[j] + gmul * g[j];
    }
    // This rank's matrices (i % W == rank), their updates packed in order into send.
    size_t at = 0;
    for (int i = rank; i < m->n; i += W) {
        if (update_of(m, i, grads + m->views[i].offset, mu, m->send + at)) return -1;
        at += gm_view_numel(&m->views[i]);
    }
    const gm_real *all = m->send;
    if (W > 1) {
        // Everyone's updates, rank by rank; each rank's block lists its matrices in order.
        size_t *bytes = calloc((size_t)W, sizeof *bytes);
        if (!bytes) return gm_fail("muon: out of memory");
        for (int i = 0; i < m->n; i++) bytes[i % W] += gm_view_numel(&m->views[i]) * sizeof(gm_real);
        int rc = gm_allgatherv(comm, m->send, m->recv, bytes);
        free(bytes);
        if (rc) return -1;
        all = m->recv;
    }
    at = 0;
    for (int r = 0; r < W; r++)
        for (int i = r; i < m->n; i += W) {
            const gm_opt_view *vw = &m->views[i];
            size_t n = gm_view_numel(vw);
            gm_real *p = params + vw->offset;
            for (size_t j = 0; j < n; j++) p[j] -= lr * all[at + j];
            at += n;
        }
    return 0;
}
