// The backend's one GEMM entry (every matmul, Newton-Schulz product and SVD polar product goes
// through it): cuBLAS, or the plain reference kernel with exactly cuBLAS's operand, transpose and
// leading-dimension conventions (gemm.h). The reference is checked against OpenBLAS with the same
// arguments on the host, and against cuBLAS where a GPU runs it (verify/test_cuda_gemm.c).
//
// cuBLAS here is two libraries. A GEMM (the matmuls, the SVD polar product) or a strided batch of
// them (Newton-Schulz's groups) goes to cuBLASLt's cublasLtMatmul with a plan cached per key
// (cuda_common.cuh's gm_cuda_lt_plan: the matmul descriptor, the three layouts with the batch's count
// and strides, and the algorithm the heuristic chose for them, so a repeated shape costs one
// lookup, no descriptor calls and no heuristic) and the backend's one
// 32 MiB workspace (what the heuristic may ask of it; cuBLASLt's split-K and stream-K algorithms
// need one). D, the output, is C (beta = 1 accumulates in place: fp32 parameter gradients) or
// another matrix of C's layout (a residual added in the epilogue, D = alpha AB + C; Newton-Schulz's
// B = c A A + b A and X' = B X + a X, which read C as an operand too and so cannot update it in
// place); beta = 0 never reads C. k = 0 and a key for which the heuristic has no algorithm go to
// cublasGemmStridedBatchedEx, the cuBLAS handle being made only then; it computes in place, so a D
// other than C gets C's values copied first there (what Newton-Schulz did on every product before).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemm.h"

// A stored element as fp32: bf16 is the high half of the float (exact).
static __device__ __forceinline__ float load_elem(const void *p, int bf16, size_t i) {
    if (bf16) return __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
    return ((const float *)p)[i];
}

// grid (blocks, nb): element e = i + j m of D in matrix blockIdx.y; the k products summed in order
// by one fused multiply-add each, then alpha acc + beta C with two roundings and one addition
// (beta C only when beta != 0), rounded once more to bf16 when C and D are bf16.
__global__ static void gemm_ref_kernel(int ta, int tb, int m, int n, int k, float alpha, int abf, const void *A,
                                       int lda, long long sa, const void *B, int ldb, long long sb, float beta, int cbf,
                                       const void *C, void *D, int ldc, long long sc) {
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
            ((__nv_bfloat16 *)D)[at] = __float2bfloat16_rn(r);
        else
            ((float *)D)[at] = r;
    }
}

static void note_blas(gm_cuda_ctx *c, int line, const char *what, cublasStatus_t st) {
    gm_cuda_note(c, __FILE__, line, what, cublasGetStatusString(st));
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
    // By default cuBLAS may sum split-K parts of a bf16 C in bf16 (one rounding per part); the
    // product is to be rounded once, as plan_make asks of cuBLASLt.
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    if (st != CUBLAS_STATUS_SUCCESS) {
        if (h) cublasDestroy(h);
        note_blas(c, __LINE__, "cuBLAS set-up", st);
        return NULL;
    }
    return c->blas = h;
}

// The cuBLASLt handle and its workspace, made on first use; NULL (noted) when they cannot be, or
// under GM_CUDA_LIBS=ref.
static cublasLtHandle_t lt_handle(gm_cuda_ctx *c) {
    if (c->lt) return c->lt;
    if (c->libs == GM_CUDA_LIBS_REF) {
        gm_cuda_note(c, __FILE__, __LINE__, "cuBLASLt", "not used under GM_CUDA_LIBS=ref (a reference was missed)");
        return NULL;
    }
    const cudaError_t e = cudaMalloc(&c->lt_ws, GM_CUDA_LT_WORKSPACE);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky for the runtime
        c->lt_ws = NULL;
        gm_cuda_note(c, __FILE__, __LINE__, "cuBLASLt workspace: cudaMalloc", cudaGetErrorString(e));
        return NULL;
    }
    cublasLtHandle_t h = NULL;
    const cublasStatus_t st = cublasLtCreate(&h);
    if (st != CUBLAS_STATUS_SUCCESS) {
        GM_CU(c, cudaFree(c->lt_ws));
        c->lt_ws = NULL;
        note_blas(c, __LINE__, "cublasLtCreate", st);
        return NULL;
    }
    return c->lt = h;
}

