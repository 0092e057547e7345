// Linear layer without bias on the backend's GEMM (cuBLAS, or its reference: gemm.h): the fp32
// operands are rounded to bf16 copies in scratch
// (round to nearest even), multiplied with fp32 accumulation (CUBLAS_COMPUTE_32F) into fp32
// outputs; the backward adds into dW through beta = 1, and into dinp only when asked (beta 0 never
// reads it).
//
// Row-major (R, C) is column-major (C, R) with leading dimension C, so with W (OC, C):
//   out^T (OC, N) = W * inp^T          -> gemm(T, N, m=OC, n=N,  k=C,  A=W,   B=inp)
//   dinp^T (C, N) (+)= W^T * dout^T    -> gemm(N, N, m=C,  n=N,  k=OC, A=W,   B=dout)
//   dW^T (C, OC) += inp^T * dout       -> gemm(N, T, m=C,  n=OC, k=N,  A=inp, B=dout)
// (in column-major terms, each named matrix being its row-major buffer).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "backend/cuda/cuda_common.cuh"

__global__ static void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

// A bf16 copy of src (n values) in scratch slot `slot`; NULL on failure (noted).
static const __nv_bfloat16 *bf16_copy(gm_cuda_ctx *c, int slot, const float *src, size_t n) {
    __nv_bfloat16 *d = (__nv_bfloat16 *)gm_cuda_scratch(c, slot, n * sizeof(__nv_bfloat16));
    if (!d) return NULL;
    to_bf16_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(d, src, n);
    GM_CU_LAUNCHED(c);
    return d;
}

// Column-major C (m, n) = op(A) op(B) + beta C, bf16 A and B, fp32 C, fp32 accumulation.
static void gemm_bf16(gm_cuda_ctx *c, int ta, int tb, int m, int n, int k, const __nv_bfloat16 *A, int lda,
                      const __nv_bfloat16 *B, int ldb, float beta, float *Cm, int ldc) {
    gm_cuda_gemm(c, c->libs, ta, tb, m, n, k, 1.0f, GM_GEMM_BF16, A, lda, 0, B, ldb, 0, beta, GM_GEMM_F32, Cm, ldc, 0,
                 1);
}

void gm_cuda_matmul_fwd(const gm_backend *be, gm_actval *out_act, const gm_actval *inp_act, const gm_real *W, int N, int C,
                        int OC) {
    gm_real *out = (gm_real *)out_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || OC <= 0) return;
    if (C <= 0) {  // an empty sum
        GM_CU(c, cudaMemsetAsync(out, 0, sizeof(float) * (size_t)N * OC, c->stream));
        return;
    }
    const __nv_bfloat16 *w16 = bf16_copy(c, GM_SCR_MM_A, W, (size_t)OC * C);
    const __nv_bfloat16 *x16 = bf16_copy(c, GM_SCR_MM_B, inp, (size_t)N * C);
    if (!w16 || !x16) return;
    gemm_bf16(c, 1, 0, OC, N, C, w16, C, x16, C, 0.0f, out, OC);
}

void gm_cuda_matmul_bwd(const gm_backend *be, gm_actval *dinp_act, gm_grad_write dinp_write, gm_real *dW,
                        const gm_actval *dout_act, const gm_actval *inp_act, const gm_real *W, int N, int C, int OC) {
    gm_real *dinp = (gm_real *)dinp_act;
    const gm_real *dout = (const gm_real *)dout_act;
    const gm_real *inp = (const gm_real *)inp_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0 || OC <= 0 || (!dinp && !dW)) return;
    const __nv_bfloat16 *d16 = bf16_copy(c, GM_SCR_MM_A, dout, (size_t)N * OC);
    if (!d16) return;
    if (dinp) {
        const __nv_bfloat16 *w16 = bf16_copy(c, GM_SCR_MM_B, W, (size_t)OC * C);
        if (!w16) return;
        gemm_bf16(c, 0, 0, C, N, OC, w16, C, d16, OC, dinp_write == GM_GRAD_ADD ? 1.0f : 0.0f, dinp, C);
    }
    if (dW) {
        const __nv_bfloat16 *x16 = bf16_copy(c, GM_SCR_MM_C, inp, (size_t)N * C);
        if (!x16) return;
        gemm_bf16(c, 0, 1, C, OC, N, x16, C, d16, OC, 1.0f, dW, C);
    }
}
