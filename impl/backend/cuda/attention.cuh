// Internal to the attention files of the CUDA backend: the launchers of the two implementations
// (attention_naive.cu, attention_mma.cu), called by the dispatcher in attention.cu after it has
// checked the shape (B, T, NH, HD > 0, HD <= 128, grid limits, block > 0 with a window) and, for
// the backward, computed the per-query vectors (D, and for the tensor-core kernels lse in log2
// units) once. q, k, v, out, dout, dq, dk, dv are activations (act_elem.cuh's gm_cuda_act); lse and
// D are fp32.
#ifndef GM_BACKEND_CUDA_ATTENTION_CUH
#define GM_BACKEND_CUDA_ATTENTION_CUH

#include "backend/cuda/act_elem.cuh"
#include "backend/cuda/cuda_common.cuh"

void gm_cuda_attn_naive_fwd(gm_cuda_ctx *c, gm_cuda_act *out, float *lse, const gm_cuda_act *q,
                            const gm_cuda_act *k, const gm_cuda_act *v, int B, int T, int NH, int HD, double scale,
                            gm_attn_mask m);
void gm_cuda_attn_naive_bwd(gm_cuda_ctx *c, gm_cuda_act *dq, gm_cuda_act *dk, gm_cuda_act *dv, gm_grad_write w,
                            const gm_cuda_act *dout, const gm_cuda_act *q, const gm_cuda_act *k, const gm_cuda_act *v,
                            const float *lse, const float *D, int B, int T, int NH, int HD, double scale,
                            gm_attn_mask m);

// The backward's per-query vectors are (B, NH, Tq) fp32, Tq = gm_cuda_attn_qvec_len: D =
// rowsum(dout * out) for either implementation (Tq = T for the naive kernels), and for the
// tensor-core kernels lse2 = lse log2(e) in fp32 (P = 2^(S scale log2(e) - lse2)); past T, D 0 and
// lse2 +inf (P = 0). Why padded to GM_ATTN_QVEC_ROWS (their blocks' 128 rows): a query tile's
// vectors are then whole, 16-byte aligned runs that one bulk copy brings (the wgmma dk/dv kernel,
// by TMA) and that need no bound of T or unit change by the threads that read them
// (FlashAttention-3's backward prepares its log-sum-exp the same way).
#define GM_ATTN_QVEC_ROWS 128
#define GM_ATTN_LOG2E 1.4426950408889634
static inline __host__ __device__ int gm_cuda_attn_qvec_len(int T, int tensor_cores) {
    return tensor_cores ? (T + GM_ATTN_QVEC_ROWS - 1) / GM_ATTN_QVEC_ROWS * GM_ATTN_QVEC_ROWS : T;
}

// Whether the tensor-core kernels take this head_dim and these tensors (16-byte alignment, for
// their 16-byte loads); n pointers.
int gm_cuda_attn_mma_fits(int HD, const void *const *ptrs, int n);
// The tensor-core forward's forms (attention_mma.cu): mma.sync with 16 query rows per warp (8 warps
// a block, one block an SM) or 32 (4 warps a block, FlashAttention-2's shape, two an SM at head_dim
// 128), or wgmma (sm_90a: two warpgroups of 64 rows; only where gm_cuda_attn_wgmma_runs), a block
// for each 128 queries of a head or (PERSIST) as many blocks as the GPU holds, each walking many,
// or (PINGPONG) a block for each 128 queries with the warpgroups taking turns to issue products.
typedef enum {
    GM_ATTN_FWD_MMA16,
    GM_ATTN_FWD_MMA32,
    GM_ATTN_FWD_WGMMA,
    GM_ATTN_FWD_WGMMA_PERSIST,
    GM_ATTN_FWD_WGMMA_PINGPONG
} gm_attn_fwd_form;
void gm_cuda_attn_mma_fwd(gm_cuda_ctx *c, gm_attn_fwd_form form, gm_cuda_act *out, float *lse, const gm_cuda_act *q,
                          const gm_cuda_act *k, const gm_cuda_act *v, int B, int T, int NH, int HD, double scale,
                          gm_attn_mask m);
// 1 when the wgmma forms run on the current device (the sm_90a machine code on an sm_90 GPU, and
// GM_CUDA_WGMMA not off).
int gm_cuda_attn_wgmma_runs(gm_cuda_ctx *c);
// gm_cuda_attn_wgmma_parts (attention.h) on the context's device.
int gm_cuda_attn_wgmma_parts_run(gm_cuda_ctx *c, int HD, char *report, size_t len);
// The tensor-core backward's forms: the dq and dk/dv kernels on mma.sync, or their products on
// wgmma, or (wgmma too) the one-pass kernel, dk/dv's with dq's product, dq summed over key blocks in
// a fixed order; the last two only where gm_cuda_attn_wgmma_runs. lse2, D: the per-query vectors.
typedef enum { GM_ATTN_BWD_MMA, GM_ATTN_BWD_WGMMA, GM_ATTN_BWD_ONEPASS } gm_attn_bwd_form;
void gm_cuda_attn_mma_bwd(gm_cuda_ctx *c, gm_attn_bwd_form form, gm_cuda_act *dq, gm_cuda_act *dk, gm_cuda_act *dv,
                          gm_grad_write w, const gm_cuda_act *dout, const gm_cuda_act *q, const gm_cuda_act *k,
                          const gm_cuda_act *v, const float *lse2, const float *D, int B, int T, int NH, int HD,
                          double scale, gm_attn_mask m);

// cuDNN's fused attention (attention_cudnn.cu), plain causal masks only: 0 when the call is
// enqueued (a failure of the run itself is noted), -1 when cuDNN cannot serve it (the mask, the
// element, head_dim, alignment, cuDNN absent or offering no engine): why says so and nothing ran.
// The backward writes dq, dk, dv (GM_GRAD_SET) and computes D itself (into GM_SCR_ATTN_D).
int gm_cuda_attn_cudnn_fwd(gm_cuda_ctx *c, gm_cuda_act *out, float *lse, const gm_cuda_act *q, const gm_cuda_act *k,
                           const gm_cuda_act *v, int B, int T, int NH, int HD, double scale, gm_attn_mask m,
                           char *why, size_t len);
int gm_cuda_attn_cudnn_bwd(gm_cuda_ctx *c, gm_cuda_act *dq, gm_cuda_act *dk, gm_cuda_act *dv, const gm_cuda_act *dout,
                           const gm_cuda_act *q, const gm_cuda_act *k, const gm_cuda_act *v, const gm_cuda_act *out,
                           const float *lse, int B, int T, int NH, int HD, double scale, gm_attn_mask m, char *why,
                           size_t len);

#endif