static void plan_release(gm_cuda_lt_plan *p) {
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}

// Bytes a device pointer is aligned to, capped at cuBLASLt's default assumption (256).
static int align_of(const void *p) {
    const uintptr_t a = (uintptr_t)p;
    const uintptr_t low = a & (~a + 1);
    return low == 0 || low > 256 ? 256 : (int)low;
}

static cudaDataType_t cuda_type(gm_gemm_type t) { return t == GM_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

// Fills p (zeroed) for its key: descriptors, layouts, and the heuristic's first algorithm within
// the workspace for these alignments (has_algo = 0 when it has none, the descriptors released).
// 0, or -1 with the error noted (p released).
static int plan_make(gm_cuda_ctx *c, cublasLtHandle_t h, gm_cuda_lt_plan *p) {
    const gm_cuda_lt_key *q = &p->key;
    const cublasOperation_t opa = q->ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = q->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cudaDataType_t tab = cuda_type((gm_gemm_type)q->ab), tc = cuda_type((gm_gemm_type)q->ct);
    // Stored (column-major) shapes: A (m, k), or (k, m) transposed; B (k, n), or (n, k).
    cublasStatus_t st = cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
    const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_DEVICE;
    if (st == CUBLAS_STATUS_SUCCESS && q->device_scalars)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->la, tab, q->ta ? q->k : q->m, q->ta ? q->m : q->k, q->lda);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->lb, tab, q->tb ? q->n : q->k, q->tb ? q->k : q->n, q->ldb);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p->lc, tc, q->m, q->n, q->ldc);
    if (q->nb > 1) {  // a strided batch: the same count on every layout, each with its stride
        const int32_t count = q->nb;
        const cublasLtMatrixLayout_t lay[3] = {p->la, p->lb, p->lc};
        const int64_t stride[3] = {q->sa, q->sb, q->sc};
        for (int i = 0; i < 3 && st == CUBLAS_STATUS_SUCCESS; i++) {
            st = cublasLtMatrixLayoutSetAttribute(lay[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
            if (st == CUBLAS_STATUS_SUCCESS)
                st = cublasLtMatrixLayoutSetAttribute(lay[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &stride[i], sizeof stride[i]);
        }
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        plan_release(p);
        note_blas(c, __LINE__, "cuBLASLt descriptors", st);
        return -1;
    }
    cublasLtMatmulPreference_t pref = NULL;
    const size_t ws = GM_CUDA_LT_WORKSPACE;
    const uint32_t al[3] = {(uint32_t)q->align_a, (uint32_t)q->align_b, (uint32_t)q->align_c};
    st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0],
                                                  sizeof al[0]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1],
                                                  sizeof al[1]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2],
                                                  sizeof al[2]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2],
                                                  sizeof al[2]);
    // Split-K parts summed in C's own type (cuBLASLt's in-place and output-type reduction schemes)
    // would round a bf16 C once per part: a bf16 C takes only the schemes that sum in fp32. (Not
    // enough at beta = 1: on an H200 a bf16 C is still rounded twice there, reports/gpu-h200/.)
    const uint32_t schemes = q->ct == GM_GEMM_BF16
                                 ? (uint32_t)(CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
                                 : (uint32_t)CUBLASLT_REDUCTION_SCHEME_MASK;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                                  sizeof schemes);
    if (st != CUBLAS_STATUS_SUCCESS) {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        plan_release(p);
        note_blas(c, __LINE__, "cuBLASLt preference", st);
        return -1;
    }
    // No algorithm (NOT_SUPPORTED, or none returned) is not an error: the key falls back.
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    int found = 0;
    st = cublasLtMatmulAlgoGetHeuristic(h, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &r, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 && r.state == CUBLAS_STATUS_SUCCESS) {
        p->algo = r.algo;
        p->has_algo = 1;
    } else {
        const gm_cuda_lt_key key = p->key;
        plan_release(p);
        p->key = key;
    }
    return 0;
}

