// The CPU backend struct: host memory and the kernels of this folder.
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_ops.h"
#include "base/error.h"

static void *cpu_alloc(const gm_backend *be, size_t bytes) {
    (void)be;
    // 64-byte aligned for SIMD; aligned_alloc needs a multiple of the alignment.
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) {
        gm_fail("cpu backend: cannot allocate %zu bytes", bytes);
        return NULL;
    }
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void cpu_free(const gm_backend *be, void *p) {
    (void)be;
    free(p);
}

static void cpu_copy(const gm_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memmove(dst, src, bytes);
}

static void cpu_fill(const gm_backend *be, gm_real *p, gm_real value, size_t n) {
    (void)be;
    for (size_t i = 0; i < n; i++) p[i] = value;
}

static const gm_backend cpu_backend = {
    .name = "cpu-" GM_REAL_NAME,
    .ctx = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .embed_fwd = gm_cpu_embed_fwd,
    .embed_bwd = gm_cpu_embed_bwd,
    .matmul_fwd = gm_cpu_matmul_fwd,
    .matmul_bwd = gm_cpu_matmul_bwd,
    .rmsnorm_fwd = gm_cpu_rmsnorm_fwd,
    .rmsnorm_bwd = gm_cpu_rmsnorm_bwd,
    .rotary_fwd = gm_cpu_rotary_fwd,
    .rotary_bwd = gm_cpu_rotary_bwd,
    .attn_fwd = gm_cpu_attn_fwd,
    .attn_bwd = gm_cpu_attn_bwd,
    .act_fwd = gm_cpu_act_fwd,
    .act_bwd = gm_cpu_act_bwd,
    .lincomb_fwd = gm_cpu_lincomb_fwd,
    .lincomb_bwd = gm_cpu_lincomb_bwd,
    .xent_fwd_bwd = gm_cpu_xent_fwd_bwd,
};

const gm_backend *gm_backend_cpu(void) { return &cpu_backend; }
