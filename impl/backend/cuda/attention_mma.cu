// Flash attention on bf16 tensor cores (mma.sync m16n8k16 on sm_80 and up; wgmma with TMA on
// sm_90a) for head_dim 64 and 128, with the records' block mask, on the (B, T, NH, HD) activations
// of backend.h (act_elem.cuh's element: fp32 or bf16): the kernels and their launchers. Their
// device code lives beside this file, one concept a header:
//   attention_mma_shapes.cuh    the rows a block owns, the tiles it streams, its rings' stages
//   attention_mma_products.cuh  the tile products: mma.sync from ldmatrix fragments, wgmma from
//                               shared-memory descriptors (one accumulator layout a warp for both)
//   attention_mma_tiles.cuh     activation tiles into shared bf16 tiles (pitched or 128-byte
//                               swizzled), and the outputs' stores
//   attention_mma_mask.cuh      the mask as a range a token, tile classes, the element mask
//   attention_mma_ring.cuh      the rings the tiles stream through (the wgmma kernels': TMA,
//                               mbarriers, stages given back a warp at a time)
//   attention_mma_softmax.cuh   scores into probabilities: the online softmax, P from lse, dS
//   attention_mma_fwd.cuh       the forward (mma.sync: 16 or 32 rows a warp; wgmma: work items,
//                               persistent blocks, producer warp, pingpong)
//   attention_mma_dq.cuh        the backward's dq kernel
//   attention_mma_dkdv.cuh      the backward's dk/dv kernel, and the one-pass backward
//   attention_mma_parts.cuh     the Hopper parts checked one at a time
// verify/emu/ compiles all of it but the kernels and launchers below as host C++ with its own
// mma_sm80.cuh, wgmma_sm90.cuh, tma_sm90.cuh and ordered_sum.cuh (the instructions' semantics, the
// asynchrony of wgmma and TMA, the mbarriers' phases) and runs the bodies on a CPU, where every kernel matches
// the CPU backend's dense reference (verify/test_attn_emulated.c, in make verify). On GPUs:
// verify/test_cuda_attention_mma.c, run on an H100 (reports/gpu-h100/, d81bddf) and on H200s;
// what each run measured, and what changed since the last one (executed under the emulation only
// until a GPU runs it), is in reports/gpu-h200/README.md. attention.cu picks among the forms by
// those measurements.
//
// Precision: q, k, v and dout enter the products as bf16: a bf16 element as it is, an fp32 one
// rounded (nearest even) as its tile is loaded into shared memory; scores, the softmax, lse, D and
// every accumulator are fp32; P (forward, dV) and dS (dQ, dK) are rounded to bf16 as the A operand
// of the next product (FlashAttention-2 does the same). out, dq, dk, dv are rounded to the
// activation element once, at their store (an ADD widens the old element, adds in fp32 and rounds
// once); lse is fp32.
//
// Forward: 128 query rows a work item walk key tiles of 64 with an online softmax (log2 domain) and
// write out and lse (B, NH, T). Backward, deterministic (the two-kernel forms also free of
// atomics): D = rowsum(dout * out) and lse2 = lse log2(e), padded (attention.cu, one pass), then
//   dq kernel:    a block owns 128 query rows, walks key tiles of 64, recomputes P = exp2(S - lse),
//                 dP = dO V^T, dS = P (dP - D), dQ += dS K, and adds scale * dQ once at the end;
//   dk/dv kernel: a block owns 128 key rows, walks query tiles of 64 (32 at head_dim 128 with
//                 mma.sync: the registers of dK and dV), computes S^T, P^T, dP^T = V dO^T and dS^T,
//                 dV += P^T dO, dK += dS^T Q, and adds them once at the end.
// Every output element is summed by one thread in a fixed order, so runs repeat bit for bit. The
// price is S and dP computed twice (7 tile products a pair instead of FlashAttention-2's 5 with
// atomic dQ). The one-pass backward (GM_CUDA_ATTN_WGMMA1, wgmma only) is FlashAttention-2's 5,
// with dQ's parts added over the key blocks in a fixed order behind a semaphore a query tile
// (attention_mma_dkdv.cuh): deterministic too.
//
// Occupancy (nvcc 13.0 -Xptxas -v, sm_90a, bf16 element; the kernels below): 2 blocks an SM for
// the mma.sync forwards (8 warps of 16 rows, or 4 of 32) and the head_dim 64 wgmma forward, 1 block
// for the head_dim 128 wgmma forward (8 warps and, with TMA, its producer warp) and the backward
// kernels (8 warps); shared memory 55 to 210 KB a block (the *_smem functions).
// Sizes, for the record's softcap shape (B = 1, T = 65536, NH = 6, HD = 128): grids of 512 x 6
// blocks of 256 threads (the wgmma forward: 3072 blocks of 288 in one dimension, or persistent,
// 132 on an H100 or H200); element offsets in size_t ((b T NH + h) HD + t NH HD < 2^32 here, and
// anything up to 2^63); token indices and the window arithmetic in int / long long.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/attn_mask.h"
#include "backend/cuda/attention.cuh"
#include "backend/cuda/attention.h"
#include "backend/cuda/device.h"

