// The rings the tensor-core attention's streamed tiles pass through (attention_mma.cu): K and V in
// the forward and dq kernels; Q, dO and their per-query lse2 and D in the dk/dv kernel. A stage is
// read while the next ones are filled:
// - the mma.sync forward and dq kernels: 2 stages (the mma.sync forwards fit two blocks an SM with
//   no more), tile i + 1 copied while tile i is computed, one block barrier a tile (key_ring_step);
// - the dk/dv kernels (both kinds; their ring in their body) and the wgmma forward and dq kernels:
//   tiles i + 1 and i + 2 in flight while tile i is computed (the *_STAGES of
//   attention_mma_shapes.cuh; with the documents' short rows a tile is short, and one tile of lead
//   left each copy's latency exposed: by reading the code). The wgmma kernels' tiles come by TMA
//   with the bf16 element (one issuer; every consumer waits on the tile group's mbarrier), each
//   stage given back by every warp on an mbarrier of its own once its last product reading it has
//   completed, so the warpgroups run apart (no block barrier a tile, except in the one-pass
//   backward, whose dS^T both warpgroups read).
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_RING_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_RING_CUH

#include "backend/cuda/attention_mma_mask.cuh"
#include "backend/cuda/attention_mma_shapes.cuh"
#include "backend/cuda/attention_mma_tiles.cuh"
#include "backend/cuda/tma_sm90.cuh"
#include "backend/cuda/wgmma_sm90.cuh"

// The wgmma kernels' tiles come by TMA (tma_sm90.cuh) with the bf16 element: thread 0 (in the
// head_dim 128 forward its producer warp's lane 0: FWD_PRODUCER) issues a tile group's boxes and
// its barrier counts their bytes, and every consumer thread waits on the barrier.
// With the fp32 element (the engine copies, it does not round) every thread loads, rounds and
// stores them (load_rows), and a proxy fence orders the stores before wgmma's reads.
#define WG_TMA (sizeof(gm_cuda_act) == 2)
// The barrier ring: tile group j completes on bars[j % WG_BARS] in its phase j / WG_BARS. Group j
// is issued during tile j - 2 (by the forward's producer warp as soon as its stages are free),
// once every warp has waited for group j - 4 (after the stages' releases that follow those waits:
// a ring of at most WG_BARS stages; the one-pass backward also after tile j - 2's block barrier),
// so a barrier is armed again only after every wait on its last phase.
#define WG_BARS 4
// The mbarriers a wgmma kernel reserves: the ring, then each stage's empty barrier (forward, dq:
// their K and V stages; dk/dv: its query stages).
#define WG_MBARS 16
static_assert(WG_BARS + FWD_K_STAGES + FWD_V_STAGES <= WG_MBARS && WG_BARS + DQ_K_STAGES + DQ_V_STAGES <= WG_MBARS &&
                  WG_BARS + QUERY_STAGES(1) <= WG_MBARS,
              "the ring and every stage's empty barrier");
static_assert(FWD_K_STAGES <= WG_BARS && DQ_K_STAGES <= WG_BARS && QUERY_STAGES(1) <= WG_BARS,
              "a group is copied after every warp gave back the K (dk/dv: query) stage it reuses, after waiting "
              "for the group a ring back: at most WG_BARS back, so a barrier is rearmed after every wait on it");