// Device pointers to alpha and beta for a device-pointer plan: 0, or -1 with the error noted when
// the table cannot be made. Why such plans: a bf16 C added into at beta = 1 came out rounded twice on an H200
// (reports/gpu-h200/, 34feab9) with host scalars, by the same algorithm (the plan's key holds no beta) that
// rounds once at beta = 0.75, so cublasLtMatmul does something else when it sees beta = 1; by
// device pointer it cannot see the value, and it rounds once: verify/test_cuda_gemm.c's beta = 1
// cases pass on the H200 since 8826418 (reports/gpu-h200/run-8826418/). The values live in a table of
// GM_CUDA_LT_SCALARS floats, each written once (a blocking copy, before any GEMM reads it); a full
// table is emptied after the stream has drained, so no queued GEMM reads a slot being rewritten.
static int device_scalars(gm_cuda_ctx *c, float alpha, float beta, const float **pa, const float **pb) {
    if (!c->lt_scalars) {
        const cudaError_t e = cudaMalloc(&c->lt_scalars, sizeof(float) * GM_CUDA_LT_SCALARS);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            c->lt_scalars = NULL;
            gm_cuda_note(c, __FILE__, __LINE__, "cuBLASLt scalars: cudaMalloc", cudaGetErrorString(e));
            return -1;
        }
    }
    if (c->lt_nscalars > GM_CUDA_LT_SCALARS - 2) {
        GM_CU(c, cudaStreamSynchronize(c->stream));
        c->lt_nscalars = 0;
    }
    const float want[2] = {alpha, beta};
    const float **at[2] = {pa, pb};
    for (int w = 0; w < 2; w++) {
        int i = 0;
        while (i < c->lt_nscalars && memcmp(&c->lt_scalar_value[i], &want[w], sizeof want[w])) i++;
        if (i == c->lt_nscalars) {
            c->lt_scalar_value[c->lt_nscalars++] = want[w];
            GM_CU(c, cudaMemcpy(c->lt_scalars + i, &want[w], sizeof want[w], cudaMemcpyHostToDevice));
        }
        *at[w] = c->lt_scalars + i;
    }
    return 0;
}

// The plan for key k, from the cache or made now (replacing the oldest when the cache is full);
// NULL with the error noted.
static const gm_cuda_lt_plan *plan_for(gm_cuda_ctx *c, cublasLtHandle_t h, const gm_cuda_lt_key *k) {
    for (int i = 0; i < c->lt_plans; i++)
        if (!memcmp(&c->lt_plan[i].key, k, sizeof *k)) return &c->lt_plan[i];
    int slot = c->lt_plans;
    if (slot == GM_CUDA_LT_PLANS) {
        slot = c->lt_next;
        c->lt_next = (c->lt_next + 1) % GM_CUDA_LT_PLANS;
        plan_release(&c->lt_plan[slot]);
    } else {
        c->lt_plans++;
    }
    gm_cuda_lt_plan *p = &c->lt_plan[slot];
    memset(p, 0, sizeof *p);
    p->key = *k;
    if (plan_make(c, h, p)) {  // an unusable slot: drop it (the last made or, when full, any)
        c->lt_plan[slot] = c->lt_plan[c->lt_plans - 1];
        memset(&c->lt_plan[--c->lt_plans], 0, sizeof *p);
        return NULL;
    }
    return p;
}

