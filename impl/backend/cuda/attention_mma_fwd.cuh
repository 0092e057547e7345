// The tensor-core attention's forward (attention_mma.cu; FlashAttention-2's algorithm): 128 query
// rows of one (batch row, head) walk key tiles of 64 with an online softmax
// (attention_mma_softmax.cuh) and write out and lse (B, NH, T). mma.sync: a block of 8 warps of 16
// rows, or of 4 warps of 32 (M = 2: each K and V fragment feeds two MMAs, FlashAttention-2's
// shape). wgmma: two warpgroups of 64 rows over work items (a block each, or persistent blocks),
// with FlashAttention-3's intra-warpgroup overlap, at head_dim 128 a producer warp, and as a form
// of its own FlashAttention-3's pingpong.
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_FWD_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_FWD_CUH

#include "backend/cuda/attention_mma_mask.cuh"
#include "backend/cuda/attention_mma_products.cuh"
#include "backend/cuda/attention_mma_ring.cuh"
#include "backend/cuda/attention_mma_shapes.cuh"
#include "backend/cuda/attention_mma_softmax.cuh"
#include "backend/cuda/attention_mma_tiles.cuh"

// The forward's end for a warp's M m-tiles (rows wrow.. of the block's, from q0): out = o / l and
// lse = (reference + log2 l) ln 2 of every row inside T.
template <int M>
static __device__ __forceinline__ void store_out(gm_cuda_act *__restrict__ out, float *__restrict__ lse,
                                                 const float (*o)[4], const float *mrow, const float *lrow, int b,
                                                 int h, int q0, int wrow, int T, int NH, size_t head, const int HD) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const size_t rs = (size_t)NH * HD;
#pragma unroll
    for (int mt = 0; mt < M; mt++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int mr = 2 * mt + r;
            float l = lrow[mr];
            l += __shfl_xor_sync(GM_FULL_MASK, l, 1);
            l += __shfl_xor_sync(GM_FULL_MASK, l, 2);
            const int i = q0 + wrow + 16 * mt + g + 8 * r;
            if (i >= T) continue;
            // l >= 1 (about: the row's largest term is 2 to the power of its maximum less its reference,
            // at least 0): key i is always visible to query i.
            const float inv = 1.0f / l;
            const float(*om)[4] = o + mt * HD / 8;
            gm_cuda_act *orow = out + head + (size_t)i * rs + 2 * t;
#pragma unroll
            for (int n = 0; n < HD / 8; n++)
                put_pair(orow + n * 8, GM_GRAD_SET, om[n][2 * r] * inv, om[n][2 * r + 1] * inv);
            if (t == 0) lse[((size_t)b * NH + h) * T + i] = (mrow[mr] + log2f(l)) * LN2;
        }
}

