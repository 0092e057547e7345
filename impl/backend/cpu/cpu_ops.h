// The CPU backend's kernels, one concept per file, gathered into the struct by cpu_backend.c.
#ifndef GM_BACKEND_CPU_CPU_OPS_H
#define GM_BACKEND_CPU_CPU_OPS_H

#include "backend/backend.h"

// Loops with less work than this (elements touched) run on one thread: below it a parallel
// region costs more than it saves, and idle OpenMP threads spinning beside a busy process (tests
// run 2 at a time on 2 cores) slow both down by orders of magnitude.
#define GM_CPU_PAR_MIN ((size_t)1 << 16)

void gm_cpu_embed_fwd(const gm_backend *be, gm_real *out, const int32_t *ids, const gm_real *table, int N, int C);
void gm_cpu_embed_bwd(const gm_backend *be, gm_real *dtable, const int32_t *ids, const gm_real *dout, int N, int V,
                      int C);
void gm_cpu_matmul_fwd(const gm_backend *be, gm_real *out, const gm_real *inp, const gm_real *W, int N, int C, int OC);
void gm_cpu_matmul_bwd(const gm_backend *be, gm_real *dinp, gm_real *dW, const gm_real *dout, const gm_real *inp,
                       const gm_real *W, int N, int C, int OC);
void gm_cpu_rmsnorm_fwd(const gm_backend *be, gm_real *out, gm_real *rstd, const gm_real *inp, int N, int C,
                        double eps);
void gm_cpu_rmsnorm_bwd(const gm_backend *be, gm_real *dinp, const gm_real *dout, const gm_real *inp,
                        const gm_real *rstd, int N, int C);
void gm_cpu_rotary_fwd(const gm_backend *be, gm_real *out, const gm_real *inp, const gm_real *cos_t,
                       const gm_real *sin_t, int B, int T, int NH, int HD);
void gm_cpu_rotary_bwd(const gm_backend *be, gm_real *dinp, const gm_real *dout, const gm_real *cos_t,
                       const gm_real *sin_t, int B, int T, int NH, int HD);
void gm_cpu_attn_fwd(const gm_backend *be, gm_real *out, gm_real *lse, const gm_real *q, const gm_real *k,
                     const gm_real *v, int B, int T, int NH, int HD, double scale, gm_attn_mask mask);
void gm_cpu_attn_bwd(const gm_backend *be, gm_real *dq, gm_real *dk, gm_real *dv, const gm_real *dout, const gm_real *q,
                     const gm_real *k, const gm_real *v, const gm_real *out, const gm_real *lse, int B, int T, int NH,
                     int HD, double scale, gm_attn_mask mask);
void gm_cpu_act_fwd(const gm_backend *be, gm_act act, gm_real *out, const gm_real *inp, size_t n);
void gm_cpu_act_bwd(const gm_backend *be, gm_act act, gm_real *dinp, const gm_real *dout, const gm_real *inp, size_t n);
void gm_cpu_lincomb_fwd(const gm_backend *be, gm_real *out, double ca, const gm_real *pa, const gm_real *x, double cb,
                        const gm_real *pb, const gm_real *y, size_t n);
void gm_cpu_lincomb_bwd(const gm_backend *be, gm_real *dx, gm_real *dy, gm_real *dpa, gm_real *dpb, const gm_real *dout,
                        double ca, const gm_real *pa, const gm_real *x, double cb, const gm_real *pb, const gm_real *y,
                        size_t n);
void gm_cpu_xent_fwd_bwd(const gm_backend *be, gm_real *losses, gm_real *dlogits, const gm_real *logits,
                         const int32_t *targets, int N, int V, double cap, double dloss_scale);

#endif