// mma.sync with bf16 operands needs sm_80; a build for an older architecture (CUDA_ARCH, Makefile)
// has none of the code below, and the dispatcher runs the scalar kernels.
#if GM_CUDA_ARCH >= 800
#include "backend/cuda/attention_mma_dkdv.cuh"
#include "backend/cuda/attention_mma_dq.cuh"
#include "backend/cuda/attention_mma_fwd.cuh"
#include "backend/cuda/attention_mma_parts.cuh"

extern "C" int gm_cuda_attn_mma_built(void) { return 1; }

// verify/emu/ compiles the device code the headers above hold as host C++ (GM_ATTN_HOST_EMULATION)
// and runs the bodies on a CPU; the kernels and launchers below are CUDA only.
#ifndef GM_ATTN_HOST_EMULATION
// ---- kernels: one per head_dim, so every array size and loop count is a constant ----

#define FWD_ARGS                                                                                                     \
    gm_cuda_act *__restrict__ out, float *__restrict__ lse, const gm_cuda_act *__restrict__ q,                       \
        const gm_cuda_act *__restrict__ k, const gm_cuda_act *__restrict__ v, int T, int NH, float scale_log2,       \
        gm_attn_mask m, const int32_t *__restrict__ bounds, const __grid_constant__ attn_tmaps tm, int B, int turns
// The backward kernels' inputs, after their outputs. tm: the wgmma forms' tensor maps (the
// others' are zeros, never read); a kernel parameter, which TMA reads where it lies.
#define BWD_INPUTS                                                                                                   \
    const gm_cuda_act *__restrict__ dout, const gm_cuda_act *__restrict__ q, const gm_cuda_act *__restrict__ k,      \
        const gm_cuda_act *__restrict__ v, const float *__restrict__ lse2, const float *__restrict__ D, int T,       \
        int NH, float scale_log2, float scale, gm_attn_mask m, const int32_t *__restrict__ bounds,                   \
        gm_grad_write w, const __grid_constant__ attn_tmaps tm

