// The SVD reference orthogonalizer on the GPU: cuSOLVER's Jacobi SVD (gesvdj, economy size, fp32),
// or under GM_CUDA_LIBS=ref its plain reference (a one-sided Jacobi SVD in fp64, below), and the
// polar factor built from either with the CPU path's rank rule (cpu/svd_polar.inc): the
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

static void jacobi_polar(gm_cuda_ctx *c, const gm_cuda_ortho_desc *d, int *status);

void gm_cuda_svd_polar(gm_cuda_ctx *c, const gm_cuda_ortho_desc *d, int *status) {
    if (c->libs == GM_CUDA_LIBS_REF) return jacobi_polar(c, d, status);
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
    gm_cuda_gemm(c, c->libs, 0, 1, mm, nn, k, d->scale, GM_GEMM_F32, U, mm, 0, V, nn, 0, 0.0f, GM_GEMM_F32, d->out,
                 d->out, mm, 0, 1);
}

// ---- the reference: one-sided Jacobi (Hestenes) in fp64, one block per matrix ----
//
// W (p, L) holds G's p = min(rows, cols) short-side vectors of length L = max(rows, cols): G's rows
// when it is wide, its columns when it is tall. Rotations of pairs of W's rows, accumulated in
// R (p, p) (starting at I), make them orthogonal: then W = R G' (G' = G or G^T), the rows of W are
// s_i v_i^T and G' = R^T diag(s) V^T, so the polar factor is Q' = sum over kept i of
// R[i,:]^T W[i,:] / s_i, with the CPU's rank rule on s. Cyclic sweeps over the pairs, the rotation
// of Demmel and Veselic: zeta = (beta - alpha) / (2 gamma), t = sign(zeta) / (|zeta| + sqrt(1 +
// zeta^2)), c = 1 / sqrt(1 + t^2), s = c t; w_i <- c w_i - s w_j, w_j <- s w_i + c w_j. A sweep
// where every pair has |gamma| <= 1e-15 sqrt(alpha beta) ends it; 60 sweeps without that is
// non-convergence. Slow (one block, every pair in turn) and plain: a reference, not a kernel.
#define JAC_THREADS 128
#define JAC_SWEEPS 60

// The block's sums of x, y, z (fixed order: per thread, then a tree in shared memory).
static __device__ void block_sum3(double *x, double *y, double *z, double (*sh)[3]) {
    const int t = threadIdx.x;
    sh[t][0] = *x, sh[t][1] = *y, sh[t][2] = *z;
    __syncthreads();
    for (int o = JAC_THREADS / 2; o > 0; o >>= 1) {
        if (t < o)
            for (int q = 0; q < 3; q++) sh[t][q] += sh[t + o][q];
        __syncthreads();
    }
    *x = sh[0][0], *y = sh[0][1], *z = sh[0][2];
    __syncthreads();
}

