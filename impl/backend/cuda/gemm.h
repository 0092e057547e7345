// The CUDA backend's library calls and their plain references, callable from C (tests, benches).
//
// Every vendor-library call of the backend has a straightforward CUDA kernel beside it that
// computes the same thing with the same conventions:
//   GEMM   cuBLAS: cuBLASLt's cublasLtMatmul for one matrix (a plan cached per shape, a 32 MiB
//          workspace), cublasGemmStridedBatchedEx for batches  vs  gemm.cu's gemm_ref_kernel:
//          one thread per element of C, the k products summed in order.
//   SVD    cuSOLVER gesvdj  vs  svd_polar.cu's one-sided Jacobi in fp64.
// (The data channel without NCCL is the staged one of dist/, `--comm=single|mpi`.)
// Which one a backend runs is chosen when it is made, from the environment:
//   GM_CUDA_LIBS=vendor (default)  cuBLAS and cuSOLVER;
//   GM_CUDA_LIBS=ref               the references: no cuBLAS, cuBLASLt or cuSOLVER handle is ever created,
//                                  so the backend runs on a CUDA runtime without them (a
//                                  functional simulator, which cannot execute vendor libraries).
// On a real GPU the references cross-check the libraries (verify/test_cuda_gemm.c).
#ifndef GM_BACKEND_CUDA_GEMM_H
#define GM_BACKEND_CUDA_GEMM_H

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GM_CUDA_LIBS_VENDOR = 0, GM_CUDA_LIBS_REF = 1 } gm_cuda_libs;
typedef enum { GM_GEMM_F32 = 0, GM_GEMM_BF16 = 1 } gm_gemm_type;

// The implementation the CUDA backend `be` uses for its library calls.
gm_cuda_libs gm_cuda_libs_of(const gm_backend *be);

// Column-major, as BLAS defines it, on nb matrices at element strides sa, sb, sc:
//   C (m, n) = alpha op(A) op(B) + beta C,  op(A) (m, k), op(B) (k, n), op(X) = X or X^T (trans),
// A and B stored as `ab`, C as `ct`, products summed in fp32 (no TF32); beta = 0 never reads C.
// Device pointers of the CUDA backend `be`, queued on its stream; errors reported by its sync.
void gm_cuda_gemm_with(gm_cuda_libs impl, const gm_backend *be, int transa, int transb, int m, int n, int k,
                       float alpha, gm_gemm_type ab, const void *A, int lda, long long sa, const void *B, int ldb,
                       long long sb, float beta, gm_gemm_type ct, void *C, int ldc, long long sc, int nb);

#ifdef __cplusplus
}
#endif
#endif
