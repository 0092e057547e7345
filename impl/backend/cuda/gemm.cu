// The backend's one GEMM entry (every matmul, Newton-Schulz product and SVD polar product goes
// through it): cuBLAS, or the plain reference kernel with exactly cuBLAS's operand, transpose and
// leading-dimension conventions (gemm.h). The reference is checked against OpenBLAS with the same
// arguments on the host, and against cuBLAS where a GPU runs it (verify/test_cuda_gemm.c).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemm.h"

// A stored element as fp32: bf16 is the high half of the float (exact).
static __device__ __forceinline__ float load_elem(const void *p, int bf16, size_t i) {
    if (bf16) return __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
    return ((const float *)p)[i];
}

// grid (blocks, nb): element e = i + j m of C in matrix blockIdx.y; the k products summed in order
// by one fused multiply-add each, then alpha acc + beta C with two roundings and one addition
// (beta C only when beta != 0), rounded once more to bf16 when C is bf16.
__global__ static void gemm_ref_kernel(int ta, int tb, int m, int n, int k, float alpha, int abf, const void *A,
                                       int lda, long long sa, const void *B, int ldb, long long sb, float beta, int cbf,
                                       void *C, int ldc, long long sc) {
    const size_t a0 = (size_t)blockIdx.y * sa, b0 = (size_t)blockIdx.y * sb, c0 = (size_t)blockIdx.y * sc;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < (size_t)m * n;
         e += (size_t)gridDim.x * blockDim.x) {
        const int i = (int)(e % m), j = (int)(e / m);
        float acc = 0.0f;
        for (int p = 0; p < k; p++) {
            const float a = load_elem(A, abf, a0 + (ta ? (size_t)i * lda + p : (size_t)p * lda + i));
            const float b = load_elem(B, abf, b0 + (tb ? (size_t)p * ldb + j : (size_t)j * ldb + p));
            acc = __fmaf_rn(a, b, acc);
        }
        const size_t at = c0 + (size_t)j * ldc + i;
        float r = __fmul_rn(alpha, acc);
        if (beta != 0.0f) r = __fadd_rn(r, __fmul_rn(beta, load_elem(C, cbf, at)));
        if (cbf)
            ((__nv_bfloat16 *)C)[at] = __float2bfloat16_rn(r);
        else
            ((float *)C)[at] = r;
    }
}

cublasHandle_t gm_cuda_blas(gm_cuda_ctx *c) {
    if (c->blas) return c->blas;
    if (c->libs == GM_CUDA_LIBS_REF) {
        gm_cuda_note(c, __FILE__, __LINE__, "cuBLAS", "not used under GM_CUDA_LIBS=ref (a reference was missed)");
        return NULL;
    }
    cublasHandle_t h = NULL;
    cublasStatus_t st = cublasCreate(&h);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetStream(h, c->stream);
    if (st != CUBLAS_STATUS_SUCCESS) {
        if (h) cublasDestroy(h);
        gm_cuda_note(c, __FILE__, __LINE__, "cuBLAS set-up", cublasGetStatusString(st));
        return NULL;
    }
    return c->blas = h;
}

void gm_cuda_gemm(gm_cuda_ctx *c, gm_cuda_libs impl, int ta, int tb, int m, int n, int k, float alpha,
                  gm_gemm_type ab, const void *A, int lda, long long sa, const void *B, int ldb, long long sb,
                  float beta, gm_gemm_type ct, void *C, int ldc, long long sc, int nb) {
    if (m <= 0 || n <= 0 || nb <= 0) return;
    if (impl == GM_CUDA_LIBS_REF) {
        const dim3 grid(gm_cuda_blocks((size_t)m * n, 128), (unsigned)nb);
        gemm_ref_kernel<<<grid, 128, 0, c->stream>>>(ta, tb, m, n, k, alpha, ab == GM_GEMM_BF16, A, lda, sa, B, ldb, sb,
                                                     beta, ct == GM_GEMM_BF16, C, ldc, sc);
        GM_CU_LAUNCHED(c);
        return;
    }
    cublasHandle_t h = gm_cuda_blas(c);
    if (!h) return;
    const cudaDataType_t tab = ab == GM_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const cudaDataType_t tc = ct == GM_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A, tab, lda, sa, B, tab,
        ldb, sb, &beta, C, tc, ldc, sc, nb, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        gm_cuda_note(c, __FILE__, __LINE__, "cublasGemmStridedBatchedEx", cublasGetStatusString(st));
}

extern "C" gm_cuda_libs gm_cuda_libs_of(const gm_backend *be) { return gm_cuda_ctx_of(be)->libs; }

extern "C" void gm_cuda_gemm_with(gm_cuda_libs impl, const gm_backend *be, int transa, int transb, int m, int n, int k,
                                  float alpha, gm_gemm_type ab, const void *A, int lda, long long sa, const void *B,
                                  int ldb, long long sb, float beta, gm_gemm_type ct, void *C, int ldc, long long sc,
                                  int nb) {
    gm_cuda_gemm(gm_cuda_ctx_of(be), impl, transa, transb, m, n, k, alpha, ab, A, lda, sa, B, ldb, sb, beta, ct, C,
                 ldc, sc, nb);
}
