// The CUDA backend struct: device memory on one stream, the library choice (gemm.h), scratch buffers,
// error recording for sync, and the kernels of this folder (gm_cuda_<name> for every entry of
// GM_BACKEND_KERNELS).
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_common.cuh"
#include "base/error.h"

void gm_cuda_note(gm_cuda_ctx *c, const char *file, int line, const char *what, const char *err) {
    if (!c->failed) {
        snprintf(c->msg, sizeof c->msg, "cuda backend: %s:%d: %s: %s", file, line, what, err);
        c->failed = 1;
    }
    gm_fail("%s", c->msg);
}

void *gm_cuda_scratch(gm_cuda_ctx *c, int slot, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (c->scr_bytes[slot] >= bytes) return c->scr[slot];
    // Work already queued may still read the old buffer.
    GM_CU(c, cudaStreamSynchronize(c->stream));
    if (c->scr[slot]) GM_CU(c, cudaFree(c->scr[slot]));
    c->scr[slot] = NULL;
    c->scr_bytes[slot] = 0;
    size_t want = (bytes + bytes / 4 + 255) / 256 * 256;  // headroom for slowly growing shapes
    cudaError_t e = cudaMalloc(&c->scr[slot], want);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky for the runtime; it is for us
        c->scr[slot] = NULL;
        char what[96];
        snprintf(what, sizeof what, "scratch slot %d: cudaMalloc(%zu bytes)", slot, want);
        gm_cuda_note(c, __FILE__, __LINE__, what, cudaGetErrorString(e));
        return NULL;
    }
    c->scr_bytes[slot] = want;
    return c->scr[slot];
}

// ---- memory ----

static void *cuda_alloc(const gm_backend *be, size_t bytes) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        gm_fail("cuda backend: cannot allocate %zu bytes: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    e = cudaMemsetAsync(p, 0, bytes ? bytes : 1, c->stream);
    if (e != cudaSuccess) {
        gm_cuda_note(c, __FILE__, __LINE__, "cudaMemsetAsync (zeroing a new allocation)", cudaGetErrorString(e));
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cuda_free(const gm_backend *be, void *p) {
    if (p) GM_CU(gm_cuda_ctx_of(be), cudaFree(p));  // cudaFree waits for the device
}

static void cuda_upload(const gm_backend *be, void *dst, const void *host_src, size_t bytes) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!bytes) return;
    GM_CU(c, cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, c->stream));
    GM_CU(c, cudaStreamSynchronize(c->stream));  // the caller may reuse host_src at once
}

static void cuda_download(const gm_backend *be, void *host_dst, const void *src, size_t bytes) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!bytes) return;
    GM_CU(c, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    GM_CU(c, cudaStreamSynchronize(c->stream));
}

// memmove semantics: overlapping ranges go through a scratch buffer.
void gm_cuda_copy(const gm_backend *be, void *dst, const void *src, size_t bytes) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!bytes || dst == src) return;
    const char *s = (const char *)src;
    char *d = (char *)dst;
    if (d < s + bytes && s < d + bytes) {
        void *tmp = gm_cuda_scratch(c, GM_SCR_COPY, bytes);
        if (!tmp) return;
        GM_CU(c, cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
        GM_CU(c, cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDeviceToDevice, c->stream));
        return;
    }
    GM_CU(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
}

__global__ static void fill_kernel(float *p, float value, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = value;
}

// +0 (every bit zero: the step's one fill, the gradients' reset) is the driver's memset, which
// writes near the memory's rate; the kernel, one store per element, reached 0.41 of the copy
// bandwidth on 1.1 GB on the H200 (reports/gpu-h200/kernels-softcap.md). Any other value (-0 too)
// is the kernel's.
void gm_cuda_fill(const gm_backend *be, gm_real *p, gm_real value, size_t n) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    const float zero = 0.0f;
    if (!memcmp(&value, &zero, sizeof zero)) {
        GM_CU(c, cudaMemsetAsync(p, 0, n * sizeof *p, c->stream));
        return;
    }
    fill_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(p, value, n);
    GM_CU_LAUNCHED(c);
}

// ---- the backend ----

static gm_cuda_ctx cuda_ctx;
static gm_backend cuda_backend;
static int cuda_ready;