// Registers (nvcc 13.0 -Xptxas -v, sm_90a, bf16 element; head_dim 64 / 128), no spill unless said
// and no wgmma serialized: the mma.sync forwards at two blocks an SM, M = 1 125 / 128 (the cap of
// 256 threads at two blocks), M = 2 210 / 254 with 8 bytes spilled (one 64-bit value reloaded once
// a tile; ptxas's allocation at this edge moves with small changes, and its 128 output and 64
// score registers a thread are FlashAttention-2's too); the mma.sync dq kernel 156 / 196, dk/dv
// 194 / 224; the wgmma forward 127 (under the cap of its two blocks an SM) / 152 (with the producer
// warp), dq 142 / 175, dk/dv 186 / 250, the one-pass backward 206 / 255 (its dq's partial sums
// added by 16-byte float atomics, ATOMG.E.ADD.F32x4 with no destination: a reduction in L2,
// subnormal sums flushed to zero as every float atomic does). reports/gpu-h200/README.md traces
// how they and each main loop's instructions a tile (cuobjdump -sass) moved with each change.
template <int M, bool WG>
__global__ static void __launch_bounds__(FWD_THREADS(M, WG, 64), FWD_MIN_BLOCKS(WG, 64)) attn_fwd_64(FWD_ARGS) {
    fwd_body<M, WG>(out, lse, q, k, v, B, T, NH, scale_log2, m, bounds, 64, &tm, turns != 0);
}
template <int M, bool WG>
__global__ static void __launch_bounds__(FWD_THREADS(M, WG, 128), FWD_MIN_BLOCKS(WG, 128)) attn_fwd_128(FWD_ARGS) {
    fwd_body<M, WG>(out, lse, q, k, v, B, T, NH, scale_log2, m, bounds, 128, &tm, turns != 0);
}
template <bool WG>
__global__ static void __launch_bounds__(BWD_THREADS, 1) attn_dq_64(gm_cuda_act *__restrict__ dq, BWD_INPUTS) {
    dq_body<WG>(dq, dout, q, k, v, lse2, D, T, NH, scale_log2, scale, m, bounds, w, 64, &tm);
}
template <bool WG>
__global__ static void __launch_bounds__(BWD_THREADS, 1) attn_dq_128(gm_cuda_act *__restrict__ dq, BWD_INPUTS) {
    dq_body<WG>(dq, dout, q, k, v, lse2, D, T, NH, scale_log2, scale, m, bounds, w, 128, &tm);
}
template <bool WG, bool DQ>
__global__ static void __launch_bounds__(BWD_THREADS, 1)
    attn_dkdv_64(gm_cuda_act *__restrict__ dk, gm_cuda_act *__restrict__ dv, BWD_INPUTS, dq_sum ds) {
    dkdv_body<WG, DQ>(dk, dv, dout, q, k, v, lse2, D, T, NH, scale_log2, scale, m, bounds, w, 64, &tm, ds);
}
template <bool WG, bool DQ>
__global__ static void __launch_bounds__(BWD_THREADS, 1)
    attn_dkdv_128(gm_cuda_act *__restrict__ dk, gm_cuda_act *__restrict__ dv, BWD_INPUTS, dq_sum ds) {
    dkdv_body<WG, DQ>(dk, dv, dout, q, k, v, lse2, D, T, NH, scale_log2, scale, m, bounds, w, 128, &tm, ds);
}

