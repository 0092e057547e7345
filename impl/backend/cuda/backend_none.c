// Stand-in for builds without nvcc (and for the fp64 and sanitizer builds): the CUDA backend's
// interface, answering that there is no CUDA, so callers and tests link unchanged.
#ifndef GM_HAVE_CUDA
#include <stddef.h>
#include <stdio.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/device.h"
#include "backend/cuda/gemm.h"
#include "base/error.h"

const gm_backend *gm_backend_cuda(int device) {
    gm_fail("cuda backend: device %d: %s", device, GM_NO_CUDA_WHY);
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

int gm_cuda_attn_cudnn_graph_check(int bwd, int B, int T, int NH, int HD, char *why, size_t len) {
    (void)bwd, (void)B, (void)T, (void)NH, (void)HD;
    snprintf(why, len, "%s", GM_NO_CUDA_WHY);
    return -1;
}

int gm_cuda_attn_cudnn_plan_offline(int bwd, int B, int T, int NH, int HD, const char *device_json,
                                    int64_t *workspace, int64_t *engine, char *why, size_t len) {
    (void)bwd, (void)B, (void)T, (void)NH, (void)HD, (void)device_json, (void)workspace, (void)engine;
    snprintf(why, len, "%s", GM_NO_CUDA_WHY);
    return -1;
}

int gm_cuda_cudnn_device_json(int device, char *json, size_t json_len, char *why, size_t len) {
    (void)device, (void)json, (void)json_len;
    snprintf(why, len, "%s", GM_NO_CUDA_WHY);
    return -1;
}

// Unreachable without a backend to pass; they fail like the rest.
void gm_cuda_attn_fwd_with(gm_cuda_attn_impl impl, const gm_backend *be, gm_actval *out, gm_real *lse,
                           const gm_actval *q, const gm_actval *k, const gm_actval *v, int B, int T, int NH, int HD,
                           double scale, gm_attn_mask mask) {
    (void)impl, (void)be, (void)out, (void)lse, (void)q, (void)k, (void)v, (void)B, (void)T, (void)NH, (void)HD;
    (void)scale, (void)mask;
    gm_fail("cuda backend: built without CUDA");
}
void gm_cuda_attn_bwd_with(gm_cuda_attn_impl impl, const gm_backend *be, gm_actval *dq, gm_actval *dk, gm_actval *dv,
                           gm_grad_write dqkv_write, const gm_actval *dout, const gm_actval *q, const gm_actval *k,
                           const gm_actval *v, const gm_actval *out, const gm_real *lse, int B, int T, int NH, int HD,
                           double scale, gm_attn_mask mask) {
    (void)impl, (void)be, (void)dq, (void)dk, (void)dv, (void)dqkv_write, (void)dout, (void)q, (void)k, (void)v, (void)out, (void)lse;
    (void)B, (void)T, (void)NH, (void)HD, (void)scale, (void)mask;
    gm_fail("cuda backend: built without CUDA");
}
int gm_cuda_attn_mma_built(void) { return 0; }
int gm_cuda_attn_wgmma_ready(const gm_backend *be) { return (void)be, 0; }
int gm_cuda_attn_wgmma_parts(const gm_backend *be, int HD, char *report, size_t len) {
    return (void)be, (void)HD, snprintf(report, len, "built without CUDA\n"), -1;
}
gm_cuda_attn_impl gm_cuda_attn_auto_form(const gm_backend *be, int bwd, int HD) {
    return (void)be, (void)bwd, (void)HD, GM_CUDA_ATTN_NAIVE;
}
gm_cuda_libs gm_cuda_libs_of(const gm_backend *be) {
    (void)be;
    return GM_CUDA_LIBS_VENDOR;
}
void gm_cuda_gemm_with(gm_cuda_libs impl, const gm_backend *be, int transa, int transb, int m, int n, int k,
                       float alpha, gm_gemm_type ab, const void *A, int lda, long long sa, const void *B, int ldb,
                       long long sb, float beta, gm_gemm_type ct, void *C, int ldc, long long sc, int nb) {
    (void)impl, (void)be, (void)transa, (void)transb, (void)m, (void)n, (void)k, (void)alpha, (void)ab, (void)A;
    (void)lda, (void)sa, (void)B, (void)ldb, (void)sb, (void)beta, (void)ct, (void)C, (void)ldc, (void)sc, (void)nb;
    gm_fail("cuda backend: built without CUDA");
}
#else
typedef int gm_cuda_backend_present;  // ISO C forbids an empty translation unit
#endif
