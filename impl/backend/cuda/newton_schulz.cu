// Newton-Schulz on a batch of equal-shape matrices: strided-batched GEMMs (cuBLAS or its reference, gemm.h) with fp32
// accumulation, in bf16 (cfg->bf16) or fp32 storage. The iteration and its rounding points are
// those of the CPU's emulation (cpu/newton_schulz.inc), X (m, n) wide, row-major:
//   X = bf16(G) (transposed when tall), X = bf16(X / (norm_scale ||.||_F + norm_eps))
//   per step (a, b, c):  A = bf16(X X^T)            (m, m)
//                        B = bf16(c A A + b A)      (m, m)
//                        X = bf16(B X + a X)        (m, n)
// where bf16() is one rounding of the fp32-accumulated product including its alpha/beta
// epilogue: exactly what a GEMM with bf16 C does (the CPU rounds after an fp32 GEMM). Without
// bf16 every bf16() is the identity and storage is fp32 (CUBLAS_COMPUTE_32F: no TF32). The GPU
// sums the products in another order than OpenBLAS, so the two agree to fp32 rounding, which
// with bf16 can flip a rounding now and then (verify/test_cuda_optim.c holds them to the bars).
//
// cuBLAS is column-major: the row-major (r, c) buffer is the column-major (c, r) matrix, so with
// Xc = X^T (n, m), ld n:
//   A = X X^T      -> gemm(T, N, m, m, n,   Xc, Xc)       (A symmetric: either layout)
//   B = c A A + bA -> gemm(N, N, m, m, m,   A, A), C = A, D = B, beta = b
//   Y = B X + a X  -> gemm(N, N, n, m, m,   Xc, B^T = Bc), C = X, D = Y, beta = a
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "backend/cuda/ortho.cuh"
#include "base/bf16.h"

// Index of element (r, c) of item's (rows, cols) G in the wide iterate (m, n).
static __device__ __forceinline__ size_t wide_index(int rows, int cols, int r, int c) {
    return rows > cols ? (size_t)c * rows + r : (size_t)r * cols + c;
}

// grid (blocks, nb): item blockIdx.y of d into X (nb, m, n) of bf16 or float, normalized.
__global__ static void ns_pack_kernel(void *X, const gm_cuda_ortho_desc *d, const double *ss, int bf16,
                                      double norm_scale, double norm_eps) {
    const gm_cuda_ortho_desc it = d[blockIdx.y];
    const size_t mn = (size_t)it.rows * it.cols;
    const double denom = norm_scale * sqrt(ss[blockIdx.y]) + norm_eps;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < mn; e += (size_t)gridDim.x * blockDim.x) {
        float x = it.G[e];
        if (bf16) x = gm_round_bf16(x);
        float y = (float)((double)x / denom);
        const size_t at =
            (size_t)blockIdx.y * mn + wide_index(it.rows, it.cols, (int)(e / it.cols), (int)(e % it.cols));
        if (bf16)
            ((__nv_bfloat16 *)X)[at] = __float2bfloat16_rn(y);
        else
            ((float *)X)[at] = y;
    }
}

// grid (blocks, nb): out = scale * X, back in the item's orientation.
__global__ static void ns_unpack_kernel(const gm_cuda_ortho_desc *d, const void *X, int bf16) {
    const gm_cuda_ortho_desc it = d[blockIdx.y];
    const size_t mn = (size_t)it.rows * it.cols;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < mn; e += (size_t)gridDim.x * blockDim.x) {
        const size_t at =
            (size_t)blockIdx.y * mn + wide_index(it.rows, it.cols, (int)(e / it.cols), (int)(e % it.cols));
        const float x = bf16 ? __bfloat162float(((const __nv_bfloat16 *)X)[at]) : ((const float *)X)[at];
        it.out[e] = __fmul_rn(x, it.scale);
    }
}

void gm_cuda_ns_batch(gm_cuda_ctx *c, const gm_ortho *cfg, const gm_cuda_ortho_desc *d, const double *ss, int nb, int m,
                      int n) {
    const int bf16 = cfg->bf16;
    const size_t esz = bf16 ? 2 : 4, xb = (size_t)nb * m * n * esz, ab = (size_t)nb * m * m * esz;
    const gm_gemm_type t = bf16 ? GM_GEMM_BF16 : GM_GEMM_F32;
    const long long sx = (long long)m * n, sa = (long long)m * m;
    void *X = gm_cuda_scratch(c, GM_SCR_NS_X, xb), *Y = gm_cuda_scratch(c, GM_SCR_NS_Y, xb);
    void *A = gm_cuda_scratch(c, GM_SCR_NS_A, ab), *B = gm_cuda_scratch(c, GM_SCR_NS_B, ab);
    if (!X || !Y || !A || !B) return;
    const dim3 grid(gm_cuda_blocks((size_t)m * n, 256), nb);
    ns_pack_kernel<<<grid, 256, 0, c->stream>>>(X, d, ss, bf16, cfg->coeffs->norm_scale, cfg->coeffs->norm_eps);
    GM_CU_LAUNCHED(c);
    for (int k = 0; k < cfg->steps; k++) {
        const double *abc = gm_ns_triple(cfg->coeffs, k);
        gm_cuda_gemm(c, c->libs, 1, 0, m, m, n, 1.0f, t, X, n, sx, X, n, sx, 0.0f, t, A, A, m, sa, nb);
        gm_cuda_gemm(c, c->libs, 0, 0, m, m, m, (float)abc[2], t, A, m, sa, A, m, sa, (float)abc[1], t, A, B, m, sa,
                     nb);
        gm_cuda_gemm(c, c->libs, 0, 0, n, m, m, 1.0f, t, X, n, sx, B, m, sa, (float)abc[0], t, X, Y, n, sx, nb);
        void *swap = X;
        X = Y, Y = swap;
    }
    ns_unpack_kernel<<<grid, 256, 0, c->stream>>>(d, X, bf16);
    GM_CU_LAUNCHED(c);
}