// Dynamic shared memory of each kernel (bytes): bf16 tiles of `rows` rows (TILE_PITCH elements
// each; with wgmma 1024 bytes more, for swizzle_base to find the swizzle's boundary, and the TMA
// barrier ring), then the per-row vectors (row_bounds' bounds; lse and D of dk/dv's query tiles);
// the streamed tiles once per stage of their ring (2, or the *_STAGES above). Forward at HD 128:
// (128 + 2 x (64 + 64)) x 272 + 128 x 4 = 104,960 (wgmma's 3 Q, 3 K and 4 V stages, unpadded, and
// 16 mbarriers: (3 x 128 + 7 x 64) x 256 + 1024 + 128 + 512 = 214,656); dq: 139,776 (wgmma's 4 K and 3 V
// stages: 181,888); dk/dv: (128 + 128 + 3 x (32 + 32)) x 272 + (3 x 2 x 32 + 128) x 4 = 123,136,
// with wgmma's 64-query tiles 167,040, and for the one-pass backward (DQ) dS^T's 128 x 64 bf16 and
// the work index: 183,440 (HD 64: 55,808 (108,160) / 74,240 (91,776) / 94,208 (85,120; 101,520)).
static size_t tiles_smem(int rows, int HD, bool WG) {
    return (size_t)rows * TILE_PITCH(HD, WG) * 2 + (WG ? 1024 + WG_MBARS * 8 : 0);
}
static size_t fwd_smem(int HD, bool WG) {
    const int rows =
        WG ? FWD_Q_STAGES * BLOCK_ROWS + (FWD_K_STAGES + FWD_V_STAGES) * KEY_TILE : BLOCK_ROWS + 4 * KEY_TILE;
    return tiles_smem(rows, HD, WG) + BLOCK_ROWS * 4;
}
static size_t dq_smem(int HD, bool WG) {
    return tiles_smem(2 * BLOCK_ROWS + (WG ? DQ_K_STAGES + DQ_V_STAGES : 4) * KEY_TILE, HD, WG) + BLOCK_ROWS * 4;
}
static size_t dkdv_smem(int HD, bool WG, bool DQ) {
    const int QT = QUERY_TILE(HD, WG), QS = QUERY_STAGES(dkdv_lag(WG, DQ));
    return tiles_smem(2 * BLOCK_ROWS + 2 * QS * QT, HD, WG) + (2 * QS * QT + BLOCK_ROWS) * 4 +
           (DQ ? BLOCK_ROWS * 64 * 2 + 16 : 0);
}

int gm_cuda_attn_mma_fits(int HD, const void *const *ptrs, int n) {
    if (HD != 64 && HD != 128) return 0;
    for (int i = 0; i < n; i++)
        if ((uintptr_t)ptrs[i] % 16) return 0;
    return 1;
}

// Launch `kern` with `nth` threads and `smem` bytes of dynamic shared memory (above the default
// 48 KiB: opted in).
#define LAUNCH(c, kern, grid, nth, smem, ...)                                                                        \
    do {                                                                                                             \
        GM_CU(c, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(smem)));             \
        kern<<<grid, nth, smem, (c)->stream>>>(__VA_ARGS__);                                                         \
        GM_CU_LAUNCHED(c);                                                                                           \
    } while (0)

// Whether the wgmma kernels run on the current device: not where GM_CUDA_WGMMA=off turned them
// off; a probe kernel reports whether the machine code the driver picked for it is the sm_90a
// build's (once per device), and their TMA copies need the driver's tensor-map encoder.
__device__ static int wgmma_probe_flag;
__global__ static void wgmma_probe(void) { wgmma_probe_flag = GM_WGMMA_BUILT; }
int gm_cuda_attn_wgmma_runs(gm_cuda_ctx *c) {
    static int known[64];  // per device: 0 unknown, 1 no, 2 yes
    const int dev = c->device;
    if (dev < 0 || dev >= 64 || c->wgmma_off) return 0;
    if (!known[dev]) {
        int flag = 0;
        wgmma_probe<<<1, 1, 0, c->stream>>>();
        if (cudaMemcpyFromSymbolAsync(&flag, wgmma_probe_flag, sizeof flag, 0, cudaMemcpyDeviceToHost, c->stream) !=
                cudaSuccess ||
            cudaStreamSynchronize(c->stream) != cudaSuccess)
            flag = 0;
        if (WG_TMA && !tma_encoder()) flag = 0;  // and, with TMA, the driver's tensor-map encoder
        known[dev] = flag ? 2 : 1;
    }
    return known[dev] == 2;
}

