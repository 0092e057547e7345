// The CPU reference backend: gm_real (fp32, or fp64 under -DGM_FP64), OpenBLAS + OpenMP.
// Beside the fast kernels it exposes the plain naive references they are tested against.
#ifndef GM_BACKEND_CPU_CPU_H
#define GM_BACKEND_CPU_CPU_H

#include <stdint.h>

#include "backend/backend.h"

// The backend (static, stateless; never freed).
const gm_backend *gm_backend_cpu(void);

// ---- naive references (plain loops, no BLAS, no blocking) ----
void gm_cpu_matmul_fwd_naive(gm_real *out, const gm_real *inp, const gm_real *W, int N, int C, int OC, double scale,
                             const gm_real *res);
void gm_cpu_matmul_bwd_naive(gm_real *dinp, gm_grad_write dinp_write, gm_real *dW, const gm_real *dout,
                             const gm_real *inp, const gm_real *W, int N, int C, int OC);
// Attention with an explicit dense mask (B, T, T) of 0/1 bytes, mask[b][q][k]; materialises the
// (T, T) probabilities per (b, head). Same outputs as attn_fwd/attn_bwd.
void gm_cpu_attn_fwd_dense(gm_real *out, gm_real *lse, const gm_real *q, const gm_real *k, const gm_real *v, int B,
                           int T, int NH, int HD, double scale, const uint8_t *mask);
void gm_cpu_attn_bwd_dense(gm_real *dq, gm_real *dk, gm_real *dv, const gm_real *dout, const gm_real *q,
                           const gm_real *k, const gm_real *v, int B, int T, int NH, int HD, double scale,
                           const uint8_t *mask);
// The dense mask (B, T, T) the rule in gm_attn_mask stands for, element by element.
void gm_cpu_attn_dense_mask(uint8_t *mask, int B, int T, gm_attn_mask m);

#endif
