// The timing backend: wraps any backend and records every call made through it (kernel name,
// shape, FLOPs and bytes from backend/cost.h, and each call's time), so a benchmark times the
// calls the real model and optimizers make, at their real shapes and on their real buffers, and
// follows any change of the model without edits. Each kernel call is bracketed by the inner
// backend's sync (so asynchronous backends are timed by completion, not by launch); an error that
// sync reports is kept and returned by this backend's own sync. upload and download are recorded
// too. Results are those of the inner backend, bit for bit.
#ifndef GM_BACKEND_TIMING_TIMING_H
#define GM_BACKEND_TIMING_TIMING_H

#include "backend/backend.h"
#include "backend/cost.h"

typedef struct {
    char label[32];  // caller's label when the call was made (gm_timing_label), e.g. "optimizer"
    char op[24];     // kernel name, "upload" or "download"
    gm_kernel_cost cost;  // per call
    long calls;
    double *ms;  // (calls) each call's milliseconds
    long cap;
} gm_timing_record;

typedef struct gm_timing gm_timing;

// NULL + gm_fail when out of memory.
gm_timing *gm_timing_open(const gm_backend *inner);
void gm_timing_close(gm_timing *t);
// The wrapping backend (valid until gm_timing_close).
const gm_backend *gm_timing_backend(gm_timing *t);
// Calls from now on are filed under `label` (records are keyed by label, kernel and shape).
void gm_timing_label(gm_timing *t, const char *label);
// 0: calls are forwarded but not recorded (warm-up); 1: recorded (the default).
void gm_timing_enable(gm_timing *t, int on);
// Forget every record.
void gm_timing_reset(gm_timing *t);
int gm_timing_count(const gm_timing *t);
const gm_timing_record *gm_timing_at(const gm_timing *t, int i);

#endif