// mma.sync: each warp owns M m-tiles (16 M query rows): M = 2 loads each K and V fragment once for
// two MMAs (FlashAttention-2's 4 warps of 32 rows) and fits two blocks in an SM at head_dim 128;
// M = 1 is 8 warps of 16 rows, also two blocks an SM at head_dim 128 (128 registers, no spill
// since load_rows' chunks step by constant rows): 16 warps an SM, where run 7's profile found
// every kernel short of eligible warps with 8 (one block an SM for this kernel until then; not yet
// timed).
// Key tiles stream through a 2-stage ring, one barrier per tile: at the top of a tile each thread
// waits for its own copies of that tile (cp.async with a bf16 element; an fp32 one was stored
// synchronously), and the barrier makes every thread's copies visible and tells that every warp is
// done with the previous tile, whose stage the copies of the next tile then overwrite while this
// one is computed (with a bf16 element; an fp32 one is loaded and converted there, before the math).
template <int M>
static __device__ __forceinline__ void fwd_mma_body(gm_cuda_act *__restrict__ out, float *__restrict__ lse,
                                                    const gm_cuda_act *__restrict__ q,
                                                    const gm_cuda_act *__restrict__ k,
                                                    const gm_cuda_act *__restrict__ v, int T, int NH,
                                                    float scale_log2, gm_attn_mask m,
                                                    const int32_t *__restrict__ bounds, const int HD) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int P = PITCH(HD), NTH = NTHREADS(M);
    // sK, sV: 2 stages each of KEY_TILE rows
    __nv_bfloat16 *sQ = (__nv_bfloat16 *)smem, *sK = sQ + BLOCK_ROWS * P, *sV = sK + 2 * KEY_TILE * P;
    int32_t *sBound = (int32_t *)(sV + 2 * KEY_TILE * P);
    const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x / 32;
    const int q0 = (int)(gridDim.x - 1 - blockIdx.x) * BLOCK_ROWS;  // longest rows first (causal work grows with q)
    const int qlast = min(q0 + BLOCK_ROWS, T) - 1, wrow = warp * 16 * M;  // this warp's first row in the block
    const size_t rs = (size_t)NH * HD, head = ((size_t)b * T * NH + h) * HD;  // token stride; (b, 0, h, 0)
    const int32_t *lo = bounds_of(bounds, T, gridDim.z, b, true);

    load_rows(sQ, q + head, q0, BLOCK_ROWS, T, rs, HD, NTH);
    const int kbeg = token_bound(&m, lo, q0, T, true) / KEY_TILE * KEY_TILE;  // <= q0: at least one tile
    load_key_tile(sK, sV, k + head, v + head, kbeg, T, rs, HD, NTH);
    row_bounds(sBound, &m, lo, q0, T, true);

    // o[mt HD/8 + n]: m-tile mt's output; mrow, lrow[2 mt + r]: its rows g (r = 0) and g + 8
    float o[M * MAX_HD / 8][4], mrow[2 * M], lrow[2 * M];
    zero(o, M * HD / 8);
#pragma unroll
    for (int r = 0; r < 2 * M; r++) mrow[r] = -INFINITY, lrow[r] = 0.0f;

    for (int k0 = kbeg, stage = 0; k0 <= qlast; k0 += KEY_TILE, stage ^= 1) {
        const key_stage ks =
            key_ring_step(sK, sV, sBound, k + head, v + head, q0, qlast, k0, stage, T, rs, HD, NTH);
        float s[M * KEY_TILE / 8][4];  // s[mt KEY_TILE/8 + n]
        zero(s, M * KEY_TILE / 8);
        mma_abt(s, sQ + wrow * P, ks.K, P, KEY_TILE / 8, HD / 16, M);
#pragma unroll
        for (int mt = 0; mt < M; mt++)
            mask_tile(s + mt * KEY_TILE / 8, KEY_TILE / 8, ks.full, T, q0 + wrow + 16 * mt, k0, sBound + wrow + 16 * mt,
                      true);
#pragma unroll
        for (int mt = 0; mt < M; mt++) {
            float corr[2];
            softmax_tile(s + mt * KEY_TILE / 8, scale_log2, mrow + 2 * mt, lrow + 2 * mt, corr, o + mt * HD / 8, HD);
        }
        mma_xb(o, s, ks.V, P, HD / 8, KEY_TILE / 16, M);
    }
    store_out<M>(out, lse, o, mrow, lrow, b, h, q0, wrow, T, NH, head, HD);
}