extern "C" const gm_backend *gm_backend_cuda(int device) {
    if (cuda_ready) {
        if (device != cuda_ctx.device) {
            gm_fail("cuda backend: already made on device %d; one device per process (asked for %d)", cuda_ctx.device,
                    device);
            return NULL;
        }
        return &cuda_backend;
    }
    // The environment's choices first, so that a bad one is said on any machine.
    const char *libs = getenv("GM_CUDA_LIBS"), *attn = getenv("GM_CUDA_ATTN"), *wgmma = getenv("GM_CUDA_WGMMA");
    if (libs && *libs && strcmp(libs, "vendor") && strcmp(libs, "ref")) {
        gm_fail("cuda backend: GM_CUDA_LIBS: unknown value '%s' (vendor, ref)", libs);
        return NULL;
    }
    if (wgmma && *wgmma && strcmp(wgmma, "on") && strcmp(wgmma, "off")) {
        gm_fail("cuda backend: GM_CUDA_WGMMA: unknown value '%s' (on, off)", wgmma);
        return NULL;
    }
    gm_cuda_attn_impl attn_fwd = GM_CUDA_ATTN_AUTO, attn_bwd = GM_CUDA_ATTN_AUTO;
    if (attn && *attn && gm_cuda_attn_parse_pair(attn, &attn_fwd, &attn_bwd)) {
        gm_fail("cuda backend: GM_CUDA_ATTN: unknown value '%s' (a form, or FWD,BWD; forms: %s)", attn,
                GM_CUDA_ATTN_NAMES);
        return NULL;
    }
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        gm_fail("cuda backend: no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
        return NULL;
    }
    if (device < 0 || device >= n) {
        gm_fail("cuda backend: no device %d (%d found)", device, n);
        return NULL;
    }
    gm_cuda_ctx *c = &cuda_ctx;
    memset(c, 0, sizeof *c);
    c->device = device;
    c->libs = libs && !strcmp(libs, "ref") ? GM_CUDA_LIBS_REF : GM_CUDA_LIBS_VENDOR;
    c->attn_fwd = attn_fwd, c->attn_bwd = attn_bwd;
    c->wgmma_off = wgmma && !strcmp(wgmma, "off");
    if ((e = cudaSetDevice(device)) != cudaSuccess) {
        gm_fail("cuda backend: cudaSetDevice(%d): %s", device, cudaGetErrorString(e));
        return NULL;
    }
    // A blocking stream: it also orders against legacy default-stream work of other code.
    if ((e = cudaStreamCreate(&c->stream)) != cudaSuccess) {
        gm_fail("cuda backend: cudaStreamCreate: %s", cudaGetErrorString(e));
        return NULL;
    }
    gm_backend *be = &cuda_backend;
    memset(be, 0, sizeof *be);
    be->name = "cuda";
    be->ctx = c;
    be->host_visible = 0;
    be->act_size = sizeof(gm_cuda_act);
    be->sync = gm_cuda_sync;
    be->alloc = cuda_alloc;
    be->free = cuda_free;
    be->upload = cuda_upload;
    be->download = cuda_download;
#define GM_CUDA_FIELD(name, params, args) be->name = gm_cuda_##name;
    GM_BACKEND_KERNELS(GM_CUDA_FIELD)
#undef GM_CUDA_FIELD
    cuda_ready = 1;
    return be;
}

extern "C" void *gm_cuda_stream(const gm_backend *be) {
    return cuda_ready && be == &cuda_backend ? (void *)cuda_ctx.stream : NULL;
}

// Errors since the last sync are reported once and forgotten, except a device fault: the CUDA
// runtime keeps returning a sticky error (an illegal address, a kernel trap) from every call, so
// the context is unusable and every later sync reports the first error again.
extern "C" int gm_cuda_sync(const gm_backend *be) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    GM_CU(c, cudaStreamSynchronize(c->stream));
    GM_CU(c, cudaGetLastError());
    if (!c->failed) return 0;
    // A sticky error survives cudaGetLastError (above); a healthy, idle stream answers success.
    if (!c->faulted && cudaStreamQuery(c->stream) != cudaSuccess) c->faulted = 1;
    if (!c->faulted) c->failed = 0;
    return gm_fail("%s%s", c->msg, c->faulted ? " (the device faulted: this process cannot use it any more)" : "");
}
