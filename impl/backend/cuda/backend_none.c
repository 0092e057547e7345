// Stand-in for builds without nvcc (and for the fp64 and sanitizer builds): the CUDA backend's
// interface, answering that there is no CUDA, so callers and tests link unchanged.
#ifndef GM_HAVE_CUDA
#include <stddef.h>

#include "backend/cuda/cuda.h"
#include "base/error.h"

const gm_backend *gm_backend_cuda(int device) {
    gm_fail("cuda backend: device %d: built without CUDA (nvcc was not found)", device);
    return NULL;
}

int gm_cuda_sync(const gm_backend *be) {
    (void)be;
    return gm_fail("cuda backend: built without CUDA");
}
void *gm_cuda_stream(const gm_backend *be) {
    (void)be;
    return NULL;
}
#else
typedef int gm_cuda_backend_present;  // ISO C forbids an empty translation unit
#endif
