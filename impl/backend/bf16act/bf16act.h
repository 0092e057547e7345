// The CPU backend with the bf16 rounding points of the CUDA backend's bf16 activations (issue 30),
// its whole-step twin: cpu-bf16mm (bf16 matmul operands), and every activation and activation-gradient
// output of a kernel rounded to bf16 (nearest even) once the kernel has computed it in fp32, as a
// kernel that computes in fp32 and stores a bf16 tensor does. A gradient written with GM_GRAD_ADD
// is rounded after the add (a bf16 buffer read, added to in fp32 and stored). Storage stays
// gm_real; every stored activation value is bf16-representable. Not rounded: parameters, their
// gradients (dW, dtable, dpa/dpb), the optimizer kernels, fill and copy, and the per-row statistics
// (rmsnorm/qknorm rstd, attention lse, losses). Which outputs each kernel rounds is the table
// BF16ACT_ROUNDED in bf16act.c. A fused kernel rounds only what it stores: lincomb_rmsnorm_fwd norms
// the fp32 sum, rounding sum and out each once, as cuda/lincomb_rmsnorm.cu does.
#ifndef GM_BACKEND_BF16ACT_BF16ACT_H
#define GM_BACKEND_BF16ACT_BF16ACT_H

#include "backend/backend.h"

// The backend (static; it wraps gm_backend_cpu_bf16mm()).
const gm_backend *gm_backend_cpu_bf16(void);

#endif
