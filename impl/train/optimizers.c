#include "train/optimizers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "optim/schedule.h"

const char *const gm_group_names[GM_NGROUPS] = {"embed", "head", "matrix", "scalar"};

static double lr_of_group(const gm_run_config *rc, int g) {
    const double lrs[GM_NGROUPS] = {rc->lr_embed, rc->lr_head, rc->lr_matrix, rc->lr_scalar};
    return lrs[g];
}

// Group g is trained by Muon (else by Adam/AdamW).
static int uses_muon(const gm_run_config *rc, int g) {
    return g == GM_GROUP_MATRIX - 1 && rc->matrix_opt == GM_MATRIX_MUON;
}

// The parameter table split into the groups (views[g] malloc'd, freed by the caller also on failure).
static int split_groups(const gm_table *tab, gm_opt_view *views[GM_NGROUPS], int nviews[GM_NGROUPS]) {
    for (int g = 0; g < GM_NGROUPS; g++) {
        views[g] = calloc((size_t)tab->n + 1, sizeof(gm_opt_view));
        if (!views[g]) return gm_fail("optimizers: out of memory");
    }
    for (int i = 0; i < tab->n; i++) {
        const gm_view *v = &tab->v[i];
        int g = (int)v->group - 1;
        if (g < 0 || g >= GM_NGROUPS) return gm_fail("optimizers: parameter %s has no optimizer group", v->name);
        gm_opt_view ov = {v->name, v->offset, (int)v->shape[0], (int)(v->ndim > 1 ? v->shape[1] : 1)};
        views[g][nviews[g]++] = ov;
    }
    return 0;
}

int gm_optimizers_init(gm_optimizers *o, const gm_run_config *rc, const gm_table *params, const gm_backend *be,
                       gm_comm *comm) {
    memset(o, 0, sizeof *o);
    if (split_groups(params, o->views, o->nviews)) return -1;
    for (int g = 0; g < GM_NGROUPS; g++) {
        if (!o->nviews[g]) continue;
        if (uses_muon(rc, g)) {
            if (gm_muon_init(&o->muon, be, &rc->muon, o->views[g], o->nviews[g], comm)) return -1;
            o->muon.sharded = rc->grad_sync == GM_GRAD_SYNC_REDUCE_SCATTER;
            o->has_muon = 1;
        } else {
            gm_adam_hparams hp = rc->adam;
            hp.lr = lr_of_group(rc, g);
            if (gm_adam_init(&o->adam[g], be, &hp, o->views[g], o->nviews[g])) return -1;
            o->has_adam[g] = 1;
        }
    }
    return 0;
}

void gm_optimizers_free(gm_optimizers *o) {
    for (int g = 0; g < GM_NGROUPS; g++) {
        if (o->has_adam[g]) gm_adam_free(&o->adam[g]);
        free(o->views[g]);
    }
    if (o->has_muon) gm_muon_free(&o->muon);
    memset(o, 0, sizeof *o);
}

int gm_optimizers_step(gm_optimizers *o, const gm_run_config *rc, gm_real *params, const gm_real *grads, int s,
                       gm_comm *comm) {
    const double mult = gm_lr_mult(&rc->lr, s);
    for (int g = 0; g < GM_NGROUPS; g++)
        if (o->has_adam[g]) gm_adam_step(&o->adam[g], params, grads, mult);
    return o->has_muon ? gm_muon_step(&o->muon, params, grads, mult, s, comm) : 0;
}

static int by_offset(const void *a, const void *b) {
    const gm_comm_span *x = a, *y = b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

int gm_optimizers_grad_spans(const gm_optimizers *o, int world, gm_comm_span **spans) {
    int n = 0;
    for (int g = 0; g < GM_NGROUPS; g++) n += o->nviews[g];
    gm_comm_span *s = *spans = malloc((size_t)(n ? n : 1) * sizeof *s);
    if (!s) return gm_fail("optimizers: out of memory");
    n = 0;
    for (int g = 0; g < GM_NGROUPS; g++)
        for (int i = 0; i < o->nviews[g]; i++) {
            int muon = o->has_muon && o->views[g] == o->muon.views;
            s[n++] = (gm_comm_span){o->views[g][i].offset, gm_view_numel(&o->views[g][i]), muon ? i % world : GM_ALL_RANKS};
        }
    qsort(s, (size_t)n, sizeof *s, by_offset);
    int merged = 0;
    for (int k = 0; k < n; k++)
        if (merged && s[merged - 1].rank == s[k].rank && s[merged - 1].offset + s[merged - 1].count == s[k].offset)
            s[merged - 1].count += s[k].count;
        else
            s[merged++] = s[k];
    return merged;
}

int gm_optimizers_gather_state(gm_optimizers *o, gm_comm *comm) {
    return o->has_muon ? gm_muon_gather_state(&o->muon, comm) : 0;
}

int gm_optimizers_states(const gm_optimizers *o, gm_state_buf *out) {
    int n = 0;
    for (int g = 0; g < GM_NGROUPS; g++) {
        if (!o->has_adam[g]) continue;
        out[n] = (gm_state_buf){"", o->adam[g].m, o->adam[g].state_numel, 0};
        snprintf(out[n++].name, sizeof out->name, "adam.%s.m", gm_group_names[g]);
        out[n] = (gm_state_buf){"", o->adam[g].v, o->adam[g].state_numel, 1};
        snprintf(out[n++].name, sizeof out->name, "adam.%s.v", gm_group_names[g]);
    }
    if (o->has_muon) out[n++] = (gm_state_buf){"muon.buf", o->muon.buf, o->muon.state_numel, 0};
    // NorMuon's second moments: a checkpoint of a run without them cannot resume one with them
    // (the resume names the missing section).
    if (o->has_muon && o->muon.v2) out[n++] = (gm_state_buf){"muon.v2", o->muon.v2, o->muon.v2_numel, 1};
    return n;
}

int gm_optimizers_plan(const gm_run_config *rc, const gm_table *params, int rank, int world, size_t *adam,
                       gm_muon_mem *muon) {
    gm_opt_view *views[GM_NGROUPS] = {0};
    int nviews[GM_NGROUPS] = {0}, r = split_groups(params, views, nviews);
    *adam = 0;
    *muon = (gm_muon_mem){0, 0, 0, 0};
    for (int g = 0; r == 0 && g < GM_NGROUPS; g++) {
        if (!nviews[g]) continue;
        if (uses_muon(rc, g)) gm_muon_state_bytes(&rc->muon, views[g], nviews[g], rank, world, muon);
        else *adam += gm_adam_state_bytes(views[g], nviews[g]);
    }
    for (int g = 0; g < GM_NGROUPS; g++) free(views[g]);
    return r;
}