// The tensor maps of a wgmma form's TMA copies (q, k, v, and in the backward o: dout, and the
// per-query lse2 and D, each NULL in the forward), or zeros where the form (or the fp32 element)
// copies without; 0 (noted) where the encoder refused.
static int tensor_maps(gm_cuda_ctx *c, attn_tmaps *tm, bool WG, const gm_cuda_act *q, const gm_cuda_act *k,
                       const gm_cuda_act *v, const gm_cuda_act *o, const float *lse2, const float *D, int B, int T,
                       int NH, int HD) {
    memset(tm, 0, sizeof *tm);
    if (!WG || !WG_TMA) return 1;
    const gm_cuda_act *src[4] = {q, k, v, o};
    CUtensorMap *map[4] = {&tm->q, &tm->k, &tm->v, &tm->o};
    const float *vec[2] = {lse2, D};
    CUtensorMap *vec_map[2] = {&tm->lse2, &tm->D};
    const char *why = NULL;
    for (int i = 0; i < 4 && !why; i++) why = src[i] ? tma_map_rows(map[i], src[i], B, T, NH, HD) : NULL;
    for (int i = 0; i < 2 && !why; i++)  // a run a head: its queries padded (attention.cuh), a box a query tile
        why = vec[i] ? tma_map_vec(vec_map[i], vec[i], B * NH, gm_cuda_attn_qvec_len(T, 1), QUERY_TILE(HD, true))
                     : NULL;
    if (why) gm_cuda_note(c, __FILE__, __LINE__, "attention (wgmma, TMA)", why);
    return !why;
}

__global__ static void attn_mask_bounds(int32_t *bounds, gm_attn_mask m, int B, int T) {
    mask_bounds_body(bounds, m, B, T);
}
// With documents, every token's mask bounds (mask_bounds_body) in scratch, written on the stream
// before the kernels that read them; without, NULL (the kernels use the window's arithmetic).
// *ok = 0 where the scratch could not be had (noted).
static const int32_t *mask_bounds(gm_cuda_ctx *c, gm_attn_mask m, int B, int T, int *ok) {
    *ok = 1;
    if (!m.doc) return NULL;
    const size_t n = (size_t)B * T;
    int32_t *bounds = (int32_t *)gm_cuda_scratch(c, GM_SCR_ATTN_BOUNDS, 2 * n * sizeof(int32_t));
    if (!bounds) {
        *ok = 0;
        return NULL;
    }
    attn_mask_bounds<<<(unsigned)((n + 255) / 256), 256, 0, c->stream>>>(bounds, m, B, T);
    GM_CU_LAUNCHED(c);
    return bounds;
}

// Blocks of the persistent wgmma forward: as many as the GPU holds at once (its SMs times the
// blocks of `kern` an SM takes with smem bytes each), at most one an item. The blocks an SM are
// asked of the occupancy API once, into *per_sm (0 until then; the backend has one device a
// process), not on every call.
template <typename Kernel>
static unsigned persistent_blocks(gm_cuda_ctx *c, Kernel kern, int nth, size_t smem, size_t items, int *per_sm) {
    if (!*per_sm) {
        int n = 0;
        const bool asked =
            cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) == cudaSuccess &&
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern, nth, smem) == cudaSuccess;
        *per_sm = asked && n >= 1 ? n : 1;
    }
    const size_t sms = (size_t)max(gm_cuda_device_sms(c->device), 1);
    return (unsigned)min(items, sms * *per_sm);
}

// One forward kernel of `form` on `grid` (PERSIST: as many blocks as the GPU holds, at most
// `items`; PINGPONG: the wgmma forward's warpgroups taking turns).
template <int M, bool WG>
static void fwd_launch(gm_cuda_ctx *c, gm_attn_fwd_form form, dim3 grid, size_t items, int HD, gm_cuda_act *out,
                       float *lse, const gm_cuda_act *q, const gm_cuda_act *k, const gm_cuda_act *v, int B, int T,
                       int NH, float sl2, gm_attn_mask m, const int32_t *bounds, const attn_tmaps &tm) {
    const bool persist = form == GM_ATTN_FWD_WGMMA_PERSIST, turns = form == GM_ATTN_FWD_WGMMA_PINGPONG;
    static int per_sm[2];  // head_dim 64, 128: persistent_blocks' blocks an SM
    const auto kern = HD == 64 ? attn_fwd_64<M, WG> : attn_fwd_128<M, WG>;
    const size_t smem = fwd_smem(HD, WG);
    const int nth = FWD_THREADS(M, WG, HD);
    if (persist) grid.x = persistent_blocks(c, kern, nth, smem, items, &per_sm[HD == 128]);
    LAUNCH(c, kern, grid, nth, smem, out, lse, q, k, v, T, NH, sl2, m, bounds, tm, B, (int)turns);
}

