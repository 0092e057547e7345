// The CUDA backend, callable from C whether or not the build has CUDA (without CUDA,
// backend_none.c answers "no device").
//
// Memory and precision: every tensor the interface passes is device memory holding fp32 master
// values (gm_real is float in every build that compiles CUDA). Matmuls convert their operands to
// bf16 copies in backend scratch and run on cuBLAS with fp32 accumulation and fp32 output; every
// other kernel computes in fp32 (the scalar reductions of lincomb in fp64).
//
// Ordering and errors: every kernel, copy and cuBLAS call goes to one stream of the backend, so
// calls run in the order they were made; upload and download return when the copy is complete.
// Kernels return nothing, so a failure (a launch error, a cuBLAS status, a fault found at a later
// synchronisation) is recorded once, sticky, and reported by gm_cuda_sync. Not thread-safe: one
// host thread drives the backend.
#ifndef GM_BACKEND_CUDA_CUDA_H
#define GM_BACKEND_CUDA_CUDA_H

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// The backend on CUDA device `device` (0-based), made on the first call and kept for the life of
// the process (never freed, like the CPU backend). One device per process: a later call with
// another device fails. NULL + gm_fail when there is no such device or no CUDA in this build.
const gm_backend *gm_backend_cuda(int device);
// Wait for the backend's stream; 0, or -1 + gm_fail with the first error recorded since the
// backend was made (errors are sticky: a CUDA fault poisons the context anyway).
int gm_cuda_sync(const gm_backend *be);
// The backend's stream (a cudaStream_t), for work that must be ordered with its kernels (NCCL);
// NULL when `be` is not the CUDA backend.
void *gm_cuda_stream(const gm_backend *be);

#ifdef __cplusplus
}
#endif
#endif
