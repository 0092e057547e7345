// NorMuon's per-line second-moment normalization (backend.h; record #43, modded-nanogpt
// records/track_1_short/2025-11-10_CautiousWD): the per-line statements of cpu/normuon.c, one
// thread per line (adjacent threads take adjacent columns, so the by-column case reads coalesced),
// with explicitly rounded fp32 and fp64 operations (no FMA contraction), so each line's sums, its
// second moment and its scaled values are the CPU's bit for bit. The two Frobenius norms add the
// lines' fp64 sums with reduce.cuh's fixed tree, not the CPU's line order: equal to rounding of
// fp64 sums, then one fp32 rounding of the rescale.
//
// A line's sums are sequential (the CPU's order), so a thread's passes are chains of len dependent
// additions; what keeps them from waiting on memory at every element is that each thread loads
// CHUNK elements of its line into registers before it adds them (same values, same order), and the
// lines are spread over many SMs in blocks of one warp. (The first version loaded one element per
// addition in blocks of 128 lines: 0.19-0.25 ms a call for these 2.4-9.4 MB matrices, 13.7 ms of the
// normuon step on an H200, reports/gpu-h200/kernels-normuon.md.)
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/reduce.cuh"

#define CHUNK 16         // elements of a line in registers at a time
#define LINES_BLOCK 32   // lines per block: one warp

// Elements j0 .. j0 + CHUNK - 1 of the line x (stride step) into c; 0 past len.
static __device__ __forceinline__ void load_chunk(float *c, const float *x, int j0, int len, size_t step) {
#pragma unroll
    for (int u = 0; u < CHUNK; u++) c[u] = j0 + u < len ? x[(size_t)(j0 + u) * step] : 0.0f;
}

__global__ static void lines_kernel(float *V, float *v2, double *ss, int nlines, int len, size_t step, size_t next,
                                    float w) {
    const int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= nlines) return;
    float *x = V + (size_t)l * next;
    double s = 0, t = 0;
    for (int j0 = 0; j0 < len; j0 += CHUNK) {
        float c[CHUNK];
        load_chunk(c, x, j0, len, step);
#pragma unroll
        for (int u = 0; u < CHUNK; u++)
            if (j0 + u < len) s = __dadd_rn(s, __dmul_rn((double)c[u], (double)c[u]));
    }
    const float mean = (float)__ddiv_rn(s, (double)len);
    const float v = __fadd_rn(v2[l], __fmul_rn(w, __fsub_rn(mean, v2[l])));
    v2[l] = v;
    const float r = (float)__ddiv_rn(1.0, __dsqrt_rn(fmax((double)v, 1e-10)));
    for (int j0 = 0; j0 < len; j0 += CHUNK) {
        float c[CHUNK];
        load_chunk(c, x, j0, len, step);
#pragma unroll
        for (int u = 0; u < CHUNK; u++) {
            if (j0 + u >= len) break;
            const float y = __fmul_rn(c[u], r);
            x[(size_t)(j0 + u) * step] = y;
            t = __dadd_rn(t, __dmul_rn((double)y, (double)y));
        }
    }
    ss[l] = s, ss[nlines + l] = t;
}

// One block: the rescale ||V_before|| / max(||V_after||, 1e-10), into *f.
__global__ static void __launch_bounds__(GM_RED_THREADS) rescale_kernel(float *f, const double *ss, int nlines) {
    __shared__ double sh[GM_RED_THREADS];
    const double before = gm_partials_total(ss, nlines, sh), after = gm_partials_total(ss + nlines, nlines, sh);
    if (threadIdx.x == 0) *f = (float)(sqrt(before) / fmax(sqrt(after), 1e-10));
}

__global__ static void scale_kernel(float *V, size_t n, const float *f) {
    const float s = *f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        V[i] = __fmul_rn(V[i], s);
}

void gm_cuda_normuon(const gm_backend *be, gm_real *V, gm_real *v2, int rows, int cols, int by_row, double beta2) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    const int nlines = by_row ? rows : cols, len = by_row ? cols : rows;
    const size_t n = (size_t)rows * cols;
    if (!n) return;
    double *ss = (double *)gm_cuda_scratch(c, GM_SCR_NORMUON, 2 * (size_t)nlines * sizeof(double) + sizeof(double));
    if (!ss) return;
    float *f = (float *)(ss + 2 * (size_t)nlines);
    lines_kernel<<<(nlines + LINES_BLOCK - 1) / LINES_BLOCK, LINES_BLOCK, 0, c->stream>>>(
        V, v2, ss, nlines, len, by_row ? 1 : (size_t)cols, by_row ? (size_t)cols : 1, (float)(1.0 - beta2));
    GM_CU_LAUNCHED(c);
    rescale_kernel<<<1, GM_RED_THREADS, 0, c->stream>>>(f, ss, nlines);
    GM_CU_LAUNCHED(c);
    scale_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(V, n, f);
    GM_CU_LAUNCHED(c);
}
