// The Philox stream of base/rng.h drawn on the GPU: the same header compiled for the device, so
// the tests can prove that CPU and GPU draw identical numbers.
#include <cuda_runtime.h>
#include <stdio.h>

#include "backend/cuda/device.h"
#include "base/error.h"
#include "base/rng.h"

extern "C" int gm_cuda_device_count(char *why, size_t why_len) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        if (why && why_len) snprintf(why, why_len, "no CUDA device (%s)", err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
        return 0;
    }
    return n;
}

__global__ static void rng_u32_kernel(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = gm_rng_u32(seed, stream, first + i);
}

__global__ static void rng_normal_kernel(uint64_t seed, uint64_t stream, uint64_t first, float *out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = gm_rng_normal(seed, stream, first + i);
}

#define CUDA_TRY(call)                                                                          \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            rc = gm_fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
            goto done;                                                                          \
        }                                                                                       \
    } while (0)

extern "C" int gm_cuda_rng_u32(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out, size_t n) {
    int rc = 0;
    uint32_t *d = NULL;
    unsigned blocks = (unsigned)((n + 255) / 256);
    CUDA_TRY(cudaMalloc(&d, n * sizeof *d));
    rng_u32_kernel<<<blocks, 256>>>(seed, stream, first, d, n);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaMemcpy(out, d, n * sizeof *d, cudaMemcpyDeviceToHost));
done:
    cudaFree(d);
    return rc;
}

extern "C" int gm_cuda_rng_normal(uint64_t seed, uint64_t stream, uint64_t first, float *out, size_t n) {
    int rc = 0;
    float *d = NULL;
    unsigned blocks = (unsigned)((n + 255) / 256);
    CUDA_TRY(cudaMalloc(&d, n * sizeof *d));
    rng_normal_kernel<<<blocks, 256>>>(seed, stream, first, d, n);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaMemcpy(out, d, n * sizeof *d, cudaMemcpyDeviceToHost));
done:
    cudaFree(d);
    return rc;
}
