// Backends by name, for programs: --backend=cpu|cuda|guarded|cpu-bf16mm|cpu-bf16 [--device=N].
#ifndef GM_BACKEND_SELECT_H
#define GM_BACKEND_SELECT_H

#include "backend/backend.h"

// "cpu" (fp32 reference, or fp64 in the -DGM_FP64 build), "cuda" (device `device`), "guarded"
// (the CPU backend with its memory locked between calls: backend/guard/guard.h), "cpu-bf16mm" (the CPU
// backend with bf16-rounded matmul operands, the CUDA backend's: backend/bf16mm/bf16mm.h), "cpu-bf16"
// (cpu-bf16mm with every activation and activation gradient rounded to bf16 where the CUDA backend's
// bf16 activations are stored: backend/bf16act/bf16act.h). NULL + gm_fail naming the flag: an unknown name, no CUDA in this build, or no such GPU.
const gm_backend *gm_backend_open(const char *name, int device);
// The arithmetic the backend `name` computes with, in words: two backends of the same words give
// bitwise-equal runs (cpu and guarded run the same kernels), two of different words do not.
const char *gm_backend_arithmetic(const char *name);
// Bytes of the activation element (gm_backend.act_size) the backend `name` stores, without opening
// it (a memory plan made before the backend is): GM_CUDA_ACT_BYTES for "cuda", gm_real's otherwise.
size_t gm_backend_act_size(const char *name);

#endif
