// The Philox stream of base/rng.h drawn on the GPU: the same header compiled for the device, so
// the tests can prove that CPU and GPU draw identical numbers.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>

#include "backend/cuda/device.h"
#include "base/error.h"
#include "base/rng.h"

// A runtime that reports devices is believed (a CUDA runtime library that executes kernels itself,
// like a functional simulator, comes without a driver library). Otherwise "no device" is only:
// no NVIDIA driver library at all, or a driver that finds no GPU. Any other
// runtime error (a driver older than the runtime, a failed initialisation) is a broken CUDA set-up
// and answers -1, so GPU tests fail instead of skipping.
extern "C" int gm_cuda_device_count(char *why, size_t why_len) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err == cudaSuccess && n > 0) return n;  // a runtime that finds devices (with or without a driver library)
    (void)cudaGetLastError();
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
        if (why && why_len) snprintf(why, why_len, "no NVIDIA driver (%s)", dlerror());
        return 0;
    }
    dlclose(driver);
    if (err == cudaErrorNoDevice || err == cudaSuccess) {
        if (why && why_len) snprintf(why, why_len, "no CUDA device (the driver finds no GPU)");
        return 0;
    }
    if (why && why_len)
        snprintf(why, why_len, "CUDA is broken here: cudaGetDeviceCount: %s (%s)", cudaGetErrorString(err),
                 cudaGetErrorName(err));
    return -1;
}

extern "C" int gm_cuda_device_name(int device, char *buf, size_t len) {
    cudaDeviceProp p;
    const cudaError_t err = cudaGetDeviceProperties(&p, device);
    if (err != cudaSuccess) {
        if (len) buf[0] = '\0';
        return gm_fail("CUDA device %d: %s", device, cudaGetErrorString(err));
    }
    snprintf(buf, len, "%s (sm_%d%d, %d SMs)", p.name, p.major, p.minor, p.multiProcessorCount);
    return 0;
}

extern "C" int gm_cuda_device_memory(int device, size_t *free_bytes, size_t *total_bytes) {
    cudaError_t err = cudaSetDevice(device);
    if (err == cudaSuccess) err = cudaMemGetInfo(free_bytes, total_bytes);
    if (err != cudaSuccess) return *free_bytes = *total_bytes = 0, gm_fail("CUDA device %d: %s", device, cudaGetErrorString(err));
    return 0;
}

extern "C" int gm_cuda_device_sms(int device) {
    int sms = 0;
    return cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess ? sms : 0;
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
    if (!n) return 0;  // a 0-block grid is an invalid launch
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
    if (!n) return 0;  // a 0-block grid is an invalid launch
    unsigned blocks = (unsigned)((n + 255) / 256);
    CUDA_TRY(cudaMalloc(&d, n * sizeof *d));
    rng_normal_kernel<<<blocks, 256>>>(seed, stream, first, d, n);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaMemcpy(out, d, n * sizeof *d, cudaMemcpyDeviceToHost));
done:
    cudaFree(d);
    return rc;
}
