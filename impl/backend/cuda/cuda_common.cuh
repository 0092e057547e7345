// Internal to the CUDA backend: its state, error recording, scratch buffers, the kernels'
// shared device helpers and the prototypes that cuda_backend.cu gathers into the struct.
#ifndef GM_BACKEND_CUDA_CUDA_COMMON_CUH
#define GM_BACKEND_CUDA_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/backend.h"

static_assert(sizeof(gm_real) == sizeof(float), "the CUDA backend keeps fp32 master values (no -DGM_FP64)");

// Scratch buffers, one per purpose, grown on demand and reused. All work is on one stream, so a
// slot may be reused by the next call without waiting; growing one waits for the stream first.
enum {
    GM_SCR_MM_A,       // bf16 copy of a matmul operand
    GM_SCR_MM_B,       // bf16 copy of a matmul operand
    GM_SCR_MM_C,       // bf16 copy of a matmul operand
    GM_SCR_ATTN_D,     // attention backward: D = rowsum(dout * out), (B, NH, T)
    GM_SCR_RED,        // per-block partial sums of deterministic reductions
    GM_SCR_SORT_KEYS,  // embedding backward: sorted token ids
    GM_SCR_SORT_POS,   // embedding backward: positions 0..N-1, then sorted by id
    GM_SCR_SORT_POS2,  // embedding backward: sort output
    GM_SCR_SORT_TMP,   // embedding backward: CUB's temporary storage
    GM_SCR_COPY,       // staging for overlapping copies
    GM_SCR_COUNT
};

typedef struct {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *scr[GM_SCR_COUNT];
    size_t scr_bytes[GM_SCR_COUNT];
    int failed;     // sticky: set by the first error
    char msg[512];  // that error
} gm_cuda_ctx;

static inline gm_cuda_ctx *gm_cuda_ctx_of(const gm_backend *be) { return (gm_cuda_ctx *)be->ctx; }

// Record an error (the first one is kept, and gm_fail'd on this thread).
void gm_cuda_note(gm_cuda_ctx *c, const char *file, int line, const char *what, const char *err);
// Scratch slot `slot` with at least `bytes`; NULL (error noted) when it cannot be allocated.
void *gm_cuda_scratch(gm_cuda_ctx *c, int slot, size_t bytes);

#define GM_CU(c, call)                                                                       \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) gm_cuda_note((c), __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    } while (0)
// After a kernel launch: a bad configuration shows here; a fault inside shows at gm_cuda_sync.
#define GM_CU_LAUNCHED(c) GM_CU(c, cudaGetLastError())

// Blocks for a grid-stride loop over n elements, capped (the loop covers the rest).
static inline unsigned gm_cuda_blocks(size_t n, unsigned threads) {
    size_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    return b > 65535u * 16u ? 65535u * 16u : (unsigned)b;
}

#ifdef __CUDACC__
#define GM_FULL_MASK 0xffffffffu
// Warp sum in a fixed order (a tree down to lane 0, then broadcast), so every lane gets the same
// bits and every run the same result. All 32 lanes must call it.
static __device__ __forceinline__ float gm_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(GM_FULL_MASK, v, o);
    return __shfl_sync(GM_FULL_MASK, v, 0);
}
static __device__ __forceinline__ float gm_warp_max(float v) {  // exact, so any order
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(GM_FULL_MASK, v, o));
    return v;
}
#endif

// ---- the kernels (one file per concept), with the signatures of backend.h ----
void gm_cuda_embed_fwd(const gm_backend *be, gm_real *out, const int32_t *ids, const gm_real *table, int N, int C);
void gm_cuda_embed_bwd(const gm_backend *be, gm_real *dtable, const int32_t *ids, const gm_real *dout, int N, int V,
                       int C);
void gm_cuda_matmul_fwd(const gm_backend *be, gm_real *out, const gm_real *inp, const gm_real *W, int N, int C,
                        int OC);
void gm_cuda_matmul_bwd(const gm_backend *be, gm_real *dinp, gm_real *dW, const gm_real *dout, const gm_real *inp,
                        const gm_real *W, int N, int C, int OC);
void gm_cuda_rmsnorm_fwd(const gm_backend *be, gm_real *out, gm_real *rstd, const gm_real *inp, int N, int C,
                         double eps);
void gm_cuda_rmsnorm_bwd(const gm_backend *be, gm_real *dinp, const gm_real *dout, const gm_real *inp,
                         const gm_real *rstd, int N, int C);
void gm_cuda_rotary_fwd(const gm_backend *be, gm_real *out, const gm_real *inp, const gm_real *cos_t,
                        const gm_real *sin_t, int B, int T, int NH, int HD);
void gm_cuda_rotary_bwd(const gm_backend *be, gm_real *dinp, const gm_real *dout, const gm_real *cos_t,
                        const gm_real *sin_t, int B, int T, int NH, int HD);
void gm_cuda_attn_fwd(const gm_backend *be, gm_real *out, gm_real *lse, const gm_real *q, const gm_real *k,
                      const gm_real *v, int B, int T, int NH, int HD, double scale, gm_attn_mask mask);
void gm_cuda_attn_bwd(const gm_backend *be, gm_real *dq, gm_real *dk, gm_real *dv, const gm_real *dout,
                      const gm_real *q, const gm_real *k, const gm_real *v, const gm_real *out, const gm_real *lse,
                      int B, int T, int NH, int HD, double scale, gm_attn_mask mask);
void gm_cuda_act_fwd(const gm_backend *be, gm_act act, gm_real *out, const gm_real *inp, size_t n);
void gm_cuda_act_bwd(const gm_backend *be, gm_act act, gm_real *dinp, const gm_real *dout, const gm_real *inp,
                     size_t n);
void gm_cuda_lincomb_fwd(const gm_backend *be, gm_real *out, double ca, const gm_real *pa, const gm_real *x,
                         double cb, const gm_real *pb, const gm_real *y, size_t n);
void gm_cuda_lincomb_bwd(const gm_backend *be, gm_real *dx, gm_real *dy, gm_real *dpa, gm_real *dpb,
                         const gm_real *dout, double ca, const gm_real *pa, const gm_real *x, double cb,
                         const gm_real *pb, const gm_real *y, size_t n);
void gm_cuda_xent_fwd_bwd(const gm_backend *be, gm_real *losses, gm_real *dlogits, const gm_real *logits,
                          const int32_t *targets, int N, int V, double cap, double dloss_scale);

#endif
