// Internal to the CUDA backend: its state, error recording, scratch buffers, the kernels'
// shared device helpers and the prototypes that cuda_backend.cu gathers into the struct.
#ifndef GM_BACKEND_CUDA_CUDA_COMMON_CUH
#define GM_BACKEND_CUDA_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include "backend/backend.h"
#include "backend/cuda/act_elem.cuh"
#include "backend/cuda/attention.h"
#include "backend/cuda/gemm.h"

static_assert(sizeof(gm_real) == sizeof(float), "the CUDA backend keeps fp32 master values (no -DGM_FP64)");

// Scratch buffers, one per purpose, grown on demand and reused. All work is on one stream, so a
// slot may be reused by the next call without waiting; growing one waits for the stream first.
enum {
    GM_SCR_MM_A,        // bf16 copy of a matmul operand
    GM_SCR_MM_B,        // bf16 copy of a matmul operand
    GM_SCR_MM_C,        // bf16 copy of a matmul operand
    GM_SCR_ATTN_D,      // attention backward: D = rowsum(dout * out), (B, NH, T or Tq: attention.cuh)
    GM_SCR_ATTN_LSE2,   // tensor-core attention backward: lse in log2 units, (B, NH, Tq)
    GM_SCR_ATTN_BOUNDS, // tensor-core attention with documents: each token's mask bounds, (2, B, T)
    GM_SCR_ATTN_DQ_PART, // one-pass attention backward: dq's partial sums, (B, NH, ceil(T / 64), 64, HD) fp32
    GM_SCR_ATTN_ORDER,  // one-pass attention backward: work counter, then a semaphore per query tile
    GM_SCR_RED,         // per-block partial sums of deterministic reductions (reduce.cuh)
    GM_SCR_SORT_KEYS,   // embedding backward: sorted token ids
    GM_SCR_SORT_POS,    // embedding backward: positions 0..N-1, then sorted by id
    GM_SCR_SORT_POS2,   // embedding backward: sort output
    GM_SCR_SORT_TMP,    // embedding backward: CUB's temporary storage
    GM_SCR_COPY,        // staging for overlapping copies
    GM_SCR_ADAM_SCALE,  // adam_update: the per-tensor gradient scale of normalize_grad (1 float)
    GM_SCR_ORTHO_DESC,  // orthogonalize: the items' descriptors, grouped by shape
    GM_SCR_ORTHO_SS,    // orthogonalize: sum of squares per item (fp64)
    GM_SCR_ORTHO_STAT,  // orthogonalize: status per item (GM_ORTHO_*, ortho.cuh)
    GM_SCR_NS_X,        // Newton-Schulz: the iterates X of a batch, (nb, m, n)
    GM_SCR_NS_Y,        // Newton-Schulz: the next iterates, (nb, m, n)
    GM_SCR_NS_A,        // Newton-Schulz: A = X X^T, (nb, m, m)
    GM_SCR_NS_B,        // Newton-Schulz: B = c A A + b A, (nb, m, m)
    GM_SCR_SVD_A,       // SVD: the input copy gesvdj overwrites
    GM_SCR_SVD_S,       // SVD: singular values
    GM_SCR_SVD_U,       // SVD: left singular vectors
    GM_SCR_SVD_V,       // SVD: right singular vectors
    GM_SCR_SVD_WORK,    // SVD: gesvdj's workspace
    GM_SCR_SVD_INFO,    // SVD: gesvdj's info
    GM_SCR_NORMUON,     // normuon: each line's sum of squares before and after scaling (fp64), then the rescale
    GM_SCR_CUDNN_WS,    // cuDNN's attention: its execution plan's workspace
    GM_SCR_COUNT
};

// cuBLASLt's plan for one single-matrix GEMM (gemm.cu): what cublasLtMatmul needs besides the
// pointers and scalars, made on the first call with its key and reused by every later one.
// The key: everything the descriptors and the heuristic's choice depend on. The pointers'
// alignments are in it because the heuristic picks an algorithm for the alignment it is told
// (256 bytes unless told less), and a tensor view may start anywhere past 4 (2 for bf16) bytes.
// beta's value is not (the heuristic never sees it); whether alpha and beta go by device pointer is.
typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc;
    int ab, ct;                         // gm_gemm_type of A and B, of C (= D)
    int align_a, align_b, align_c;      // bytes each pointer is aligned to, capped at 256 (c: C's and D's)
    int device_scalars;                 // 1: a bf16 C added into, alpha and beta by device pointer (gemm.cu)
    int nb;                             // matrices in the batch (1: one)
    long long sa, sb, sc;               // their element strides (nb > 1)
} gm_cuda_lt_key;
typedef struct {
    gm_cuda_lt_key key;
    int has_algo;  // 0: the heuristic found none (cublasGemmStridedBatchedEx serves this key)
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;  // lc describes both C and D (one layout; D may be C)
    cublasLtMatmulAlgo_t algo;
} gm_cuda_lt_plan;
// The model makes a few dozen distinct GEMMs (matmul forward / dinp / dW per weight shape, the
// head's chunks, Newton-Schulz's three products per group shape); beyond this many plans the oldest
// is replaced.
#define GM_CUDA_LT_PLANS 64
// cuBLASLt's workspace, one for every plan (the stream orders the calls that share it).
#define GM_CUDA_LT_WORKSPACE ((size_t)32 << 20)
// Distinct alpha and beta values kept in device memory for the device-pointer plans.
#define GM_CUDA_LT_SCALARS 64

