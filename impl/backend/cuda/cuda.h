// The CUDA backend, callable from C whether or not the build has CUDA (without CUDA,
// backend_none.c answers "no device").
//
// Memory and precision: every tensor the interface passes is device memory. Parameters, their
// gradients, optimizer states and per-row statistics are fp32 master values (gm_real is float in
// every build that compiles CUDA); activations and activation gradients are GM_CUDA_ACT_BYTES-byte
// elements (act_elem.cuh: bf16), stored once per kernel output after fp32 arithmetic. Matmuls run
// on cuBLASLt (gemm.cu) with bf16 operands and fp32 accumulation: bf16 activations as they are, the
// fp32 weights through a bf16 copy in backend scratch; outputs in the activation element, weight
// gradients added in fp32. Every other kernel computes in fp32 (the scalar reductions of lincomb and the norms of adam and
// orthogonalize in fp64). Newton-Schulz runs bf16 (or fp32) strided-batched GEMMs with fp32
// accumulation; the SVD orthogonalizer is cuSOLVER's gesvdj. `orthogonalize` waits for the
// stream once per call, to read its items' status.
//
// Ordering and errors: every kernel, copy and cuBLAS call goes to one stream of the backend, so
// calls run in the order they were made; upload and download return when the copy is complete.
// Kernels return nothing, so a failure (a launch error, a cuBLAS or cuSOLVER status, bad input
// found by a kernel, a fault found at a later synchronisation) is recorded and reported by the
// next gm_cuda_sync. Not thread-safe: one host thread drives the backend.
#ifndef GM_BACKEND_CUDA_CUDA_H
#define GM_BACKEND_CUDA_CUDA_H

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// Bytes of the CUDA backend's activation element (act_elem.cuh's gm_cuda_act): 2 (bf16; 4 builds
// the fp32 element, each kernel's other instantiation, to tell a bf16 effect from a kernel fault).
// Here, for C code without CUDA too: the counting backend prices the CUDA step with it.
#define GM_CUDA_ACT_BYTES 2

// The backend on CUDA device `device` (0-based), made on the first call and kept for the life of
// the process (never freed, like the CPU backend). One device per process: a later call with
// another device fails. NULL + gm_fail when there is no such device or no CUDA in this build.
const gm_backend *gm_backend_cuda(int device);
// Wait for the backend's stream; 0, or -1 + gm_fail with the first error recorded since the
// previous sync. A device fault (a sticky CUDA error: the context is unusable) stays: every later
// sync fails with it.
int gm_cuda_sync(const gm_backend *be);
// The backend's stream (a cudaStream_t), for work that must be ordered with its kernels (NCCL);
// NULL when `be` is not the CUDA backend.
void *gm_cuda_stream(const gm_backend *be);

#ifdef __cplusplus
}
#endif
#endif
