#include "backend/act_io.h"

#include <stdlib.h>

#include "base/bf16.h"
#include "base/error.h"

// The host staging of a 2-byte element, or NULL (gm_fail) when the size is not one this file knows.
static gm_bf16 *staging(const gm_backend *be, size_t n, const char *what) {
    if (be->act_size != sizeof(gm_bf16))
        return gm_fail("%s: backend %s stores %zu-byte activations (gm_real's %zu or bf16's 2 are known)", what,
                       be->name, be->act_size, sizeof(gm_real)),
               NULL;
    gm_bf16 *h = malloc(sizeof *h * (n ? n : 1));
    if (!h) gm_fail("%s: out of host memory for %zu values", what, n);
    return h;
}

int gm_act_upload(const gm_backend *be, gm_actval *dst, const gm_real *src, size_t n) {
    if (be->act_size == sizeof(gm_real)) return be->upload(be, dst, src, sizeof(gm_real) * n), 0;
    gm_bf16 *h = staging(be, n, "activation upload");
    if (!h) return -1;
    for (size_t i = 0; i < n; i++) h[i] = gm_f32_to_bf16((float)src[i]);
    be->upload(be, dst, h, sizeof *h * n);
    free(h);
    return 0;
}

int gm_act_download(const gm_backend *be, gm_real *dst, const gm_actval *src, size_t n) {
    if (be->act_size == sizeof(gm_real)) return be->download(be, dst, src, sizeof(gm_real) * n), 0;
    gm_bf16 *h = staging(be, n, "activation download");
    if (!h) return -1;
    be->download(be, h, src, sizeof *h * n);
    for (size_t i = 0; i < n; i++) dst[i] = (gm_real)gm_bf16_to_f32(h[i]);
    free(h);
    return 0;
}