// W (p, L) and R (p, p): fp64 scratch of this matrix; out (rows, cols) row-major.
__global__ static void __launch_bounds__(JAC_THREADS)
    jacobi_polar_kernel(const float *G, float *out, int rows, int cols, float scale, double *W, double *R,
                        int *status) {
    __shared__ double sh[JAC_THREADS][3];
    __shared__ int rotated;
    const int tall = rows > cols, p = tall ? cols : rows, L = tall ? rows : cols, t = threadIdx.x;
    for (int e = t; e < p * L; e += JAC_THREADS) {  // W[i][l] = G'[i][l]
        const int i = e / L, l = e % L;
        W[e] = tall ? (double)G[(size_t)l * cols + i] : (double)G[(size_t)i * cols + l];
    }
    for (int e = t; e < p * p; e += JAC_THREADS) R[e] = e / p == e % p ? 1.0 : 0.0;
    __syncthreads();
    int sweep = 0;
    for (; sweep < JAC_SWEEPS; sweep++) {
        if (t == 0) rotated = 0;
        __syncthreads();
        for (int i = 0; i < p - 1; i++)
            for (int j = i + 1; j < p; j++) {
                double al = 0, be = 0, ga = 0;
                for (int l = t; l < L; l += JAC_THREADS) {
                    const double wi = W[(size_t)i * L + l], wj = W[(size_t)j * L + l];
                    al += wi * wi, be += wj * wj, ga += wi * wj;
                }
                block_sum3(&al, &be, &ga, sh);
                if (!(fabs(ga) > 1e-15 * sqrt(al * be))) continue;  // already orthogonal (or zero)
                const double zeta = (be - al) / (2 * ga);
                const double tn = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                const double cs = 1 / sqrt(1 + tn * tn), sn = cs * tn;
                for (int l = t; l < L; l += JAC_THREADS) {
                    const double wi = W[(size_t)i * L + l], wj = W[(size_t)j * L + l];
                    W[(size_t)i * L + l] = cs * wi - sn * wj, W[(size_t)j * L + l] = sn * wi + cs * wj;
                }
                for (int l = t; l < p; l += JAC_THREADS) {
                    const double ri = R[(size_t)i * p + l], rj = R[(size_t)j * p + l];
                    R[(size_t)i * p + l] = cs * ri - sn * rj, R[(size_t)j * p + l] = sn * ri + cs * rj;
                }
                if (t == 0) rotated = 1;
                __syncthreads();
            }
        __syncthreads();
        if (!rotated) break;
        __syncthreads();
    }
    if (sweep == JAC_SWEEPS) {
        if (t == 0) *status = GM_ORTHO_SVD_NOCONV;
        return;
    }
    // s_i = ||W[i,:]||, kept to W[i,:] / s_i in place (0 when dropped); s_max first, as floats.
    __shared__ float smax;
    if (t == 0) {
        float m = 0.0f;
        for (int i = 0; i < p; i++) {
            double ss = 0;
            for (int l = 0; l < L; l++) ss += W[(size_t)i * L + l] * W[(size_t)i * L + l];
            m = fmaxf(m, (float)sqrt(ss));
        }
        smax = m;
    }
    __syncthreads();
    const float tol = (float)L * EPS32 * smax;
    for (int i = 0; i < p; i++) {
        double ss = 0;  // every thread the same sum, in the same order
        for (int l = 0; l < L; l++) ss += W[(size_t)i * L + l] * W[(size_t)i * L + l];
        const double s = sqrt(ss), inv = (float)s > tol ? 1 / s : 0.0;
        __syncthreads();
        for (int l = t; l < L; l += JAC_THREADS) W[(size_t)i * L + l] *= inv;
    }
    __syncthreads();
    for (int e = t; e < rows * cols; e += JAC_THREADS) {  // out[r][c] = scale * Q'[a][b], (a, b) = (c, r) when tall
        const int r = e / cols, cc = e % cols, a = tall ? cc : r, b = tall ? r : cc;
        double q = 0;
        for (int i = 0; i < p; i++) q += R[(size_t)i * p + a] * W[(size_t)i * L + b];
        out[e] = (float)(scale * q);
    }
}

static void jacobi_polar(gm_cuda_ctx *c, const gm_cuda_ortho_desc *d, int *status) {
    const int p = d->rows < d->cols ? d->rows : d->cols, L = d->rows < d->cols ? d->cols : d->rows;
    double *W = (double *)gm_cuda_scratch(c, GM_SCR_SVD_A, sizeof(double) * p * L);
    double *R = (double *)gm_cuda_scratch(c, GM_SCR_SVD_U, sizeof(double) * p * p);
    if (!W || !R) return;
    jacobi_polar_kernel<<<1, JAC_THREADS, 0, c->stream>>>(d->G, d->out, d->rows, d->cols, d->scale, W, R, status);
    GM_CU_LAUNCHED(c);
}
