// The SVD reference orthogonalizer on the GPU: cuSOLVER's Jacobi SVD (gesvdj, economy size, fp32)
// and the polar factor built from it with the CPU path's rank rule (cpu/svd_polar.inc): the
// directions whose singular value is not above max(m, n) eps32 s_max are dropped, so a
// rank-deficient G gives the partial isometry U_r V_r^T, as on the CPU.
//
// Row-major G (rows, cols) is the column-major M = G^T (cols, rows). If M = U S V^T, its polar
// factor U V^T is the transpose of G's, so written column-major it is G's polar factor row-major:
// no transposes are materialised.
//
// cuSOLVER is loaded at run time (dlopen) on the first SVD orthogonalization, not linked: the
// programs of the CUDA backend start without it (training orthogonalizes with Newton-Schulz), and
// an SVD where it is absent fails at the next sync with one line saying what could not be loaded.
// GM_CUSOLVER_LIB names the library file when it is not on the loader's path.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/ortho.cuh"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUSOLVER_SONAME "libcusolver.so." STR(CUSOLVER_VER_MAJOR)

// The cuSOLVER functions used here, with the types of cusolverDn.h.
#define SOLVER_FUNCS(X)             \
    X(cusolverDnCreate)             \
    X(cusolverDnDestroy)            \
    X(cusolverDnSetStream)          \
    X(cusolverDnCreateGesvdjInfo)   \
    X(cusolverDnSgesvdj_bufferSize) \
    X(cusolverDnSgesvdj)
#define SOLVER_PTR(name) decltype(&::name) name##_fn;
static struct {
    SOLVER_FUNCS(SOLVER_PTR)
} so;
#undef SOLVER_PTR

// Load cuSOLVER once per process; 0, or -1 with the reason noted.
static int solver_load(gm_cuda_ctx *c) {
    static void *lib;
    if (lib) return 0;
    const char *file = getenv("GM_CUSOLVER_LIB");
    if (!file || !*file) file = CUSOLVER_SONAME;
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        char err[400];
        snprintf(err, sizeof err, "cannot load cuSOLVER (%s); install it or set GM_CUSOLVER_LIB to its %s", dlerror(),
                 CUSOLVER_SONAME);
        gm_cuda_note(c, __FILE__, __LINE__, "svd orthogonalizer", err);
        return -1;
    }
#define SOLVER_SYM(name)                                                                         \
    if (!(so.name##_fn = (decltype(so.name##_fn))dlsym(h, #name))) {                             \
        dlclose(h);                                                                              \
        gm_cuda_note(c, __FILE__, __LINE__, "svd orthogonalizer: no symbol " #name " in", file); \
        return -1;                                                                               \
    }
    SOLVER_FUNCS(SOLVER_SYM)
#undef SOLVER_SYM
    lib = h;
    return 0;
}

#define EPS32 1.1920928955078125e-07f

// U (mm, k) column-major: zero column j unless S[j] > max(m, n) eps s_max, in the CPU's float
// arithmetic (S is sorted descending: s_max = S[0]). The first thread also turns gesvdj's info
// into the item's status.
__global__ static void rank_mask_kernel(float *U, const float *S, int mm, int k, int maxmn, const int *info,
                                        int *status) {
    if (blockIdx.x == 0 && threadIdx.x == 0 && *info != 0)
        *status = *info > 0 ? GM_ORTHO_SVD_NOCONV : GM_ORTHO_SVD_BADARG;
    const float tol = (float)maxmn * EPS32 * S[0];
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < (size_t)mm * k;
         e += (size_t)gridDim.x * blockDim.x)
        if (!(S[e / mm] > tol)) U[e] = 0.0f;
}

// cuSOLVER's status as text (it has no string function).
static void note_solver(gm_cuda_ctx *c, int line, const char *what, cusolverStatus_t st) {
    char err[48];
    snprintf(err, sizeof err, "cusolverStatus_t %d", (int)st);
    gm_cuda_note(c, __FILE__, line, what, err);
}

static int solver_ready(gm_cuda_ctx *c) {
    if (c->solver) return 0;
    if (solver_load(c)) return -1;
    cusolverStatus_t st = so.cusolverDnCreate_fn(&c->solver);
    if (st == CUSOLVER_STATUS_SUCCESS) st = so.cusolverDnSetStream_fn(c->solver, c->stream);
    if (st == CUSOLVER_STATUS_SUCCESS) st = so.cusolverDnCreateGesvdjInfo_fn(&c->svdj);
    if (st != CUSOLVER_STATUS_SUCCESS) {
        if (c->solver) so.cusolverDnDestroy_fn(c->solver);
        c->solver = NULL;
        note_solver(c, __LINE__, "cuSOLVER set-up (svd orthogonalizer)", st);
        return -1;
    }
    return 0;
}

void gm_cuda_svd_polar(gm_cuda_ctx *c, const gm_cuda_ortho_desc *d, int *status) {
    if (solver_ready(c)) return;
    const int mm = d->cols, nn = d->rows, k = mm < nn ? mm : nn, maxmn = mm < nn ? nn : mm;
    float *A = (float *)gm_cuda_scratch(c, GM_SCR_SVD_A, sizeof(float) * mm * nn);
    float *S = (float *)gm_cuda_scratch(c, GM_SCR_SVD_S, sizeof(float) * k);
    float *U = (float *)gm_cuda_scratch(c, GM_SCR_SVD_U, sizeof(float) * mm * k);
    float *V = (float *)gm_cuda_scratch(c, GM_SCR_SVD_V, sizeof(float) * nn * k);
    int *info = (int *)gm_cuda_scratch(c, GM_SCR_SVD_INFO, sizeof(int));
    if (!A || !S || !U || !V || !info) return;
    // gesvdj overwrites its input: it gets a copy.
    GM_CU(c, cudaMemcpyAsync(A, d->G, sizeof(float) * mm * nn, cudaMemcpyDeviceToDevice, c->stream));
    int lwork = 0;
    cusolverStatus_t st = so.cusolverDnSgesvdj_bufferSize_fn(c->solver, CUSOLVER_EIG_MODE_VECTOR, 1, mm, nn, A, mm, S,
                                                             U, mm, V, nn, &lwork, c->svdj);
    if (st != CUSOLVER_STATUS_SUCCESS) return note_solver(c, __LINE__, "cusolverDnSgesvdj_bufferSize", st);
    float *work = (float *)gm_cuda_scratch(c, GM_SCR_SVD_WORK, sizeof(float) * (size_t)lwork);
    if (!work) return;
    st = so.cusolverDnSgesvdj_fn(c->solver, CUSOLVER_EIG_MODE_VECTOR, 1, mm, nn, A, mm, S, U, mm, V, nn, work, lwork,
                                 info, c->svdj);
    if (st != CUSOLVER_STATUS_SUCCESS) return note_solver(c, __LINE__, "cusolverDnSgesvdj", st);
    rank_mask_kernel<<<gm_cuda_blocks((size_t)mm * k, 256), 256, 0, c->stream>>>(U, S, mm, k, maxmn, info, status);
    GM_CU_LAUNCHED(c);
    // Q (mm, nn) = scale * U V^T, column-major: G's polar factor, row-major.
    const float zero = 0.0f;
    cublasStatus_t bs =
        cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, mm, nn, k, &d->scale, U, mm, V, nn, &zero, d->out, mm);
    if (bs != CUBLAS_STATUS_SUCCESS)
        gm_cuda_note(c, __FILE__, __LINE__, "cublasSgemm (svd polar factor)", cublasGetStatusString(bs));
}
