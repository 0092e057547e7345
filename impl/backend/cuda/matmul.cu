// Linear layer without bias on the backend's GEMM (cuBLAS, or its reference: gemm.h): bf16
// operands, fp32 accumulation (CUBLAS_COMPUTE_32F). An activation operand (inp, dout) is passed as
// it is stored when the activation element (act_elem.cuh) is bf16, else rounded to a bf16 copy in
// scratch (round to nearest even); the fp32 weight W is rounded to a bf16 copy on every call
// (OC C values, small beside the N-row activations). out and dinp are written as activations
// (GM_GEMM_ACT: one rounding of the fp32 result), out = alpha acc with beta = 0, or with a residual
// D = alpha acc + res (beta = 1, C = res, D = out: the residual add in the GEMM's epilogue, one
// rounding), dinp with beta = 0 (set) or 1 (added, as asked); dW is fp32, accumulated through beta = 1.
//
// Row-major (R, C) is column-major (C, R) with leading dimension C, so with W (OC, C):
//   out^T (OC, N) = s W * inp^T (+ res^T)  -> gemm(T, N, m=OC, n=N,  k=C,  A=W,   B=inp, C=res, D=out)
//   dinp^T (C, N) (+)= W^T * dout^T    -> gemm(N, N, m=C,  n=N,  k=OC, A=W,   B=dout)
//   dW^T (C, OC) += inp^T * dout       -> gemm(N, T, m=C,  n=OC, k=N,  A=inp, B=dout)
// (in column-major terms, each named matrix being its row-major buffer).
//
// DRAM bytes per call (each GEMM operand counted once; e = the activation element's size, 4 or 2):
//   forward   inp e N C; W 4 OC C read, its bf16 copy 2 OC C written and read back; out e N OC (and
//             res e N OC read);
//   backward  dout e N OC; W as in the forward (for dinp); inp e N C (for dW); dinp e N C written
//             (and read first when added); dW 4 OC C read and written;
// plus, while e is 4, each activation operand's bf16 copy: 4 read, 2 written, 2 read back per element
// in place of e.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <type_traits>

#include "backend/cuda/cuda_common.cuh"

__global__ static void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

// src (n values) as a GEMM operand in bf16: src itself when it is bf16, else a bf16 copy in
// scratch slot `slot`. NULL on failure (noted).
template <class T> static const __nv_bfloat16 *bf16_operand(gm_cuda_ctx *c, int slot, const T *src, size_t n) {
    static_assert(std::is_same<T, float>::value || std::is_same<T, __nv_bfloat16>::value, "fp32 or bf16 operands");
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
        (void)c, (void)slot, (void)n;
        return src;
    } else {
        __nv_bfloat16 *d = (__nv_bfloat16 *)gm_cuda_scratch(c, slot, n * sizeof(__nv_bfloat16));
        if (!d) return NULL;
        to_bf16_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(d, src, n);
        GM_CU_LAUNCHED(c);
        return d;
    }
}

// Column-major D (m, n) = alpha op(A) op(B) + beta C, bf16 A and B, C and D stored as ct, fp32 accumulation.
static void gemm_bf16(gm_cuda_ctx *c, int ta, int tb, int m, int n, int k, float alpha, const __nv_bfloat16 *A,
                      int lda, const __nv_bfloat16 *B, int ldb, float beta, gm_gemm_type ct, const void *Cm, void *Dm,
                      int ldc) {
    gm_cuda_gemm(c, c->libs, ta, tb, m, n, k, alpha, GM_GEMM_BF16, A, lda, 0, B, ldb, 0, beta, ct, Cm, Dm, ldc, 0, 1);
}

void gm_cuda_matmul_fwd(const gm_backend *be, gm_actval *out, const gm_actval *inp, const gm_real *W, int N, int C,
                        int OC, double scale, const gm_actval *res) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || OC <= 0) return;
    if (C <= 0) {  // an empty sum: the residual alone
        if (res)
            GM_CU(c, cudaMemcpyAsync(o, res, sizeof(gm_cuda_act) * (size_t)N * OC, cudaMemcpyDeviceToDevice, c->stream));
        else
            GM_CU(c, cudaMemsetAsync(o, 0, sizeof(gm_cuda_act) * (size_t)N * OC, c->stream));
        return;
    }
    const __nv_bfloat16 *w16 = bf16_operand(c, GM_SCR_MM_A, W, (size_t)OC * C);
    const __nv_bfloat16 *x16 = bf16_operand(c, GM_SCR_MM_B, x, (size_t)N * C);
    if (!w16 || !x16) return;
    // Without a residual C is out itself at beta = 0 (never read), as before: no NULL C for cuBLASLt.
    gemm_bf16(c, 1, 0, OC, N, C, (float)scale, w16, C, x16, C, res ? 1.0f : 0.0f, GM_GEMM_ACT, res ? (const void *)res : o,
              o, OC);
}

void gm_cuda_matmul_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, gm_real *dW,
                        const gm_actval *dout, const gm_actval *inp, const gm_real *W, int N, int C, int OC) {
    gm_cuda_act *dx = (gm_cuda_act *)dinp;
    const gm_cuda_act *dy = (const gm_cuda_act *)dout;
    const gm_cuda_act *x = (const gm_cuda_act *)inp;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0 || OC <= 0 || (!dx && !dW)) return;
    const __nv_bfloat16 *d16 = bf16_operand(c, GM_SCR_MM_A, dy, (size_t)N * OC);
    if (!d16) return;
    if (dx) {
        const __nv_bfloat16 *w16 = bf16_operand(c, GM_SCR_MM_B, W, (size_t)OC * C);
        if (!w16) return;
        gemm_bf16(c, 0, 0, C, N, OC, 1.0f, w16, C, d16, OC, dinp_write == GM_GRAD_ADD ? 1.0f : 0.0f, GM_GEMM_ACT, dx, dx,
                  C);
    }
    if (dW) {
        const __nv_bfloat16 *x16 = bf16_operand(c, GM_SCR_MM_C, x, (size_t)N * C);
        if (!x16) return;
        gemm_bf16(c, 0, 1, C, OC, N, 1.0f, x16, C, d16, OC, 1.0f, GM_GEMM_F32, dW, dW, C);
    }
}
