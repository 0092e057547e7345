// Stand-in for builds without nvcc: the same interface, reporting that CUDA is absent, so the
// rest of the code and the tests link and run unchanged and GPU tests skip with this reason.
#ifndef GM_HAVE_CUDA
#include <stdio.h>

#include "backend/cuda/device.h"
#include "base/error.h"

int gm_cuda_device_count(char *why, size_t why_len) {
    if (why && why_len) snprintf(why, why_len, "%s", GM_NO_CUDA_WHY);
    return 0;
}

int gm_cuda_device_name(int device, char *buf, size_t len) {
    (void)device;
    if (len) buf[0] = '\0';
    return gm_fail("built without CUDA");
}

int gm_cuda_device_memory(int device, size_t *free_bytes, size_t *total_bytes) {
    (void)device;
    *free_bytes = *total_bytes = 0;
    return gm_fail("built without CUDA");
}

int gm_cuda_device_sms(int device) { return (void)device, 0; }

int gm_cuda_rng_u32(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out, size_t n) {
    (void)seed, (void)stream, (void)first, (void)out, (void)n;
    return gm_fail("built without CUDA");
}

int gm_cuda_rng_normal(uint64_t seed, uint64_t stream, uint64_t first, float *out, size_t n) {
    (void)seed, (void)stream, (void)first, (void)out, (void)n;
    return gm_fail("built without CUDA");
}
#else
typedef int gm_cuda_present;  // ISO C forbids an empty translation unit
#endif