void gm_cuda_attn_mma_fwd(gm_cuda_ctx *c, gm_attn_fwd_form form, gm_cuda_act *out, float *lse, const gm_cuda_act *q,
                          const gm_cuda_act *k, const gm_cuda_act *v, int B, int T, int NH, int HD, double scale,
                          gm_attn_mask m) {
    const int nqb = (T + BLOCK_ROWS - 1) / BLOCK_ROWS;
    const bool wg =
        form == GM_ATTN_FWD_WGMMA || form == GM_ATTN_FWD_WGMMA_PERSIST || form == GM_ATTN_FWD_WGMMA_PINGPONG;
    const size_t items = (size_t)B * NH * nqb;  // the wgmma forward's (fwd_item)
    if (wg && items > 0x3fffffff) {
        gm_cuda_note(c, __FILE__, __LINE__, "attention (wgmma forward)", "more than 2^30 - 1 blocks of 128 queries");
        return;
    }
    const dim3 grid = wg ? dim3((unsigned)items) : dim3(nqb, NH, B);
    const float sl2 = (float)(scale * LOG2E);
    attn_tmaps tm;
    if (!tensor_maps(c, &tm, wg, q, k, v, NULL, NULL, NULL, B, T, NH, HD)) return;
    int ok;
    const int32_t *bounds = mask_bounds(c, m, B, T, &ok);
    if (!ok) return;
    if (form == GM_ATTN_FWD_MMA32)
        fwd_launch<2, false>(c, form, grid, items, HD, out, lse, q, k, v, B, T, NH, sl2, m, bounds, tm);
    else if (wg) fwd_launch<1, true>(c, form, grid, items, HD, out, lse, q, k, v, B, T, NH, sl2, m, bounds, tm);
    else fwd_launch<1, false>(c, form, grid, items, HD, out, lse, q, k, v, B, T, NH, sl2, m, bounds, tm);
}

