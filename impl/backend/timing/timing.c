// The timing backend (timing.h). Forwarders are generated from GM_BACKEND_KERNELS, each pricing its
// call with the gm_cost_<name> of the same parameters.
#include "backend/timing/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/timer.h"

struct gm_timing {
    gm_backend be;  // first: the wrapper's ctx points back here
    const gm_backend *inner;
    char label[32];
    int on;
    gm_timing_record *rec;
    int n, cap;
    char err[1024];  // the first error an inner sync reported inside a timed call
    int failed;
};

static gm_timing *of(const gm_backend *be) { return (gm_timing *)be->ctx; }

// An inner sync inside a timed call: its error is kept for the caller's sync.
static void inner_sync(gm_timing *t) {
    if (t->inner->sync(t->inner) && !t->failed) {
        snprintf(t->err, sizeof t->err, "%s", gm_error());
        t->failed = 1;
    }
}

static void record(gm_timing *t, const char *op, const gm_kernel_cost *c, double ms) {
    gm_timing_record *r = NULL;
    for (int i = 0; i < t->n && !r; i++)
        if (!strcmp(t->rec[i].op, op) && !strcmp(t->rec[i].label, t->label) && !strcmp(t->rec[i].cost.shape, c->shape))
            r = &t->rec[i];
    if (!r) {
        if (t->n == t->cap) {
            int cap = t->cap ? 2 * t->cap : 64;
            gm_timing_record *nr = realloc(t->rec, (size_t)cap * sizeof *nr);
            if (!nr) abort();  // a benchmark out of host memory cannot report anything
            t->rec = nr, t->cap = cap;
        }
        r = &t->rec[t->n++];
        memset(r, 0, sizeof *r);
        snprintf(r->label, sizeof r->label, "%s", t->label);
        snprintf(r->op, sizeof r->op, "%s", op);
        r->cost = *c;
    }
    if (r->calls == r->cap) {
        long cap = r->cap ? 2 * r->cap : 16;
        double *nm = realloc(r->ms, (size_t)cap * sizeof *nm);
        if (!nm) abort();
        r->ms = nm, r->cap = cap;
    }
    r->ms[r->calls++] = ms;
}

#define TIMING_FORWARD(name, params, args)                            \
    static void timing_##name(const gm_backend *be, GM_UNPACK params) { \
        gm_timing *t = of(be);                                        \
        if (!t->on) {                                                 \
            t->inner->name(t->inner, GM_UNPACK args);                 \
            return;                                                   \
        }                                                             \
        gm_kernel_cost c = {.act_bytes = (double)t->inner->act_size}; \
        gm_cost_##name(&c, GM_UNPACK args);                           \
        inner_sync(t);                                                \
        uint64_t t0 = gm_now_ns();                                    \
        t->inner->name(t->inner, GM_UNPACK args);                     \
        inner_sync(t);                                                \
        record(t, #name, &c, (double)(gm_now_ns() - t0) * 1e-6);      \
    }
GM_BACKEND_KERNELS(TIMING_FORWARD)
#undef TIMING_FORWARD

static void *timing_alloc(const gm_backend *be, size_t bytes) { return of(be)->inner->alloc(of(be)->inner, bytes); }
static void timing_free(const gm_backend *be, void *p) { of(be)->inner->free(of(be)->inner, p); }

// Host copies: timed like kernels (they include waiting for the queue, as a caller waits).
static void host_copy(const gm_backend *be, void *dst, const void *src, size_t bytes, int up) {
    gm_timing *t = of(be);
    uint64_t t0 = gm_now_ns();
    if (up) t->inner->upload(t->inner, dst, src, bytes);
    else t->inner->download(t->inner, dst, src, bytes);
    if (!t->on) return;
    gm_kernel_cost c = {.bytes = (double)bytes};
    snprintf(c.shape, sizeof c.shape, "%zu bytes", bytes);
    record(t, up ? "upload" : "download", &c, (double)(gm_now_ns() - t0) * 1e-6);
}
static void timing_upload(const gm_backend *be, void *dst, const void *src, size_t bytes) {
    host_copy(be, dst, src, bytes, 1);
}
static void timing_download(const gm_backend *be, void *dst, const void *src, size_t bytes) {
    host_copy(be, dst, src, bytes, 0);
}

static int timing_sync(const gm_backend *be) {
    gm_timing *t = of(be);
    int rc = t->inner->sync(t->inner);
    if (t->failed) {
        t->failed = 0;
        return gm_fail("%s", t->err);
    }
    return rc;
}

gm_timing *gm_timing_open(const gm_backend *inner) {
    gm_timing *t = calloc(1, sizeof *t);
    if (!t) return gm_fail("timing backend: out of memory"), NULL;
    t->inner = inner;
    t->on = 1;
#define TIMING_FIELD(name, params, args) t->be.name = timing_##name;
    GM_BACKEND_KERNELS(TIMING_FIELD)
#undef TIMING_FIELD
    t->be.name = "timing";
    t->be.ctx = t;
    t->be.host_visible = inner->host_visible;
    t->be.act_size = inner->act_size;
    t->be.alloc = timing_alloc;
    t->be.free = timing_free;
    t->be.upload = timing_upload;
    t->be.download = timing_download;
    t->be.sync = timing_sync;
    return t;
}

void gm_timing_reset(gm_timing *t) {
    for (int i = 0; i < t->n; i++) free(t->rec[i].ms);
    t->n = 0;
}

void gm_timing_close(gm_timing *t) {
    if (!t) return;
    gm_timing_reset(t);
    free(t->rec);
    free(t);
}

const gm_backend *gm_timing_backend(gm_timing *t) { return &t->be; }
void gm_timing_label(gm_timing *t, const char *label) { snprintf(t->label, sizeof t->label, "%s", label); }
void gm_timing_enable(gm_timing *t, int on) { t->on = on; }
int gm_timing_count(const gm_timing *t) { return t->n; }
const gm_timing_record *gm_timing_at(const gm_timing *t, int i) { return &t->rec[i]; }
