#include "optim/muon.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "optim/schedule.h"

// The fused QKV weight (rows == 3 cols) is three row blocks, each orthogonalized on its own.
static int blocks_of(const gm_muon_hparams *hp, const gm_opt_view *v) {
    return hp->split_qkv && v->rows == 3 * v->cols ? 3 : 1;
}

// The record-#43 update (NorMuon and/or weight decay) instead of p <- p - lr * scale * O.
static int decoupled(const gm_muon_hparams *hp) { return hp->normuon || hp->weight_decay != 0; }

// NorMuon's second moments of one matrix: one per line of each block.
static size_t v2_numel_of(const gm_muon_hparams *hp, const gm_opt_view *v) {
    int nb = blocks_of(hp, v), brows = v->rows / nb;
    return hp->normuon ? (size_t)nb * (gm_muon_normuon_by_row(brows, v->cols) ? brows : v->cols) : 0;
}

// Bytes of the buffers for `total` elements of momentum, `mine` of this rank's updates and `second`
// NorMuon second moments (at least one element each: allocators may refuse 0).
static gm_muon_mem buffer_bytes(size_t total, size_t mine, size_t second, int world) {
    gm_muon_mem b;
    b.momentum = (total ? total : 1) * sizeof(gm_real);
    b.update = 2 * (mine ? mine : 1) * sizeof(gm_real);
    b.gather = world > 1 ? b.momentum : 0;
    b.second = second ? second * sizeof(gm_real) : 0;
    return b;
}

void gm_muon_state_bytes(const gm_muon_hparams *hp, const gm_opt_view *views, int n, int rank, int world,
                         gm_muon_mem *out) {
    size_t total = 0, mine = 0, second = 0;
    for (int i = 0; i < n; i++) {
        total += gm_view_numel(&views[i]);
        second += v2_numel_of(hp, &views[i]);
        if (i % world == rank) mine += gm_view_numel(&views[i]);
    }
    *out = buffer_bytes(total, mine, second, world);
}

int gm_muon_init(gm_muon *m, const gm_backend *be, const gm_muon_hparams *hp, const gm_opt_view *views, int n,
                 gm_comm *comm) {
    memset(m, 0, sizeof *m);
    m->hp = *hp;
    m->be = be;
    m->views = views;
    m->n = n;
    m->rank = comm ? comm->rank : 0;
    m->world = comm ? comm->world : 1;
    m->state_offset = malloc((size_t)(n > 0 ? n : 1) * sizeof *m->state_offset);
    m->v2_offset = malloc((size_t)(n > 0 ? n : 1) * sizeof *m->v2_offset);
    m->bytes = calloc((size_t)m->world, sizeof *m->bytes);
    if (!m->state_offset || !m->v2_offset || !m->bytes) {
        gm_muon_free(m);
        return gm_fail("muon: out of host memory");
    }
    size_t mine = 0;
    int nitems = 0;
    for (int i = 0; i < n; i++) {
        size_t numel = gm_view_numel(&views[i]);
        m->state_offset[i] = m->state_numel;
        m->state_numel += numel;
        m->v2_offset[i] = m->v2_numel;
        m->v2_numel += v2_numel_of(hp, &views[i]);
        m->bytes[i % m->world] += numel * sizeof(gm_real);
        if (i % m->world == m->rank) mine += numel, nitems += blocks_of(hp, &views[i]);
    }
    m->items = calloc((size_t)(nitems > 0 ? nitems : 1), sizeof *m->items);
    const gm_muon_mem bytes = buffer_bytes(m->state_numel, mine, m->v2_numel, m->world);
    int ok = m->items && (m->buf = be->alloc(be, bytes.momentum)) && (m->u = be->alloc(be, bytes.update / 2)) &&
             (m->send = be->alloc(be, bytes.update / 2)) && (m->world == 1 || (m->recv = be->alloc(be, bytes.gather))) &&
             (!hp->normuon || (m->v2 = be->alloc(be, bytes.second)));
    if (!ok) {
        gm_muon_free(m);
        return gm_fail("muon: cannot allocate the optimizer state (%zu elements): %s", m->state_numel, gm_error());
    }
    // This rank's blocks, in matrix order: u and send hold them packed.
    size_t at = 0;
    for (int i = m->rank; i < n; i += m->world) {
        const gm_opt_view *vw = &views[i];
        int nb = blocks_of(hp, vw), brows = vw->rows / nb;
        size_t bn = (size_t)brows * vw->cols;
        // The record-#43 update applies the scale in its eff_lr, after NorMuon.
        const double scale = decoupled(hp) ? 1.0 : gm_muon_scale_of(hp->scale, brows, vw->cols);
        for (int b = 0; b < nb; b++)
            m->items[m->nitems++] =
                (gm_ortho_item){vw->name, m->send + at + b * bn, m->u + at + b * bn, brows, vw->cols, scale};
        at += gm_view_numel(vw);
    }
    return 0;
}

void gm_muon_free(gm_muon *m) {
    if (m->be) {
        m->be->free(m->be, m->buf), m->be->free(m->be, m->u);
        m->be->free(m->be, m->send), m->be->free(m->be, m->recv);
        m->be->free(m->be, m->v2);
    }
    free(m->v2_offset);
    free(m->items);
    free(m->bytes);
    free(m->state_offset);
    memset(m, 0, sizeof *m);
}

