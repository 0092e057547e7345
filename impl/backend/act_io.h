// Activations between host gm_real arrays and a backend's activation memory (backend.h's
// gm_actval), converted to and from the backend's element: a plain copy where the element is
// gm_real (the CPU backends), bf16 rounded to nearest even on the way up and widened exactly on the
// way down where it is 2 bytes (the CUDA backend), as base/bf16.h rounds. For tests, benches and
// tools that put known values into a backend's activations or read them back; the model itself
// never moves activations to the host.
#ifndef GM_BACKEND_ACT_IO_H
#define GM_BACKEND_ACT_IO_H

#include <stddef.h>

#include "backend/backend.h"

// n values of src into dst (backend memory); 0, or -1 + gm_fail (host memory, an element size
// that is neither gm_real's nor 2).
int gm_act_upload(const gm_backend *be, gm_actval *dst, const gm_real *src, size_t n);
// n values of src (backend memory) into dst; 0, or -1 + gm_fail.
int gm_act_download(const gm_backend *be, gm_real *dst, const gm_actval *src, size_t n);

#endif