static_assert(GM_ATTN_QVEC_ROWS % BLOCK_ROWS == 0, "the per-query vectors cover a block's rows past T");
// The tensor maps the wgmma kernels' TMA copies read: the activations q, k, v, dout (tma_map_rows)
// and the backward's per-query lse2 and D (tma_map_vec: a head's padded queries a run).
typedef struct {
    CUtensorMap q, k, v, o, lse2, D;
} attn_tmaps;
// Thread 0 initializes the ring (one arrival a phase: the issuer's) and the stages' empty
// barriers (one arrival a warp a phase: wg_release) before the block's first barrier (TMA only).
static __device__ __forceinline__ void wg_bars_init(uint64_t *bars) {
    if constexpr (WG_TMA) {
        if (threadIdx.x == 0) {
#pragma unroll
            for (int i = 0; i < WG_MBARS; i++) mbar_init(bars + i, i < WG_BARS ? 1 : BWD_THREADS / 32);
            mbar_init_fence();
        }
    }
}
// Decoupled warpgroups (the forward and dq kernels with TMA): no block barrier a tile; a ring
// stage is given back by each warp once the last product reading it has completed (lane 0 arrives
// on its empty barrier after the warp's wgmma wait), and the issuer waits for that before copying
// into the stage again. So one warpgroup may run a tile or two ahead of the other (their softmax
// then overlapping the other's products, as FlashAttention-3's two warpgroups do by schedule).
// The warp's lanes meet before lane 0 arrives: the dk/dv kernel's threads read the stage's lse2
// and D themselves, and only a __syncwarp orders the other lanes' reads before lane 0's arrival
// (its release), which the issuer's wait (acquire) orders before the next copy into the stage.
static __device__ __forceinline__ void wg_release(uint64_t *empty, int stage) {
    if constexpr (WG_TMA) {
        __syncwarp();
        if (threadIdx.x % 32 == 0) mbar_arrive(empty + stage);
        __syncwarp();  // the warp whole again before its next .aligned instruction (wgmma)
    }
}
// The issuer's wait before its use `use` of a stage: every warp's release of use - 1.
static __device__ __forceinline__ void wg_reuse(uint64_t *empty, int stage, int use) {
    if constexpr (WG_TMA)
        if (use > 0) mbar_wait(empty + stage, (use - 1) % 2);
}
// Whether the issuer could make its use `use` of a stage now (wg_reuse without the wait).
static __device__ __forceinline__ bool wg_free(uint64_t *empty, int stage, int use) {
    if constexpr (WG_TMA) return use == 0 || mbar_done(empty + stage, (use - 1) % 2);
    return true;
}
// Whether this thread issues a group's copies (TMA: thread 0 alone; fp32: all NTH); the issuer
// calls wg_expect with the group's bytes, then wg_fetch for each of its tiles.
static __device__ __forceinline__ bool wg_issuer(void) { return !WG_TMA || threadIdx.x == 0; }
static __device__ __forceinline__ void wg_expect(uint64_t *bars, int j, uint32_t bytes) {
    if constexpr (WG_TMA) mbar_arrive_expect_tx(bars + j % WG_BARS, bytes);
}
// Rows [r0, r0 + R) (R a multiple of 64) of head h, batch row b of a tensor into the sw128 tile
// dst, as group j: R / 64 x HD / 64 boxes of `map`, or load_rows from `src` (the head's row 0).
static __device__ __forceinline__ void wg_fetch(__nv_bfloat16 *dst, const CUtensorMap *map,
                                                const gm_cuda_act *__restrict__ src, uint64_t *bars, int j, int b,
                                                int h, int r0, const int R, int T, size_t rs, const int HD,
                                                const int NTH) {
    if constexpr (WG_TMA) {
#pragma unroll
        for (int slab = 0; slab < R / TMA_BOX_ROWS; slab++)
#pragma unroll
            for (int panel = 0; panel < HD / TMA_BOX_COLS; panel++)
                tma_load_box(dst + tile_at(slab * TMA_BOX_ROWS, panel * TMA_BOX_COLS, HD, true), map,
                             bars + j % WG_BARS, panel * TMA_BOX_COLS, h, r0 + slab * TMA_BOX_ROWS, b);
    } else {
        load_rows(dst, src, r0, R, T, rs, HD, NTH, true);
    }
}
// The bytes of a tile of R rows (what its boxes complete).
#define WG_TILE_BYTES(R, HD) ((uint32_t)(R) * (HD) * 2)
// This thread's wait for group j's tiles, before the block barrier after which they are read.
static __device__ __forceinline__ void wg_wait(uint64_t *bars, int j) {
    if constexpr (WG_TMA) mbar_wait(bars + j % WG_BARS, j / WG_BARS % 2);
    else fence_proxy_async();
}