// Record #43 keeps one second moment per row of its STORED parameter when rows >= cols, else one per
// column. Its attention weight is stored (d, 4d) and used as four square (out, in) blocks: wide,
// so per column (input dimension) of each block; its MLP c_fc is stored transposed, (d, 4d) for a
// (4d, d) (out, in) matrix: per column of the stored = per row (output neuron) here; c_proj
// (d, 4d) is (out, in) as stored: per column. In (out, in) terms: rows > cols per row, else per
// column. (Record #48, 2025-12-11_NorMuonOptimsAndFixes, found this orientation wrong for the
// attention output and the gates and changed the layout; this follows #43.)
int gm_muon_normuon_by_row(int rows, int cols) { return rows > cols; }

double gm_muon_scale_of(gm_muon_scale rule, int rows, int cols) {
    switch (rule) {
    case GM_MUON_SCALE_SQRT_MAX: return sqrt((double)(rows > cols ? rows : cols));
    case GM_MUON_SCALE_ASPECT: return sqrt(fmax(1.0, (double)rows / cols));
    default: return 1.0;
    }
}

int gm_muon_step(gm_muon *m, gm_real *params, const gm_real *grads, double lr_mult, int s, gm_comm *comm) {
    const gm_backend *be = m->be;
    const int W = m->world;
    if ((comm ? comm->world : 1) != W) return gm_fail("muon: stepped with a world of %d, made for %d", comm->world, W);
    const double mu = gm_momentum_at(m->hp.momentum_from, m->hp.momentum, m->hp.momentum_warmup, m->hp.momentum_cooldown,
                                     m->hp.steps, s);
    const double gmul = m->hp.form == GM_MOMENTUM_EMA ? 1.0 - mu : 1.0;
    // Every rank keeps every momentum buffer current (elementwise, cheap), so any rank's checkpoint
    // holds the whole optimizer state; this rank's matrices also get their update u. Sharded, the
    // other ranks' matrices have no averaged gradient here.
    size_t at = 0;
    for (int i = 0; i < m->n; i++) {
        const gm_opt_view *vw = &m->views[i];
        int mine = i % W == m->rank;
        if (!mine && m->sharded) continue;
        be->momentum(be, m->buf + m->state_offset[i], mine ? m->u + at : NULL, grads + vw->offset, gm_view_numel(vw),
                     mu, gmul, m->hp.nesterov);
        if (mine) at += gm_view_numel(vw);
    }
    be->orthogonalize(be, &m->hp.ortho, m->nitems, m->items);
    gm_real *all = m->send;
    if (W > 1) {
        // Everyone's updates, rank by rank; each rank's block lists its matrices in order.
        if (gm_data_allgatherv(comm, be, m->send, m->recv, m->bytes)) return -1;
        all = m->recv;
    }
    // p <- p - lr * update, in the order the gathered buffer holds the matrices. NorMuon and the
    // decayed update run here, on every rank for every matrix, so every rank's second moments
    // stay current (as its momentum buffers do) and any rank's checkpoint holds them all.
    const double lr = m->hp.lr * lr_mult;
    at = 0;
    for (int r = 0; r < W; r++)
        for (int i = r; i < m->n; i += W) {
            const gm_opt_view *vw = &m->views[i];
            gm_real *p = params + vw->offset, *V = all + at;
            at += gm_view_numel(vw);
            if (!decoupled(&m->hp)) {  // p - lr * V: muon_update without decay, bitwise p + (-lr) V
                be->muon_update(be, p, V, gm_view_numel(vw), lr, 0, 0);
                continue;
            }
            const int nb = blocks_of(&m->hp, vw), brows = vw->rows / nb, by_row = gm_muon_normuon_by_row(brows, vw->cols);
            const size_t bn = (size_t)brows * vw->cols, lines = by_row ? (size_t)brows : (size_t)vw->cols;
            const double eff_lr = lr * gm_muon_scale_of(m->hp.scale, brows, vw->cols), eff_wd = lr * m->hp.weight_decay;
            for (int b = 0; b < nb; b++) {
                if (m->hp.normuon) be->normuon(be, V + b * bn, m->v2 + m->v2_offset[i] + b * lines, brows, vw->cols, by_row, m->hp.beta2);
                be->muon_update(be, p + b * bn, V + b * bn, bn, eff_lr, eff_wd, m->hp.cautious);
            }
        }
    return 0;
}

int gm_muon_gather_state(gm_muon *m, gm_comm *comm) {
    if (!m->sharded || m->world == 1) return 0;
    const gm_backend *be = m->be;
    // This rank's momenta packed into send (free between steps), everyone's gathered into recv in
    // rank order, as the updates are, then each copied back to its place.
    size_t at = 0;
    for (int i = m->rank; i < m->n; i += m->world) {
        be->copy(be, m->send + at, m->buf + m->state_offset[i], gm_view_numel(&m->views[i]) * sizeof(gm_real));
        at += gm_view_numel(&m->views[i]);
    }
    if (gm_data_allgatherv(comm, be, m->send, m->recv, m->bytes)) return -1;
    at = 0;
    for (int r = 0; r < m->world; r++)
        for (int i = r; i < m->n; i += m->world) {
            be->copy(be, m->buf + m->state_offset[i], m->recv + at, gm_view_numel(&m->views[i]) * sizeof(gm_real));
            at += gm_view_numel(&m->views[i]);
        }
    return 0;
}
