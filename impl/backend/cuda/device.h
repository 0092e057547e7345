// CUDA device discovery, callable from C whether or not the build has CUDA.
#ifndef GM_BACKEND_CUDA_DEVICE_H
#define GM_BACKEND_CUDA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Number of usable CUDA devices; 0 when the build has no CUDA, there is no driver, or no GPU.
// `why` (may be NULL) receives a one-line reason when the answer is 0.
int gm_cuda_device_count(char *why, size_t why_len);
// Fill out[0..n) with gm_rng_u32(seed, stream, first + i) computed on the GPU.
int gm_cuda_rng_u32(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out, size_t n);
// Same with gm_rng_normal.
int gm_cuda_rng_normal(uint64_t seed, uint64_t stream, uint64_t first, float *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