// The issuer's copies of tiles next.. up to `upto` (and below `end`), in order, each once its
// stages are free (is_free(t)): where `wait`, waiting for that; else leaving the first that is
// not, and those after it, to a later call. For the kernels whose issuer, thread 0, computes too
// (the dk/dv and dq kernels with TMA, the warpgroups apart): after a tile's first products it
// copies without waiting the tiles up to two ahead whose stages both warpgroups have given back,
// and only before it waits for a tile's own copies does it wait, if it must, for that tile's
// stages. Why: waiting there (as the one-pass backward still does, and these kernels did up to
// 2026-11-28), it stalled its warpgroup at every tile until the other had given back the tile
// before (thread 0's wait holds its warp, and the warpgroup's next wgmma waits for every warp), so
// the two ran in step, issuing their products together; apart, one's products can run under the
// other's CUDA-core work. No wait is added: the issuer waits for tile t's stage only where its own
// warpgroup needs tile t, and the other warpgroup gives that stage back at a tile below t, whose
// copies were made (at the latest when the issuer reached that tile). A tile never copied would
// hang its waiters; the emulation stops on that (tried: the waits before a tile taken out). By
// reading the code; timed only together with the other changes since 1772e6e (H200, run 8:
// reports/gpu-h200/README.md).
template <typename Free, typename Copy>
static __device__ __forceinline__ void wg_copy_ahead(int &next, int upto, int end, bool wait, Free is_free,
                                                     Copy copy) {
    if (!wg_issuer()) return;
#pragma unroll 1  // (unrolled, each call site held several copies of the tile's TMA issue)
    for (; next <= upto && next < end; next++) {
        if (!wait && !is_free(next)) return;
        copy(next);
    }
}

// Elements at.. at + n of run `run` of a per-query vector into a wgmma kernel's stage as group j:
// with TMA one box of `map` by the issuer (n its box; the bytes, WG_VEC_BYTES, counted in the
// group's wg_expect), else copy_vec from src (the run's element at) by every thread (all issuers).
#define WG_VEC_BYTES(n) ((uint32_t)(n) * 4)
static __device__ __forceinline__ void wg_fetch_vec(float *dst, const CUtensorMap *map, const float *src,
                                                    uint64_t *bars, int j, int at, int run, const int n,
                                                    const int NTH) {
    if constexpr (WG_TMA) tma_load_vec(dst, map, bars + j % WG_BARS, at, run);
    else copy_vec(dst, src, n, NTH);
}

// One step of the forward's and dq's key ring: waits for key tile k0 (in stage `stage`; at the
// first step also for the query tile), issues the next tile's copies into the other stage once every
// warp is done with it, and returns tile k0's stage and whether the block's queries see all of it.
// Every thread calls it once per tile, in order (it holds the tile's one barrier). The mma.sync
// kernels' (pitched tiles; the wgmma kernels keep rings of their own).
typedef struct {
    const __nv_bfloat16 *K, *V;
    bool full;
} key_stage;
static __device__ __forceinline__ key_stage key_ring_step(__nv_bfloat16 *sK, __nv_bfloat16 *sV, const int32_t *sBound,
                                                          const gm_cuda_act *__restrict__ k,
                                                          const gm_cuda_act *__restrict__ v, int q0, int qlast,
                                                          int k0, int stage, int T, size_t rs, const int HD,
                                                          const int NTH) {
    const int P = PITCH(HD), next = stage ^ 1;
    cp_async_wait_all();  // this thread's copies of tile k0 (and at first of the query tile) have landed
    __syncthreads();  // everyone's have; tile k0 - KEY_TILE (stage ^ 1) is consumed
    if (k0 + KEY_TILE <= qlast)
        load_key_tile(sK + next * KEY_TILE * P, sV + next * KEY_TILE * P, k, v, k0 + KEY_TILE, T, rs, HD, NTH);
    return {sK + stage * KEY_TILE * P, sV + stage * KEY_TILE * P,
            tile_full(q0, k0, KEY_TILE, sBound[qlast - q0] <= k0)};
}

#endif
