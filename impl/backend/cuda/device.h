// CUDA device discovery, callable from C whether or not the build has CUDA.
#ifndef GM_BACKEND_CUDA_DEVICE_H
#define GM_BACKEND_CUDA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Number of usable CUDA devices; 0 when there is none: the build has no CUDA, there is no NVIDIA
// driver, or the driver finds no GPU; -1 when CUDA is broken (any other runtime error, e.g. a
// driver older than the runtime). `why` (may be NULL) receives a one-line reason when the answer
// is 0 or -1.
int gm_cuda_device_count(char *why, size_t why_len);
// The name of device `device` as the driver gives it (e.g. "NVIDIA H100 80GB HBM3") with its
// compute capability and SM count, into buf; -1 + gm_fail when there is no such device.
int gm_cuda_device_name(int device, char *buf, size_t len);
// Free and total memory of device `device` in bytes (cudaMemGetInfo); -1 + gm_fail when there is
// no such device.
int gm_cuda_device_memory(int device, size_t *free_bytes, size_t *total_bytes);
// The streaming multiprocessors of device `device`; 0 when there is no such device (or no CUDA).
int gm_cuda_device_sms(int device);
// Why a build has no CUDA: the Makefile names it for the builds that leave CUDA out by design
// (the sanitizer and fp64 builds, where nvcc may well be installed); elsewhere nvcc was not found.
#ifndef GM_NO_CUDA_WHY
#define GM_NO_CUDA_WHY "built without CUDA (nvcc was not found)"
#endif
// Fill out[0..n) with gm_rng_u32(seed, stream, first + i) computed on the GPU.
int gm_cuda_rng_u32(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out, size_t n);
// Same with gm_rng_normal.
int gm_cuda_rng_normal(uint64_t seed, uint64_t stream, uint64_t first, float *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