void gm_cuda_gemm(gm_cuda_ctx *c, gm_cuda_libs impl, int ta, int tb, int m, int n, int k, float alpha,
                  gm_gemm_type ab, const void *A, int lda, long long sa, const void *B, int ldb, long long sb,
                  float beta, gm_gemm_type ct, const void *C, void *D, int ldc, long long sc, int nb) {
    if (m <= 0 || n <= 0 || nb <= 0) return;
    if (impl == GM_CUDA_LIBS_REF) {
        const dim3 grid(gm_cuda_blocks((size_t)m * n, 128), (unsigned)nb);
        gemm_ref_kernel<<<grid, 128, 0, c->stream>>>(ta, tb, m, n, k, alpha, ab == GM_GEMM_BF16, A, lda, sa, B, ldb, sb,
                                                     beta, ct == GM_GEMM_BF16, C, D, ldc, sc);
        GM_CU_LAUNCHED(c);
        return;
    }
    if (k > 0) {
        cublasLtHandle_t h = lt_handle(c);
        if (!h) return;
        gm_cuda_lt_key key;
        memset(&key, 0, sizeof key);  // compared bytewise
        key.ta = ta, key.tb = tb, key.m = m, key.n = n, key.k = k, key.lda = lda, key.ldb = ldb, key.ldc = ldc;
        key.ab = (int)ab, key.ct = (int)ct;
        key.align_a = align_of(A), key.align_b = align_of(B);
        key.align_c = align_of(C) < align_of(D) ? align_of(C) : align_of(D);
        key.device_scalars = ct == GM_GEMM_BF16 && beta != 0.0f;
        key.nb = nb;
        if (nb > 1) key.sa = sa, key.sb = sb, key.sc = sc;
        const gm_cuda_lt_plan *p = plan_for(c, h, &key);
        if (!p) return;
        if (p->has_algo) {
            const float *pa = &alpha, *pb = &beta;
            if (key.device_scalars && device_scalars(c, alpha, beta, &pa, &pb)) return;
            const cublasStatus_t st = cublasLtMatmul(h, p->desc, pa, A, p->la, B, p->lb, pb, C, p->lc, D, p->lc,
                                                     &p->algo, c->lt_ws, GM_CUDA_LT_WORKSPACE, c->stream);
            if (st != CUBLAS_STATUS_SUCCESS) note_blas(c, __LINE__, "cublasLtMatmul", st);
            return;
        }
    }
    cublasHandle_t h = gm_cuda_blas(c);
    if (!h) return;
    if (D != C && beta != 0.0f) {  // in place only: C's values into D (the span its nb matrices cover)
        const size_t span = (size_t)(nb - 1) * (size_t)sc + (size_t)(n - 1) * (size_t)ldc + (size_t)m;
        GM_CU(c, cudaMemcpyAsync(D, C, span * (ct == GM_GEMM_BF16 ? 2 : 4), cudaMemcpyDeviceToDevice, c->stream));
    }
    const cudaDataType_t tab = cuda_type(ab), tc = cuda_type(ct);
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A, tab, lda, sa, B, tab,
        ldb, sb, &beta, D, tc, ldc, sc, nb, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) note_blas(c, __LINE__, "cublasGemmStridedBatchedEx", st);
}

extern "C" gm_cuda_libs gm_cuda_libs_of(const gm_backend *be) { return gm_cuda_ctx_of(be)->libs; }

extern "C" void gm_cuda_gemm_with(gm_cuda_libs impl, const gm_backend *be, int transa, int transb, int m, int n, int k,
                                  float alpha, gm_gemm_type ab, const void *A, int lda, long long sa, const void *B,
                                  int ldb, long long sb, float beta, gm_gemm_type ct, void *C, int ldc, long long sc,
                                  int nb) {
    gm_cuda_gemm(gm_cuda_ctx_of(be), impl, transa, transb, m, n, k, alpha, ab, A, lda, sa, B, ldb, sb, beta, ct, C, C,
                 ldc, sc, nb);
}