void gm_cuda_attn_mma_bwd(gm_cuda_ctx *c, gm_attn_bwd_form form, gm_cuda_act *dq, gm_cuda_act *dk, gm_cuda_act *dv,
                          gm_grad_write w, const gm_cuda_act *dout, const gm_cuda_act *q, const gm_cuda_act *k,
                          const gm_cuda_act *v, const float *lse2, const float *D, int B, int T, int NH, int HD,
                          double scale, gm_attn_mask m) {
    const dim3 grid((T + BLOCK_ROWS - 1) / BLOCK_ROWS, NH, B);
    const float sl2 = (float)(scale * LOG2E), sc = (float)scale;
    attn_tmaps tm;
    if (!tensor_maps(c, &tm, form != GM_ATTN_BWD_MMA, q, k, v, dout, lse2, D, B, T, NH, HD)) return;
    int ok;
    const int32_t *bounds = mask_bounds(c, m, B, T, &ok);  // once for both kernels
    if (!ok) return;
    if (form == GM_ATTN_BWD_ONEPASS) {
        const size_t tiles = (size_t)B * NH * dq_sum_tiles(T), blocks = (size_t)B * NH * grid.x;
        if (blocks > 0x7fffffff) {
            gm_cuda_note(c, __FILE__, __LINE__, "attention (one-pass backward)", "more than 2^31 - 1 key blocks");
            return;
        }
        const size_t part_bytes = tiles * dq_sum_tile_float4s(HD) * sizeof(float4);
        dq_sum ds = {dq, (float4 *)gm_cuda_scratch(c, GM_SCR_ATTN_DQ_PART, part_bytes),
                     (int32_t *)gm_cuda_scratch(c, GM_SCR_ATTN_ORDER, (1 + tiles) * sizeof(int32_t))};
        if (!ds.part || !ds.order) return;
        GM_CU(c, cudaMemsetAsync(ds.order, 0, (1 + tiles) * sizeof(int32_t), c->stream));
        if (HD == 64)
            LAUNCH(c, (attn_dkdv_64<true, true>), (unsigned)blocks, BWD_THREADS, dkdv_smem(64, true, true), dk, dv,
                   dout, q, k, v, lse2, D, T, NH, sl2, sc, m, bounds, w, tm, ds);
        else
            LAUNCH(c, (attn_dkdv_128<true, true>), (unsigned)blocks, BWD_THREADS, dkdv_smem(128, true, true), dk, dv,
                   dout, q, k, v, lse2, D, T, NH, sl2, sc, m, bounds, w, tm, ds);
        return;
    }
    const dq_sum none = {};
#define BWD(WG)                                                                                                      \
    do {                                                                                                             \
        if (HD == 64) {                                                                                              \
            LAUNCH(c, attn_dq_64<WG>, grid, BWD_THREADS, dq_smem(64, WG), dq, dout, q, k, v, lse2, D, T, NH, sl2,    \
                   sc, m, bounds, w, tm);                                                                            \
            LAUNCH(c, (attn_dkdv_64<WG, false>), grid, BWD_THREADS, dkdv_smem(64, WG, false), dk, dv, dout, q, k, v, \
                   lse2, D, T, NH, sl2, sc, m, bounds, w, tm, none);                                                 \
        } else {                                                                                                     \
            LAUNCH(c, attn_dq_128<WG>, grid, BWD_THREADS, dq_smem(128, WG), dq, dout, q, k, v, lse2, D, T, NH, sl2,  \
                   sc, m, bounds, w, tm);                                                                            \
            LAUNCH(c, (attn_dkdv_128<WG, false>), grid, BWD_THREADS, dkdv_smem(128, WG, false), dk, dv, dout, q, k,  \
                   v, lse2, D, T, NH, sl2, sc, m, bounds, w, tm, none);                                              \
        }                                                                                                            \
    } while (0)
    if (form == GM_ATTN_BWD_WGMMA) BWD(true);
    else BWD(false);
#undef BWD
}

template <int HD>
__global__ static void __launch_bounds__(BWD_THREADS, 1)
    attn_wgmma_parts(const gm_cuda_act *x, const __grid_constant__ attn_tmaps tm, uint16_t *raw_tma,
                     uint16_t *raw_copy, uint16_t *raw_vec, float *abt, float *xb, float *dq) {
    parts_body(x, &tm, raw_tma, raw_copy, raw_vec, abt, xb, dq, HD);
}