// The wgmma forward (WG: each warpgroup of 4 warps one m64 tile of a work item's 128 queries, Q,
// K, V swizzled), overlapped within a warpgroup as FlashAttention-3's mainloop is: tile j's mask
// and softmax run on the CUDA cores while the tensor cores compute P_{j-1} V_{j-1}.
// Work items (fwd_item): 128 query rows of a (batch row, head), the longest rows first. A block
// takes one item of each round of gridDim.x (fwd_item_of): one item each with a grid of every item
// (the wgmma form), or persistent blocks, one or two an SM, that walk many (wgmma-persist: the copies
// of an item's first tiles then run under the previous item's last tiles and its stores, where a
// block of its own starts by waiting for them; with the records' documents an item has ~8 key
// tiles, so that wait and the block's start weigh: by reading the code; on an H200, run 8,
// 1.00-1.07x the wgmma forward's speed under the window alone, 0.75-0.97x with documents).
// The block's tiles, item after item, are one sequence of tile groups g (K_g and V_g; an item's
// first group also its Q, into FWD_Q_STAGES (3) query stages), copied two groups ahead (across
// items too: the issuer's cursor, fwd_cursor) in rings of FWD_K_STAGES (3) and FWD_V_STAGES (4:
// V_{g-1} is read through tile g) stages. Per tile j of an item (group g):
//   wait for group g (group g + 1 may be in flight: wg_wait); with the threads' copies (fp32) a
//   block barrier, after which every warpgroup is done with the stages group g + 2 goes to;
//   issue S_j = Q K_j^T, then (j > 0) P_{j-1} V_{j-1} (P_{j-1} in the A fragments pa); wait for S_j
//   only (wgmma's groups complete in order) and give K_j back;
//   under P_{j-1} V_{j-1}, copy group g + 2: with TMA at head_dim 64 thread 0, once every warp has
//   given its stages back (K_{g-1} after S_{g-1}, V_{g-2} after P_{g-2} V_{g-2}, and for an item's
//   first group the query stage of the item three back after its last product: wg_reuse), with
//   the fp32 element every thread (at head_dim 128 with TMA the producer warp copies each group
//   after the same releases instead, FWD_PRODUCER);
//   mask S_j and take its softmax (new max, sums, P_j), touching no register of the product in
//   flight; wait for it and give V_{j-1} back; rescale o to the new max; pack P_j into pa.
// After the item's last tile, P V of it, V and Q given back, and the item's out and lse stored.
// o meets every operation of the mma forward in the same order (o rescaled, then P V added, tile
// by tile), so the results are the same arithmetic. Why three query stages: with two, an item of
// one tile would have the issuer copy the Q of the item after next into the stage its own warp is
// still reading, and wait for its own release. (With three, the wait for a query stage's release
// is implied by the K stage's: an item's first group reuses the K stage of the group three back,
// given back after the S product of that group, at or after the last S of the item three back,
// the last read of its Q; a producer skipping it computes the same, tried. The producer warp
// waits for no release of its own, so two would do there: 32 KB less, not yet needed.)
#define FWD_Q_STAGES 3
// With TMA, where it runs one block an SM (head_dim 128: its shared memory), the wgmma forward's
// block has a producer warp of its own (FlashAttention-3's warp specialization, one warp where it
// has a warpgroup): warp 8, after the two warpgroups, whose lane 0 walks the issuer's cursor over
// all of the block's groups, waiting for each stage's release itself; the consumers only wait for
// their tiles. Why: an issuer among the consumers (thread 0) stalls its warpgroup's next product
// while it waits for the other warpgroup's releases or reads an item's first keys (a global load,
// with documents), and lets the warpgroups drift at most a tile apart; the producer lets them
// drift as far as the stages allow (ptxas: 146 registers, where the consumers carrying the cursor
// had 164). With two blocks an SM (head_dim 64: 120 registers under ptxas's cap of 128 with 256
// threads) a ninth warp caps them at 96 (a sub-partition holding five warps) and they spill:
// thread 0 issues there, as without TMA every thread copies. The dq kernel keeps thread 0 too: a
// ninth warp, tried, left its consumers 166 of their 170 registers and 32 bytes spilled. By
// reading the code; timed only together with the other changes since 1772e6e (H200, run 8:
// reports/gpu-h200/README.md).
#define FWD_MIN_BLOCKS(WG, HD) ((WG) && (HD) == 128 ? 1 : 2)
#define FWD_PRODUCER(WG, HD) ((WG) && WG_TMA && FWD_MIN_BLOCKS(WG, HD) == 1)
#define FWD_THREADS(M, WG, HD) (NTHREADS(M) + (FWD_PRODUCER(WG, HD) ? 32 : 0))
struct fwd_item {
    int b, h, q0, qlast, kbeg, ntiles;  // rows q0..qlast of head h, batch row b; key tiles from kbeg
};
// Item `it` of the B NH ceil(T / 128): the rows of block nqb - 1 - it / (B NH) (longest first:
// causal work grows with q) of every head and batch row, then the next block's.
static __device__ __forceinline__ fwd_item fwd_item_at(int it, const gm_attn_mask *m, const int32_t *bounds, int B,
                                                       int T, int NH) {
    const int nqb = (T + BLOCK_ROWS - 1) / BLOCK_ROWS, bh = it % (B * NH);
    fwd_item x;
    x.b = bh / NH, x.h = bh % NH, x.q0 = (nqb - 1 - it / (B * NH)) * BLOCK_ROWS;
    x.qlast = min(x.q0 + BLOCK_ROWS, T) - 1;
    x.kbeg = token_bound(m, bounds_of(bounds, T, B, x.b, true), x.q0, T, true) / KEY_TILE * KEY_TILE;  // <= q0
    x.ntiles = (x.qlast - x.kbeg) / KEY_TILE + 1;  // at least one
    return x;
}
struct fwd_wg_state {
    __nv_bfloat16 *sQ, *sK, *sV;  // FWD_Q_STAGES, FWD_K_STAGES, FWD_V_STAGES stages
    const gm_cuda_act *q, *k, *v;
    const attn_tmaps *tm;
    uint64_t *bars, *emptyQ, *emptyK, *emptyV;  // the TMA barrier ring; the stages' empty barriers
    const int32_t *bounds;
    gm_attn_mask m;
    int B, T, NH, items;
    float scale_log2;
    bool turns;  // the warpgroups take turns to issue their products (wg_turn_wait)
};
// The block's item of round n: items n gridDim.x .. (n + 1) gridDim.x - 1, taken in blockIdx.x
// order in even rounds and in reverse in odd ones (a snake). Why: the items come longest first, so
// in every round the block with the lowest index would take the longest: plain causal at T 65536,
// 6 heads, 132 blocks, by a count of key tiles (not a measurement), the busiest block 4.1% above
// the mean taking them in order, 0.16% in a snake. Past the last item: >= B NH ceil(T / 128), in
// this round and every later one (the launcher keeps the items and a round below 2^31).
static __device__ __forceinline__ int fwd_item_of(int n) {
    return n * (int)gridDim.x + (n % 2 ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x);
}
// Where the issuer's copies stand: group g, tile j of the block's item n (fwd_item x); live while
// the block has groups left.
struct fwd_cursor {
    int n, j, g;
    bool live;
    fwd_item x;
};
// The cursor at the first tile of the block's item c.n (spent past the last item).
static __device__ __forceinline__ void fwd_cursor_enter(const fwd_wg_state &f, fwd_cursor &c) {
    const int it = fwd_item_of(c.n);
    c.j = 0, c.live = it < f.items;
    if (c.live) c.x = fwd_item_at(it, &f.m, f.bounds, f.B, f.T, f.NH);
}
static __device__ __forceinline__ fwd_cursor fwd_cursor_start(const fwd_wg_state &f) {
    fwd_cursor c;
    c.n = c.g = 0;
    fwd_cursor_enter(f, c);
    return c;
}
// Group c.g (nothing once the cursor is spent) into its stages, then the cursor to the next group;
// by the issuer (the producer warp's lane 0, or wg_issuer's threads).
static __device__ __forceinline__ void fwd_wg_copy(const fwd_wg_state &f, fwd_cursor &c, const int HD) {
    if (!c.live) return;
    const int P = TILE_PITCH(HD, true), NTH = NTHREADS(1), g = c.g, k0 = c.x.kbeg + c.j * KEY_TILE;
    const size_t rs = (size_t)f.NH * HD, head = ((size_t)c.x.b * f.T * f.NH + c.x.h) * HD;
    wg_reuse(f.emptyK, g % FWD_K_STAGES, g / FWD_K_STAGES), wg_reuse(f.emptyV, g % FWD_V_STAGES, g / FWD_V_STAGES);
    if (c.j == 0) wg_reuse(f.emptyQ, c.n % FWD_Q_STAGES, c.n / FWD_Q_STAGES);
    wg_expect(f.bars, g, 2 * WG_TILE_BYTES(KEY_TILE, HD) + (c.j == 0 ? WG_TILE_BYTES(BLOCK_ROWS, HD) : 0));
    if (c.j == 0)
        wg_fetch(f.sQ + c.n % FWD_Q_STAGES * BLOCK_ROWS * P, &f.tm->q, f.q + head, f.bars, g, c.x.b, c.x.h, c.x.q0,
                 BLOCK_ROWS, f.T, rs, HD, NTH);
    wg_fetch(f.sK + g % FWD_K_STAGES * KEY_TILE * P, &f.tm->k, f.k + head, f.bars, g, c.x.b, c.x.h, k0, KEY_TILE, f.T,
             rs, HD, NTH);
    wg_fetch(f.sV + g % FWD_V_STAGES * KEY_TILE * P, &f.tm->v, f.v + head, f.bars, g, c.x.b, c.x.h, k0, KEY_TILE, f.T,
             rs, HD, NTH);
    c.g++;
    if (++c.j < c.x.ntiles) return;
    c.n++;
    fwd_cursor_enter(f, c);
}
// FlashAttention-3's pingpong (GM_CUDA_ATTN_WGMMA_PINGPONG): warpgroup wg issues a tile's products
// only in its turn, which the other warpgroup passes it once it has issued its own, so that the
// tensor cores take one warpgroup's products whole while the other makes its softmax, where
// without turns the two may issue at once and both wait for products that share the tensor cores.
// Named barrier WG_TURN_BAR + wg is wg's turn: its 128 threads wait there, the other's 128 arrive.
// Warpgroup 1 passes warpgroup 0 the first turn and warpgroup 0 takes the one left after the last
// tile, so that each barrier completes as often as it is arrived at (both walk the same tiles).
#define WG_TURN_BAR 1
static __device__ __forceinline__ void wg_turn_wait(int wg) {
    if (wg == 0) named_bar_sync<WG_TURN_BAR, 256>();
    else named_bar_sync<WG_TURN_BAR + 1, 256>();
}
static __device__ __forceinline__ void wg_turn_pass(int wg) {
    if (wg == 0) named_bar_arrive<WG_TURN_BAR + 1, 256>();
    else named_bar_arrive<WG_TURN_BAR, 256>();
}
// The key tiles [jlo, jhi) of an item that warpgroup wg's 64 rows (from q0 + 64 wg) see (an empty
// span where they are all past T), and tile_full's rows: from full_row0 (the warpgroup's first,
// or the item's where some of its rows are past T) to its last row inside T, whose first key is
// last_first. Why the item's first row there: rows past T are masked wherever the item's tiles
// are not all seen (mask_tile), and their scores weigh in the rescale a warp's rows take together
// (softmax_tile), so for the forms to stay bitwise alike they are masked exactly as in the mma
// forward's blocks of 128. Why a span a warpgroup, where the item's tiles are those its 128 rows
// see: the first warpgroup's rows end 64 before the item's diagonal tile, with documents the
// second's often start in a later document than the first's, and the warpgroups run apart, so a
// tile one of them passes is time saved (attention_mma_mask.cuh's count), not a wait at a block
// barrier.
struct fwd_wg_span {
    int jlo, jhi, full_row0, last_first;
};
// FWD_TRAIL: whether a span may end before the item's last tile. Not where thread 0 issues the
// TMA copies (head_dim 64): a pass after the span copies (fwd_wg_pass), and with that branch on
// thread 0 between the items' spans ptxas took the tile loop off the uniform datapath (737 -> 806
// instructions, cuobjdump -sass); the first warpgroup computes its last, fully masked, tile there.
#define FWD_TRAIL(HD) (FWD_PRODUCER(true, HD) || !WG_TMA)
static __device__ __forceinline__ fwd_wg_span fwd_wg_span_of(const fwd_item &x, const gm_attn_mask *m,
                                                             const int32_t *lo, int wg, int T, const int HD) {
    fwd_wg_span sp;
    const int r0 = x.q0 + 64 * wg, rlast = min(r0 + 63, x.qlast);
    // A valid row sees its own key, so jlo < jhi; the first row's first key is the warpgroup's
    // earliest (bounds are nondecreasing along the rows), at or after x.kbeg. Rows all past T:
    // every tile passed before the span (the second warpgroup's, which holds no issuer).
    const bool valid = r0 <= rlast;
    sp.jlo = valid ? token_bound(m, lo, r0, T, true) / KEY_TILE - x.kbeg / KEY_TILE : x.ntiles;
    sp.jhi = valid && FWD_TRAIL(HD) ? (rlast - x.kbeg) / KEY_TILE + 1 : x.ntiles;
    sp.full_row0 = r0 + 63 <= x.qlast ? r0 : x.q0;
    sp.last_first = valid ? token_bound(m, lo, rlast, T, true) : 0;
    return sp;
}
// A tile (group g) outside warpgroup wg's span: waited for, as a computed one is, before its
// stages are given back (so that a warp never gives a stage back for its next use before every
// warp has for this one), its turn taken where the warpgroups take turns, and, where `issue`, the
// issuer's copy made; no product. The tiles before a span need no issue with TMA: the issuer,
// thread 0, is warpgroup 0's, whose span starts at the item's first tile (its first row's); and
// with the issuer's branch in their loop, ptxas took the span's loop after it off the uniform
// datapath (its descriptors per-thread, R2UR before each wgmma: the dq kernel's loop 496 -> 605
// instructions, cuobjdump -sass).
static __device__ __forceinline__ void fwd_wg_pass(const fwd_wg_state &f, fwd_cursor &ic, int g, int wg, bool issue,
                                                   const int HD) {
    wg_wait(f.bars, g);
    if constexpr (!WG_TMA) __syncthreads();  // the block's one barrier a tile, as fwd_wg_tile's
    if (f.turns) wg_turn_wait(wg), wg_turn_pass(wg);
    wg_release(f.emptyK, g % FWD_K_STAGES), wg_release(f.emptyV, g % FWD_V_STAGES);
    if (issue && !FWD_PRODUCER(true, HD)) {
        if (wg_issuer()) fwd_wg_copy(f, ic, HD);
        if constexpr (WG_TMA) __syncwarp();
    }
}
// Tile j (group g) of item x, inside warpgroup wg's span sp, by the warpgroup: sQw its 64 rows of
// the queries; sBound the warp's rows' first keys (mask_tile); lag: a tile of the span before
// this one, whose P V is issued here.
static __device__ __forceinline__ void fwd_wg_tile(const fwd_wg_state &f, fwd_cursor &ic, const fwd_item &x, int j,
                                                   int g, bool lag, int wg, const fwd_wg_span &sp,
                                                   const __nv_bfloat16 *sQw, const int32_t *sBound, float (*o)[4],
                                                   uint32_t (*pa)[4], float *mrow, float *lrow, const int HD) {
    const int P = TILE_PITCH(HD, true), k0 = x.kbeg + j * KEY_TILE, wrow = threadIdx.x / 32 * 16;
    wg_wait(f.bars, g);
    if constexpr (!WG_TMA) __syncthreads();  // the threads' copies: everyone's stored, the stages free
    float s[KEY_TILE / 8][4];
    if (f.turns) wg_turn_wait(wg);
    wg_abt_issue(s, sQw, f.sK + g % FWD_K_STAGES * KEY_TILE * P, HD);
    // (the turn passed inside each branch: passed after them, behind its own `if (j > 0)`, ptxas
    // serialized the kernel's wgmma, C7514)
    if (lag) {
        wg_xb_issue(o, pa, f.sV + (g - 1) % FWD_V_STAGES * KEY_TILE * P, HD);
        if (f.turns) wg_turn_pass(wg);
        wgmma_wait<1>();  // S_j; P_{j-1} V_{j-1} runs on
    } else {
        if (f.turns) wg_turn_pass(wg);
        wgmma_wait<0>();
    }
    wg_release(f.emptyK, g % FWD_K_STAGES);
    // Without the producer warp: group g + 2 (into K_{g-1}'s and V_{g-2}'s stages, given back in
    // tile j - 1), under P_{j-1} V_{j-1}, so that the issuer's waits and copies do not hold up the
    // warpgroup's products, as in the dq kernel.
    if (!FWD_PRODUCER(true, HD)) {
        if (wg_issuer()) fwd_wg_copy(f, ic, HD);
        if constexpr (WG_TMA) __syncwarp();  // warp 0 whole again after its issuer's waits, for wgmma's wait
    }
    wgmma_hold(&s[0][0], KEY_TILE / 2);
    const bool full = tile_full(sp.full_row0, k0, KEY_TILE, sp.last_first <= k0);
    mask_tile(s, KEY_TILE / 8, full, f.T, x.q0 + wrow, k0, sBound + wrow, true);
    float corr[2];
    const bool moved = softmax_tile(s, f.scale_log2, mrow, lrow, corr);
    wgmma_wait<0>();  // P_{j-1} V_{j-1}: o and pa are the threads' again
    if (lag) wg_release(f.emptyV, (g - 1) % FWD_V_STAGES);
    wgmma_hold(&o[0][0], HD / 2);
    wgmma_hold_a(&pa[0][0], KEY_TILE / 4);
    if (moved) rescale_row(o, 0, corr[0], HD), rescale_row(o, 1, corr[1], HD);
    pack_a(pa, s);
}
static __device__ __forceinline__ void fwd_wg_body(gm_cuda_act *__restrict__ out, float *__restrict__ lse,
                                                   const gm_cuda_act *__restrict__ q,
                                                   const gm_cuda_act *__restrict__ k,
                                                   const gm_cuda_act *__restrict__ v, int B, int T, int NH,
                                                   float scale_log2, gm_attn_mask m,
                                                   const int32_t *__restrict__ bounds, const int HD,
                                                   const attn_tmaps *tm, bool turns) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int P = TILE_PITCH(HD, true);
    fwd_wg_state f;
    f.sQ = (__nv_bfloat16 *)swizzle_base(smem), f.sK = f.sQ + FWD_Q_STAGES * BLOCK_ROWS * P;
    f.sV = f.sK + FWD_K_STAGES * KEY_TILE * P;
    f.bars = (uint64_t *)(f.sV + FWD_V_STAGES * KEY_TILE * P);
    f.emptyQ = f.bars + WG_BARS, f.emptyK = f.emptyQ + FWD_Q_STAGES, f.emptyV = f.emptyK + FWD_K_STAGES;
    int32_t *sBound = (int32_t *)(f.bars + WG_MBARS);  // each warp's rows' first keys, written by the warp
    f.q = q, f.k = k, f.v = v, f.tm = tm, f.bounds = bounds, f.m = m;
    f.B = B, f.T = T, f.NH = NH, f.items = B * NH * ((T + BLOCK_ROWS - 1) / BLOCK_ROWS), f.scale_log2 = scale_log2;
    f.turns = turns;
    const int lane = threadIdx.x % 32, wrow = threadIdx.x / 32 * 16, wg = warpgroup();

    wg_bars_init(f.bars);
    // The issuer's cursor, made by the issuer alone (its first item's geometry is a global load
    // with documents): the producer warp's lane 0, or wg_issuer's threads.
    fwd_cursor ic = {};
    if (!FWD_PRODUCER(true, HD) && wg_issuer())
        ic = fwd_cursor_start(f), fwd_wg_copy(f, ic, HD), fwd_wg_copy(f, ic, HD);
    __syncthreads();  // the barriers initialized before anyone waits on one (or the producer arms one)
    if (FWD_PRODUCER(true, HD) && warp_index() == NTHREADS(1) / 32) {  // the producer warp (warp_index: why)
        if (threadIdx.x == NTHREADS(1))
            for (ic = fwd_cursor_start(f); ic.live;) fwd_wg_copy(f, ic, HD);
        return;
    }
    // An item's geometry and first keys (global loads, with documents): this lane's row's (lanes
    // 0-15: the warp's 16 rows) and the warpgroup's span. Read for the next item under the current
    // one's last product and stores, so that their latency is not the next item's.
    struct item_rows {
        fwd_item x;
        fwd_wg_span sp;
        int row_first;
    };
    const auto rows_of = [&](int it) {
        item_rows r;
        r.x = fwd_item_at(it, &m, bounds, B, T, NH);
        const int32_t *lo = bounds_of(bounds, T, B, r.x.b, true);
        const int row = r.x.q0 + wrow + lane;
        r.row_first = lane < 16 && row < T ? token_bound(&m, lo, row, T, true) : 0;
        r.sp = fwd_wg_span_of(r.x, &m, lo, wg, T, HD);
        return r;
    };
    int g = 0;  // the group of the block's next tile
    if (turns && wg == 1) wg_turn_pass(wg);  // warpgroup 0's first turn
    item_rows cur = rows_of(min(fwd_item_of(0), f.items - 1));  // (a block past the items: never made)
    for (int n = 0, it = fwd_item_of(0); it < f.items; it = fwd_item_of(++n)) {
        const fwd_item x = cur.x;
        const fwd_wg_span sp = cur.sp;
        // The warp's 16 rows' first keys (mask_tile reads a warp's own rows only: no block barrier),
        // written after the warp's last read of the previous item's.
        if (lane < 16) sBound[wrow + lane] = cur.row_first;
        __syncwarp();
        const __nv_bfloat16 *sQw = f.sQ + n % FWD_Q_STAGES * BLOCK_ROWS * P + wg * 64 * HD;
        float o[MAX_HD / 8][4], mrow[2] = {-INFINITY, -INFINITY}, lrow[2] = {0.0f, 0.0f};
        uint32_t pa[KEY_TILE / 16][4];
        zero(o, HD / 8);
        int j = 0;
        for (; j < sp.jlo; j++, g++) fwd_wg_pass(f, ic, g, wg, !WG_TMA, HD);
        for (; j < sp.jhi; j++, g++)
            fwd_wg_tile(f, ic, x, j, g, j > sp.jlo, wg, sp, sQw, sBound, o, pa, mrow, lrow, HD);
        const bool spanned = sp.jhi > sp.jlo;
        if (spanned) wg_xb_issue(o, pa, f.sV + (g - 1) % FWD_V_STAGES * KEY_TILE * P, HD);  // P V of its last tile
        cur = rows_of(min(fwd_item_of(n + 1), f.items - 1));  // (past the last item: never used)
        wgmma_wait<0>();
        if (spanned) wg_release(f.emptyV, (g - 1) % FWD_V_STAGES);
        // The tiles past the span after its last product's wait: with the threads' copies (fp32),
        // each pass's copies may overwrite a V stage two tiles back.
        if (FWD_TRAIL(HD))
            for (; j < x.ntiles; j++, g++) fwd_wg_pass(f, ic, g, wg, true, HD);
        wg_release(f.emptyQ, n % FWD_Q_STAGES);
        wgmma_hold(&o[0][0], HD / 2);
        wgmma_hold_a(&pa[0][0], KEY_TILE / 4);
        store_out<1>(out, lse, o, mrow, lrow, x.b, x.h, x.q0, wrow, T, NH, ((size_t)x.b * T * NH + x.h) * HD, HD);
    }
    if (turns && wg == 0) wg_turn_wait(wg);  // the turn warpgroup 1 passed after its last tile
}

// The forward of either kind (the kernels' and the host emulation's entry): mma.sync on a grid
// (ceil(T / 128), NH, B), wgmma on a grid of its items or fewer (persistent blocks), its
// warpgroups taking turns where `turns` (wg_turn_wait).
template <int M, bool WG>
static __device__ __forceinline__ void fwd_body(gm_cuda_act *__restrict__ out, float *__restrict__ lse,
                                                const gm_cuda_act *__restrict__ q, const gm_cuda_act *__restrict__ k,
                                                const gm_cuda_act *__restrict__ v, int B, int T, int NH,
                                                float scale_log2, gm_attn_mask m, const int32_t *__restrict__ bounds,
                                                const int HD, const attn_tmaps *tm, bool turns) {
    static_assert(!WG || M == 1, "wgmma: a warp's 16 rows");
    if constexpr (WG) fwd_wg_body(out, lse, q, k, v, B, T, NH, scale_log2, m, bounds, HD, tm, turns);
    else fwd_mma_body<M>(out, lse, q, k, v, T, NH, scale_log2, m, bounds, HD), (void)tm, (void)B, (void)turns;
}

#endif