// cuDNN's handle and attention plans (attention_cudnn.cu), made on the first call that uses them.
typedef struct gm_cuda_cudnn gm_cuda_cudnn;

typedef struct {
    int device;
    cudaStream_t stream;
    gm_cuda_libs libs;          // vendor libraries or their references (gemm.h), from GM_CUDA_LIBS
    gm_cuda_attn_impl attn_fwd, attn_bwd;  // what attn_fwd / attn_bwd run: auto, or GM_CUDA_ATTN's forms
    int wgmma_off;              // GM_CUDA_WGMMA=off: the wgmma attention forms do not run (none chosen)
    cublasHandle_t blas;        // made on the first batched (or heuristic-less) vendor GEMM (gm_cuda_blas)
    cublasLtHandle_t lt;        // made with lt_ws on the first single vendor GEMM (gemm.cu)
    void *lt_ws;                // GM_CUDA_LT_WORKSPACE bytes of device memory
    gm_cuda_lt_plan lt_plan[GM_CUDA_LT_PLANS];
    int lt_plans, lt_next;      // plans made (<= GM_CUDA_LT_PLANS); the next one replaced when full
    float *lt_scalars;          // GM_CUDA_LT_SCALARS device floats, made on first use (gemm.cu)
    float lt_scalar_value[GM_CUDA_LT_SCALARS];  // their values, the first lt_nscalars set
    int lt_nscalars;
    cusolverDnHandle_t solver;  // made on the first SVD orthogonalization (svd_polar.cu)
    gesvdjInfo_t svdj;
    gm_cuda_cudnn *cudnn;       // made on the first plain-causal attention (attention_cudnn.cu)
    void *scr[GM_SCR_COUNT];
    size_t scr_bytes[GM_SCR_COUNT];
    int failed;     // an error was recorded since the last sync
    int faulted;    // the device faulted (a sticky CUDA error): every later sync fails too
    char msg[512];  // the first error since the last sync (or the fault)
} gm_cuda_ctx;

static inline gm_cuda_ctx *gm_cuda_ctx_of(const gm_backend *be) { return (gm_cuda_ctx *)be->ctx; }

// Record an error: the first one since the last sync is kept for gm_cuda_sync, and every one is
// gm_fail'd on this thread.
void gm_cuda_note(gm_cuda_ctx *c, const char *file, int line, const char *what, const char *err);
// Scratch slot `slot` with at least `bytes`; NULL (error noted) when it cannot be allocated.
void *gm_cuda_scratch(gm_cuda_ctx *c, int slot, size_t bytes);

// The cuBLAS handle on the backend's stream, made on first use; NULL (noted) when it cannot be, or
// under GM_CUDA_LIBS=ref.
cublasHandle_t gm_cuda_blas(gm_cuda_ctx *c);
// The backend's GEMM (gemm.h: column-major D = alpha op(A) op(B) + beta C on nb matrices, D and C of
// one layout and type; D may be C), by cuBLAS or by the reference kernel (impl).
void gm_cuda_gemm(gm_cuda_ctx *c, gm_cuda_libs impl, int ta, int tb, int m, int n, int k, float alpha,
                  gm_gemm_type ab, const void *A, int lda, long long sa, const void *B, int ldb, long long sb,
                  float beta, gm_gemm_type ct, const void *C, void *D, int ldc, long long sc, int nb);

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
// Warp sum in a fixed order (a tree down to lane 0: lane t adds lane t + 16, then t + 8, ...; then
// broadcast), so every lane gets the same bits and every run the same result. All 32 lanes must call
// it. float for the kernels' row sums, double for reduce.cuh's block sum.
template <typename T>
static __device__ __forceinline__ T gm_warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(GM_FULL_MASK, v, o);
    return __shfl_sync(GM_FULL_MASK, v, 0);
}
static __device__ __forceinline__ float gm_warp_max(float v) {  // exact, so any order
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(GM_FULL_MASK, v, o));
    return v;
}
#endif

// ---- the kernels (one file per concept): gm_cuda_<name> for every entry of GM_BACKEND_KERNELS,
// gathered into the struct by cuda_backend.cu, so a kernel missing here is a link error ----
#define GM_CUDA_PROTO(name, params, args) void gm_cuda_##name(const gm_backend *be, GM_UNPACK params);
GM_BACKEND_KERNELS(GM_CUDA_PROTO)
#undef GM_CUDA_PROTO

#endif