int gm_cuda_attn_wgmma_parts_run(gm_cuda_ctx *c, int HD, char *report, size_t len) {
    report[0] = 0;
    if (!gm_cuda_attn_wgmma_runs(c) || (HD != 64 && HD != 128)) {
        snprintf(report, len, "%s\n", HD != 64 && HD != 128 ? "head_dim 64 or 128" : "wgmma does not run here");
        return -1;
    }
    const size_t nx = (size_t)BLOCK_ROWS * 2 * HD, nt = (size_t)BLOCK_ROWS * HD;
    // x, raw_tma, raw_copy, raw_vec, abt, xb, dq
    const size_t bytes[7] = {nx * sizeof(gm_cuda_act), nt * 2, nt * 2, PARTS_VEC * 4, (size_t)BLOCK_ROWS * 64 * 4,
                             nt * 4, (size_t)64 * HD * 4};
    void *host[7] = {}, *dev[7] = {};
    float *xv = (float *)malloc(nx * sizeof(float));
    int rc = xv ? 0 : -1;
    for (int i = 0; i < 7 && !rc; i++)
        if (!(host[i] = malloc(bytes[i])) || cudaMalloc(&dev[i], bytes[i]) != cudaSuccess) rc = -1;
    attn_tmaps tm;
    memset(&tm, 0, sizeof tm);
    const char *why = rc ? "no memory" : NULL;
    if (!rc) {
        parts_input((gm_cuda_act *)host[0], xv, HD);
        why = WG_TMA ? tma_map_rows(&tm.q, dev[0], 1, PARTS_T, 2, HD) : NULL;
        if (WG_TMA && !why)  // x's elements HD.. as one run of fp32 elements
            why = tma_map_vec(&tm.lse2, (const float *)((const gm_cuda_act *)dev[0] + HD), 1, PARTS_VEC, PARTS_VEC);
        rc = why ? -1 : 0;
    }
    if (!rc) {
        const gm_cuda_act *x = (const gm_cuda_act *)dev[0];
        uint16_t *raw_tma = (uint16_t *)dev[1], *raw_copy = (uint16_t *)dev[2], *raw_vec = (uint16_t *)dev[3];
        float *abt = (float *)dev[4], *xb = (float *)dev[5], *dq = (float *)dev[6];
        void (*kern)(const gm_cuda_act *, attn_tmaps, uint16_t *, uint16_t *, uint16_t *, float *, float *, float *) =
            HD == 64 ? attn_wgmma_parts<64> : attn_wgmma_parts<128>;
        cudaError_t e = cudaMemcpy(dev[0], host[0], bytes[0], cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)parts_smem(HD));
        if (e == cudaSuccess)
            kern<<<1, BWD_THREADS, parts_smem(HD)>>>(x, tm, raw_tma, raw_copy, raw_vec, abt, xb, dq);
        if (e == cudaSuccess) e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        for (int i = 1; i < 7 && e == cudaSuccess; i++)
            e = cudaMemcpy(host[i], dev[i], bytes[i], cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) why = cudaGetErrorString(e), rc = -1;
    }
    if (!rc)
        rc = parts_compare(xv, HD, (const uint16_t *)host[1], (const uint16_t *)host[2], (const uint16_t *)host[3],
                           (const float *)host[4], (const float *)host[5], (const float *)host[6], report, len);
    else
        snprintf(report, len, "HD %d: the check did not run: %s\n", HD, why);
    for (int i = 0; i < 7; i++) free(host[i]), cudaFree(dev[i]);
    free(xv);
    return rc;
}
#endif  // GM_ATTN_HOST_EMULATION
#else
extern "C" int gm_cuda_attn_mma_built(void) { return 0; }
int gm_cuda_attn_mma_fits(int HD, const void *const *ptrs, int n) { return (void)HD, (void)ptrs, (void)n, 0; }
static void absent(gm_cuda_ctx *c) {
    gm_cuda_note(c, __FILE__, __LINE__, "attention (tensor cores)", "not in this build (CUDA_ARCH below compute_80)");
}
int gm_cuda_attn_wgmma_runs(gm_cuda_ctx *c) { return (void)c, 0; }
int gm_cuda_attn_wgmma_parts_run(gm_cuda_ctx *c, int HD, char *report, size_t len) {
    return (void)c, (void)HD, snprintf(report, len, "not in this build (CUDA_ARCH below compute_80)\n"), -1;
}
void gm_cuda_attn_mma_fwd(gm_cuda_ctx *c, gm_attn_fwd_form, gm_cuda_act *, float *, const gm_cuda_act *,
                          const gm_cuda_act *, const gm_cuda_act *, int, int, int, int, double, gm_attn_mask) {
    absent(c);
}
void gm_cuda_attn_mma_bwd(gm_cuda_ctx *c, gm_attn_bwd_form, gm_cuda_act *, gm_cuda_act *, gm_cuda_act *,
                          gm_grad_write, const gm_cuda_act *, const gm_cuda_act *, const gm_cuda_act *,
                          const gm_cuda_act *, const float *, const float *, int, int, int, int, double, gm_attn_mask) {
    absent(c);
}
#endif
