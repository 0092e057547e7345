// The CPU backend with the CUDA backend's matmul precision: every matmul operand is rounded to
// bf16 (nearest even) before the fp32 product, as cuda/matmul.cu rounds its operands for the
// GEMM; every other kernel is the CPU's. It is the CPU twin of the CUDA backend built without
// tensor-core attention (CUDA_ARCH below compute_80), so a whole training step on that build can be
// held to the CPU at fp32 summation-order bars instead of bf16 ones (bench/gpu_step_compare.py).
#ifndef GM_BACKEND_BF16MM_BF16MM_H
#define GM_BACKEND_BF16MM_BF16MM_H

#include "backend/backend.h"

// The backend (static; its rounding buffers grow on demand and live as long as the process).
const gm_backend *gm_backend_cpu_bf16mm(void);

#endif
