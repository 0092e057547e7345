// NorMuon's per-line second-moment normalization (backend.h; record #43, modded-nanogpt
// records/track_1_short/2025-11-10_CautiousWD): the per-line statements of cpu/normuon.c, one
// thread per line, with explicitly rounded fp32 and fp64 operations (no FMA contraction), so each
// line's sums, its second moment and its scaled values are the CPU's bit for bit. The two Frobenius norms add the
// lines' fp64 sums with reduce.cuh's fixed tree, not the CPU's line order: equal to rounding of
// fp64 sums, then one fp32 rounding of the rescale.
//
// A line's sums are sequential (the CPU's order): one lane per line, a chain of len dependent fp64
// additions. What keeps the chain off the memory's latency is a shared tile: a block of 256 threads
// owns LINES lines and loads SEG elements of each at a time, coalesced (consecutive threads along
// whichever axis is contiguous) and every thread's loads in flight together, then its first warp
// runs the lines' chains out of shared memory. When a line fits in one segment (len <= SEG) the
// second pass scales the tile it already holds; else it loads each segment again. The scaled values
// go back through the tile, so the stores are coalesced too.
// History (on an H200, reports/gpu-h200/): one thread per line loading one element per addition in
// blocks of 128 lines took 0.19-0.25 ms a call for these 2.4-9.4 MB matrices (13.7 ms of the normuon
// step at 34feab9); 16 elements a chunk in registers, blocks of one warp: 0.17-0.33 ms (20.3 ms at
// 8826418), each warp waiting on one line of loads at a time; this kernel: 0.064-0.069 ms a call,
// 4.5 ms of the step (26112b6, reports/gpu-h200/run-26112b6/), the same bits (the GPU test and the
// whole-step comparison unchanged).
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/reduce.cuh"

#define LINES 32          // lines per block: one per lane of its first warp
#define SEG 256           // elements of each line in the tile at a time
#define SPITCH (SEG + 1)  // odd pitch: a lane walking its line and lanes across lines hit distinct banks
#define TILE_THREADS 256  // threads that load and store the tile

// Elements [j0, j0 + n) of the block's lines [l0, l0 + nl) (line l's element j at V[l next + j step])
// between global memory and the tile (line-major, pitch SPITCH): into the tile, or out of it with
// `store`. Consecutive threads take consecutive addresses: along a line when step is 1, else across
// lines (next is then 1: the lines are columns).
static __device__ __forceinline__ void tile_io(float *tile, float *V, int l0, int nl, int j0, int n, size_t step,
                                               size_t next, bool store) {
    const bool along = step == 1;
    const int total = nl * n;
#pragma unroll 8
    for (int e = threadIdx.x; e < total; e += TILE_THREADS) {
        const int li = along ? e / n : e % nl, j = along ? e % n : e / nl;
        float *g = V + (size_t)(l0 + li) * next + (size_t)(j0 + j) * step;
        if (store) *g = tile[li * SPITCH + j];
        else tile[li * SPITCH + j] = *g;
    }
}

__global__ static void __launch_bounds__(TILE_THREADS) lines_kernel(float *V, float *v2, double *ss, int nlines,
                                                                    int len, size_t step, size_t next, float w) {
    __shared__ float tile[LINES * SPITCH];
    const int l0 = blockIdx.x * LINES, nl = min(LINES, nlines - l0), lane = threadIdx.x;
    const bool owner = lane < nl;  // this thread runs line l0 + lane (threads of the first warp only)
    float *mine = tile + lane * SPITCH;  // this thread's line in the tile
    double s = 0, t = 0;
    for (int j0 = 0; j0 < len; j0 += SEG) {
        const int n = min(SEG, len - j0);
        tile_io(tile, V, l0, nl, j0, n, step, next, false);
        __syncthreads();
        if (owner)
            for (int j = 0; j < n; j++) s = __dadd_rn(s, __dmul_rn((double)mine[j], (double)mine[j]));
        __syncthreads();  // the tile is consumed before the next segment overwrites it
    }
    float r = 0.0f;
    if (owner) {
        const int l = l0 + lane;
        const float mean = (float)__ddiv_rn(s, (double)len);
        const float v = __fadd_rn(v2[l], __fmul_rn(w, __fsub_rn(mean, v2[l])));
        v2[l] = v;
        r = (float)__ddiv_rn(1.0, __dsqrt_rn(fmax((double)v, 1e-10)));
    }
    const bool held = len <= SEG;  // the first pass's only segment is still in the tile
    for (int j0 = 0; j0 < len; j0 += SEG) {
        const int n = min(SEG, len - j0);
        if (!held) {
            tile_io(tile, V, l0, nl, j0, n, step, next, false);
            __syncthreads();
        }
        if (owner)
            for (int j = 0; j < n; j++) {
                const float y = __fmul_rn(mine[j], r);
                mine[j] = y;
                t = __dadd_rn(t, __dmul_rn((double)y, (double)y));
            }
        __syncthreads();
        tile_io(tile, V, l0, nl, j0, n, step, next, true);
        __syncthreads();  // stored before the next segment overwrites the tile
    }
    if (owner) ss[l0 + lane] = s, ss[nlines + l0 + lane] = t;
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
    lines_kernel<<<(nlines + LINES - 1) / LINES, TILE_THREADS, 0, c->stream>>>(
        V, v2, ss, nlines, len, by_row ? 1 : (size_t)cols, by_row ? (size_t)cols : 1, (float)(1.0 - beta2));
    GM_CU_LAUNCHED(c);
    rescale_kernel<<<1, GM_RED_THREADS, 0, c->stream>>>(f, ss, nlines);
    GM_CU_LAUNCHED(c);
    scale_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(V, n, f);
    GM_CU_LAUNCHED(c);
}
