// The tensor-core attention's dk/dv kernel (attention_mma.cu; the backward's second): grid
// (ceil(T / 128), NH, B), BWD_THREADS (256) threads, a warp's 16 keys; query tiles in a ring as the
// forward's key tiles. WG: the four products by wgmma, a warpgroup's 64 keys as the A side (S^T =
// K Q^T and dP^T = V dO^T by wg_abt_issue over 64-query tiles, dV += P^T dO and dK += dS^T Q by
// wg_xb_issue, dO and Q read transposed; with TMA the warpgroups run apart, a query stage given
// back by each warp after its dK product, as the forward's key stages). DQ (with WG): the one-pass
// backward, grid (ceil(T / 128) NH B).
//
// One pass (FlashAttention-2's, 5 products a pair where the dq and dk/dv kernels take 7): the dk/dv
// kernel also computes, for each query tile, this key block's part of the tile's dQ = dS K, and the
// parts are summed over the key blocks that see the tile in a fixed order, highest key block first:
// a semaphore a tile (ordered_sum.cuh), the first part stored in fp32 partial sums, the next ones
// added there by L2's reductions, the last (the lowest key block) reading the sum, adding its own
// and writing dq. Deterministic, where FlashAttention-2 adds by float atomics in whatever order they
// land. Why this order: a block walks its query tiles upward from its diagonal and block kb + 1
// starts two tiles above block kb, so at the tile where kb waits for kb + 1, kb + 1 had two tiles
// less to do, and started earlier: blocks take their (batch, head, key block) from a work counter,
// highest key block first, so a block waits only for blocks already running. (The other order,
// lowest key block first, made each block wait for the one below it to reach its diagonal: a chain
// as long as the window.) A model of the schedule (132 SMs, one block each, every tile one time
// unit; by hand, not a measurement) has no block waiting, with the window or plain causal; its
// makespan is the work over the SMs divided by 0.98 (window 14, T 65536), 0.97 (window 7), 0.96
// (plain causal), 0.83 (plain causal, T 16384): the longest key blocks, the lowest, start last.
// The price: 64 HD fp32 partial sums a query tile in global memory (B NH T HD 4 bytes; reads and
// writes that stay in L2 while the blocks keep together) and two barriers a tile. Its dk and dv are
// bitwise the wgmma dk/dv kernel's, its dq the same sum in another order (on an H200, runs 8 and
// 9: its tests pass, racecheck clean; 0.83-1.02x the two kernels' speed, so not chosen).
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_DKDV_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_DKDV_CUH

#include "backend/cuda/attention_mma_mask.cuh"
#include "backend/cuda/attention_mma_products.cuh"
#include "backend/cuda/attention_mma_ring.cuh"
#include "backend/cuda/attention_mma_shapes.cuh"
#include "backend/cuda/attention_mma_softmax.cuh"
#include "backend/cuda/attention_mma_tiles.cuh"
#include "backend/cuda/ordered_sum.cuh"

// The one-pass backward's per-call state: the partial sums of dq, (B, NH, ceil(T / 64)) query
// tiles of 64 x HD fp32 each in the threads' fragment order (dq_part_add), and `order`: [0] the
// work counter, [1 + (b NH + h) ceil(T / 64) + tile] each tile's semaphore (zeroed before the
// launch); dq written by each tile's last part.
typedef struct {
    gm_cuda_act *dq;
    float4 *part;
    int32_t *order;
} dq_sum;
// Its query tiles of a head of T tokens (QUERY_TILE with wgmma: 64, the M of its products), and the
// float4s of partial sums a tile holds (64 x HD fp32): the kernel's indexing and the scratch its
// launcher (and the emulation) sizes.
static __host__ __device__ __forceinline__ int dq_sum_tiles(int T) {
    return (T + QUERY_TILE(0, true) - 1) / QUERY_TILE(0, true);
}
static __host__ __device__ __forceinline__ int dq_sum_tile_float4s(int HD) { return QUERY_TILE(0, true) * HD / 4; }

// dS^T (the warp's 16 keys x 64 queries in st, keys key0.. of the block's 128) as bf16 into sDS,
// the block's 128 keys x 64 queries (sw128: a panel's row a key), for the dQ product to read
// transposed (the same rounding as its packing as dK's A operand). A phase of 4-byte stores covers
// 8 rows at 8 different chunks (n ^ row): conflict-free.
static __device__ __forceinline__ void store_ds_t(__nv_bfloat16 *sDS, const float (*st)[4], int key0) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
        for (int r = 0; r < 2; r++)
            *(uint32_t *)(sDS + tile_at(key0 + g + 8 * r, n * 8 + 2 * t, 64, true)) =
                pack_bf16(st[n][2 * r], st[n][2 * r + 1]);
}

// dqp (64 queries x HD / 2, warpgroup wg's columns HD / 2 wg..; this thread's HD / 4 in wgmma's
// accumulator order) = dS K over the block's 128 keys: A = dS^T from sDS and B = the block's K
// tile, both read transposed (MN-major, sw128: SBO the next 8 keys, 1024 bytes on; LBO the next
// 64 columns, unused by A's 64 queries); keys 16 ks.. two atoms on (in K, the next slab after 64);
// B from column HD / 2 wg (a panel on at head_dim 128, 64 bytes into the row at 64). 8 wgmma
// m64n(HD/2)k16, issued and committed as one group (dqp the wgmma's until a wait completes it).
// At head_dim 64 this B (N 32, starting mid-row) is no canonical layout CUTLASS lists (its
// swizzled MN-major atoms are 64 wide): it reads the stored layout if the hardware swizzles the
// address as the PTX ISA's figures show, as the K-major reads 32 bytes into a row rely on too; the
// GPU test one_pass_backward at head_dim 64 is the check (it passes on an H200: runs 8 and 9).
static __device__ __forceinline__ void wg_dq_issue(float *dqp, const __nv_bfloat16 *sDS, const __nv_bfloat16 *sK,
                                                   int wg, const int HD) {
    wgmma_hold(dqp, HD / 4);
    wgmma_fence();
    const uint32_t lbo = 64 * 64 * 2, sbo = 1024;
    const uint64_t da = wgmma_desc(sDS, lbo, sbo), db = wgmma_desc(sK + tile_at(0, wg * HD / 2, HD, true), lbo, sbo);
#pragma unroll
    for (int ks = 0; ks < BLOCK_ROWS / 16; ks++) {
        const uint64_t a = wgmma_desc_plus(da, 2 * 1024 * ks),
                       b = wgmma_desc_plus(db, ks / 4 * 64 * HD * 2 + ks % 4 * 2 * 1024);
        if (HD == 128) wgmma_m64n64k16_ss<1, 1>(dqp, a, b, ks > 0);
        else wgmma_m64n32k16_ss<1, 1>(dqp, a, b, ks > 0);
    }
    wgmma_commit();
}

// This block's part dqp (wg_dq_issue's) of query tile [qa, qa + 64)'s dq, after the `rank` parts
// before it (ordered_wait and a barrier passed): the first part stored, a middle one added, the
// last (`last`) read with the sum of the others and written into dq scaled (w: set or added, as
// put_pair); a part alone is written at once. part: the tile's partial sums, a thread's 16 bytes
// a float4 of its accumulators (coalesced).
static __device__ __forceinline__ void dq_part_add(gm_cuda_act *dq, float4 *part, const float (*dqp)[4], int rank,
                                                   bool last, int qa, int T, size_t rs, float scale, gm_grad_write w,
                                                   int wg, const int HD) {
    const int tid = threadIdx.x % 128, warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
    // n-tile j: columns HD / 2 wg + 8 j + 2 t, + 1 of rows g, g + 8 (dqp[j][0..3]), at part[j 128]
    part += wg * (HD / 16) * 128 + tid;
    if (!last) {
#pragma unroll
        for (int j = 0; j < HD / 16; j++) {
            const float4 x = make_float4(dqp[j][0], dqp[j][1], dqp[j][2], dqp[j][3]);
            if (rank == 0) partial_store(part + j * 128, x);
            else partial_add(part + j * 128, x);
        }
        return;
    }
    // the other parts' sum, every load in flight before the first add; none: -0, which adds nothing,
    // not even to a zero's sign
    float4 sum[MAX_HD / 16];
#pragma unroll
    for (int j = 0; j < HD / 16; j++)
        sum[j] = rank > 0 ? partial_load(part + j * 128) : make_float4(-0.0f, -0.0f, -0.0f, -0.0f);
    const int i = qa + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < HD / 16; j++) {
        const int col = wg * HD / 2 + 8 * j + 2 * t;
        const float4 y = sum[j];
        if (i < T) put_pair(dq + (size_t)i * rs + col, w, scale * (y.x + dqp[j][0]), scale * (y.y + dqp[j][1]));
        if (i + 8 < T)
            put_pair(dq + (size_t)(i + 8) * rs + col, w, scale * (y.z + dqp[j][2]), scale * (y.w + dqp[j][3]));
    }
}

// Whether the dk/dv kernel (WG: wgmma's; DQ: the one-pass backward) issues a tile's dK product at
// the next tile (DK_LAG in dkdv_body, which says why): its query ring then has a stage more
// (QUERY_STAGES), which dkdv_smem (attention_mma.cu) sizes by this same rule.
static constexpr __host__ __device__ bool dkdv_lag(bool WG, bool DQ) { return WG && WG_TMA && !DQ; }

template <bool WG, bool DQ>
static __device__ __forceinline__ void dkdv_body(gm_cuda_act *__restrict__ dk, gm_cuda_act *__restrict__ dv,
                                                 const gm_cuda_act *__restrict__ dout,
                                                 const gm_cuda_act *__restrict__ q, const gm_cuda_act *__restrict__ k,
                                                 const gm_cuda_act *__restrict__ v,
                                                 const float *__restrict__ lse2, const float *__restrict__ D, int T,
                                                 int NH, float scale_log2, float scale, gm_attn_mask m,
                                                 const int32_t *__restrict__ bounds, gm_grad_write w, const int HD,
                                                 const attn_tmaps *tm, dq_sum ds = {}) {
    static_assert(!DQ || WG, "the one-pass backward is wgmma's");
    // DK_LAG: a tile's dK product is issued at the start of the next tile, before that tile's
    // barrier wait and its S^T and dP^T products, and waited for with S^T's, so that the tensor
    // cores go from one to the others without the warpgroup's round trip between them (the
    // barrier wait runs under it); the tile's query stage is given back only then, so the ring has a
    // stage more (QUERY_STAGES). (Issued at the end of its own tile and waited for in the next,
    // across the loop's back edge, ptxas serialized the kernel's wgmma: C7515.) With TMA only: the
    // threads' copies (fp32 element) overwrite that stage after the tile's block barrier, which
    // the product would still be reading; and not in the one-pass backward, whose dq product
    // waits for dK's anyway.
    constexpr bool DK_LAG = dkdv_lag(WG, DQ);
    constexpr int QS = QUERY_STAGES(DK_LAG);
    extern __shared__ __align__(16) unsigned char smem[];
    const int P = TILE_PITCH(HD, WG), QT = QUERY_TILE(HD, WG);
    // sQ, sO, sL, sD: QS stages each of QT queries; DQ: sDS (dS^T, 128 keys x 64 queries,
    // sw128 on a 1024-byte boundary like the tiles before it) and the block's work index
    __nv_bfloat16 *sK = (__nv_bfloat16 *)(WG ? swizzle_base(smem) : smem), *sV = sK + BLOCK_ROWS * P,
                  *sQ = sV + BLOCK_ROWS * P, *sO = sQ + QS * QT * P, *sDS = sO + QS * QT * P;
    // WG: the TMA barrier ring, then the query stages' empty barriers
    uint64_t *bars = (uint64_t *)(sDS + (DQ ? BLOCK_ROWS * 64 : 0)), *emptyQ = bars + WG_BARS;
    float *sL = (float *)(bars + (WG ? WG_MBARS : 0)), *sD = sL + QS * QT;  // per query: lse2, D
    int32_t *sBound = (int32_t *)(sD + QS * QT);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    int b = blockIdx.z, h = blockIdx.y, kb = blockIdx.x, B = gridDim.z;  // early keys (most work) first
    if constexpr (WG) wg_bars_init(bars);
    if constexpr (DQ) {  // highest key block first, by the work counter
        int32_t *sWork = sBound + BLOCK_ROWS;
        if (threadIdx.x == 0) *sWork = ordered_take(ds.order);
        __syncthreads();
        const int work = *sWork, nkb = (T + BLOCK_ROWS - 1) / BLOCK_ROWS;
        kb = nkb - 1 - work % nkb, h = work / nkb % NH, b = work / nkb / NH, B = (int)gridDim.x / (nkb * NH);
    }
    const int k0 = kb * BLOCK_ROWS, klast = min(k0 + BLOCK_ROWS, T) - 1;
    const size_t rs = (size_t)NH * HD, head = ((size_t)b * T * NH + h) * HD;
    const size_t vec = ((size_t)b * NH + h) * gm_cuda_attn_qvec_len(T, 1);
    const int32_t *hi = bounds_of(bounds, T, B, b, false), *lo = bounds_of(bounds, T, B, b, true);

    if constexpr (!WG) {
        load_rows(sK, k + head, k0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
        load_rows(sV, v + head, k0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
    }
    // Queries before k0 see no key of this tile (causal); none at or past qend (> klast) sees any
    // (window, document).
    const int qend = token_bound(&m, hi, klast, T, false);
    // Query tile i into stage i % QS, two tiles ahead: one cp.async group a tile (empty
    // past qend), the first also holding sK and sV; with WG wgmma's tile group i instead (with tile
    // 0 the block's K and V: qend > k0), its lse2 and D by the same copies.
    const auto load_tile = [&](int i) {
        const int qa = k0 + i * QT, stg = i % QS;
        if (qa < qend) {
            float *cL = sL + stg * QT, *cD = sD + stg * QT;
            if constexpr (WG) {
                if (wg_issuer()) {
                    wg_reuse(emptyQ, stg, i / QS);
                    wg_expect(bars, i,
                              2 * WG_TILE_BYTES(QT, HD) + 2 * WG_VEC_BYTES(QT) +
                                  (i == 0 ? 2 * WG_TILE_BYTES(BLOCK_ROWS, HD) : 0));
                    if (i == 0) {
                        wg_fetch(sK, &tm->k, k + head, bars, 0, b, h, k0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
                        wg_fetch(sV, &tm->v, v + head, bars, 0, b, h, k0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
                    }
                    wg_fetch(sQ + stg * QT * P, &tm->q, q + head, bars, i, b, h, qa, QT, T, rs, HD, BWD_THREADS);
                    wg_fetch(sO + stg * QT * P, &tm->o, dout + head, bars, i, b, h, qa, QT, T, rs, HD, BWD_THREADS);
                    wg_fetch_vec(cL, &tm->lse2, lse2 + vec + qa, bars, i, qa, b * NH + h, QT, BWD_THREADS);
                    wg_fetch_vec(cD, &tm->D, D + vec + qa, bars, i, qa, b * NH + h, QT, BWD_THREADS);
                }
            } else {
                load_query_tile(sQ + stg * QT * P, sO + stg * QT * P, cL, cD, q + head, dout + head, lse2 + vec,
                                D + vec, qa, QT, T, rs, HD);
            }
        }
        cp_async_commit();
    };
    load_tile(0), load_tile(1);
    row_bounds(sBound, &m, hi, k0, T, false);
    if constexpr (WG) __syncthreads();  // the TMA barriers initialized before anyone waits on one

    float dka[MAX_HD / 8][4], dva[MAX_HD / 8][4];
    zero(dka, HD / 8), zero(dva, HD / 8);
    const int wg = WG ? warpgroup() : 0;
    const int ntiles = dq_sum_tiles(T);  // DQ: the query tiles of a head
    int32_t *passing = nullptr;            // DQ: the semaphore of the tile this block last added to, to pass on
    // WG: the A side of the product in flight (P^T for dV, then dS^T for dK; with DK_LAG dK's is
    // issued at the next tile's start)
    uint32_t pa[QUERY_TILE(64, 0) / 16][4];
    // DK_LAG: the stage of the tile before, whose dK product is issued at this one's start (kept, not
    // (i - 1) % QS: ptxas computed that remainder again, 9 instructions a tile, cuobjdump)
    int last_stage = 0;
    // WG, not the one-pass backward (whose dS^T is both warpgroups'): as the forward's warpgroups
    // (fwd_wg_span), each walks the query tiles [ilo, ihi) its own 64 keys are seen by (from its
    // first key: the second warpgroup's start a tile above the block's; up to its last key's query
    // end, where a document ends inside the block) and passes the others (dkdv_pass); tile_full
    // asks of its keys alone. Keys past T are masked only in their own rows (no row's result
    // depends on another's here), so no block-wide rule is kept for them.
    constexpr bool SPAN = WG && !DQ;
    const int nq = (qend - k0 + QT - 1) / QT, kw = k0 + 64 * wg;  // SPAN: the warpgroup's first key
    const int krel_last = min(64 * wg + 63, klast - k0);          // and its last, of the block's
    const int ilo = !SPAN ? 0 : kw <= klast ? (kw - k0) / QT : nq;
    const int ihi = !SPAN ? nq : kw <= klast ? (sBound[krel_last] - k0 + QT - 1) / QT : nq;
    // DK_LAG (TMA, the warpgroups apart): the issuer copies ahead as far as the stages given back
    // let it, and waits for a stage only before it waits for that tile (wg_copy_ahead: why).
    int copied = 2;  // DK_LAG: the issuer's next tile to copy (0 and 1 above)
    const auto copy_ahead = [&](int upto, bool wait) {
        wg_copy_ahead(
            copied, upto, nq, wait, [&](int t) { return wg_free(emptyQ, t % QS, t / QS); },
            load_tile);
    };
    // (a pass before the span issues no TMA copy: the issuer is warpgroup 0's, whose span starts at
    // the block's first tile; see fwd_wg_pass)
    const auto dkdv_pass = [&](int i, bool issue) {
        cp_async_wait<1>();
        if (DK_LAG && issue) copy_ahead(i, true);
        wg_wait(bars, i);
        if constexpr (!WG_TMA) __syncthreads(), load_tile(i + 2);  // the block's one barrier a tile
        wg_release(emptyQ, i % QS);
        if constexpr (WG_TMA) {  // (DK_LAG: with TMA, spans are its)
            if (issue) copy_ahead(i + 2, false);
            __syncwarp();
        }
    };
    int i = 0;
    if constexpr (SPAN)
        for (; i < ilo; i++) dkdv_pass(i, false);
    for (int qa = k0 + i * QT; SPAN ? i < ihi : qa < qend; qa += QT, i++) {  // QT divides 128: qa tile-aligned
        const int stage = i % QS;
        const bool lag = i > ilo;  // DK_LAG: the tile before's dK product to issue
        if constexpr (DK_LAG)
            if (lag) wg_xb_issue(dka, pa, sQ + last_stage * QT * P, HD);  // dK += dS^T Q of the tile before
        cp_async_wait<1>();  // this thread's copies of tile i (and of sK, sV) have landed; tile i + 1's may not
        if constexpr (DK_LAG) copy_ahead(i, true), __syncwarp();  // tile i copied; warp 0 whole
        if constexpr (WG) wg_wait(bars, i);  // wgmma's group i
        // Everyone's copies have landed and tile i - 1 (the stage tile i + 2 goes to) is consumed:
        // a block barrier, but with TMA the warpgroups run apart (the issuer waits for the stage's
        // releases instead), except in the one-pass backward, whose sDS both warpgroups share.
        if constexpr (!WG || !WG_TMA || DQ) __syncthreads();
        if constexpr (!WG || !WG_TMA) load_tile(i + 2);  // every thread's copies (with TMA, below)
        const __nv_bfloat16 *cQ = sQ + stage * QT * P, *cO = sO + stage * QT * P;
        const float *cL = sL + stage * QT, *cD = sD + stage * QT;
        const int qlast = min(qa + QT, T) - 1;
        const bool full = SPAN ? tile_full(qa, kw, 64, sBound[kw - k0] > qlast)
                               : tile_full(qa, k0, BLOCK_ROWS, sBound[0] > qlast);

        // S^T, dP^T: this warp's 16 keys x QT queries
        float st[QUERY_TILE(64, 0) / 8][4], dpt[QUERY_TILE(64, 0) / 8][4];
        if constexpr (WG) {  // S^T, then dP^T, the warpgroup's 64 keys: two groups, P^T made under dP^T's
            wg_abt_issue(st, sK + wg * 64 * HD, cQ, HD, dpt, sV + wg * 64 * HD, cO, true);
            if (DQ && passing) {  // the last tile's parts, added by every thread before the barrier
                if (threadIdx.x == 0) ordered_release(passing);  // its fence while the products run
                __syncwarp();  // warp 0 whole again for wgmma's .aligned wait
                passing = nullptr;
            }
            wgmma_wait<1>();  // S^T (with DK_LAG the previous tile's dK product too); dP^T's runs on
            if constexpr (DK_LAG) {
                if (lag) wg_release(emptyQ, last_stage);  // its Q, dO, lse2 and D read
                wgmma_hold(&dka[0][0], HD / 2), wgmma_hold_a(&pa[0][0], QT / 4);
            }
            if constexpr (WG_TMA) {
                // Into the stage of tile i - 1 (DK_LAG: of tile i - 2, which both warpgroups gave
                // back during tile i - 1; copy_ahead copies only once they have), under dP^T's
                // product: its issuer's waits and TMA issue do not hold up the warpgroup's products.
                if constexpr (DK_LAG) copy_ahead(i + 2, false);
                else load_tile(i + 2);
                __syncwarp();  // warp 0 whole again after its issuer's waits, for wgmma
            }
            wgmma_hold(&st[0][0], QT / 2);
        } else {
            zero(st, QT / 8);
            mma_abt(st, sK + warp * 16 * P, cQ, P, QT / 8, HD / 16, 1);
        }
        mask_tile(st, QT / 8, full, T, k0 + warp * 16, qa, sBound + warp * 16, false);
        exp2_minus_lse(st, QT / 8, scale_log2, cL, true);  // P^T
        // dS^T / scale = P^T (dP^T - D), D by column (query)
        const auto ds_from_p = [&] {
#pragma unroll
            for (int n = 0; n < QT / 8; n++) {
                const float2 d = col_pair(cD, n);
#pragma unroll
                for (int e = 0; e < 4; e++) st[n][e] *= dpt[n][e] - (e & 1 ? d.y : d.x);
            }
        };
        if constexpr (WG) {
            // dV += P^T dO runs on the tensor cores while the CUDA cores turn P^T into dS^T: the
            // product reads P^T's packed copy pa, not st (pa is the wgmma's until the wait).
            pack_a(pa, st);
            wg_xb_issue(dva, pa, cO, HD);
            wgmma_wait<1>();  // dP^T (dV's product runs on)
            wgmma_hold(&dpt[0][0], QT / 2);
            ds_from_p();
            wgmma_wait<0>();
            wgmma_hold(&dva[0][0], HD / 2), wgmma_hold_a(&pa[0][0], QT / 4);
            pack_a(pa, st);
            if constexpr (!DK_LAG) wg_xb_issue(dka, pa, cQ, HD);  // dK += dS^T Q
            last_stage = stage;
            if constexpr (DQ) {
                // While dK's product runs: dS^T into shared memory, and the wait for the parts of
                // the tile's dq before this block's (rank of them: the key blocks above this one
                // that see the tile, up to the one holding its last query; this one's is the last
                // part when the tile's first query sees no key below k0).
                store_ds_t(sDS, st, wg * 64 + warp % 4 * 16);
                fence_proxy_async();
                const int tile = qa / QT, rank = min(qa + QT - 1, T - 1) / BLOCK_ROWS - kb;
                const bool last = token_bound(&m, lo, qa, T, true) / BLOCK_ROWS == kb;
                int32_t *sem = ds.order + 1 + ((size_t)b * NH + h) * ntiles + tile;
                if (threadIdx.x == 0) ordered_wait(sem, rank);
                __syncthreads();  // both warpgroups' dS^T stored, the earlier parts added
                float dqp[MAX_HD / 16][4];
                wg_dq_issue(&dqp[0][0], sDS, sK, wg, HD);
                wgmma_wait<0>();
                wgmma_hold(&dqp[0][0], HD / 4);
                float4 *part = ds.part + (((size_t)b * NH + h) * ntiles + tile) * dq_sum_tile_float4s(HD);
                dq_part_add(ds.dq + head, part, dqp, rank, last, qa, T, rs, scale, w, wg, HD);
                if (!last) passing = sem;  // passed on after the next barrier
            }
            if constexpr (!DK_LAG) {
                wgmma_wait<0>();
                wg_release(emptyQ, stage);  // the tile's Q, dO, lse2 and D read
                wgmma_hold(&dka[0][0], HD / 2), wgmma_hold_a(&pa[0][0], QT / 4);
            }
        } else {
            zero(dpt, QT / 8);
            mma_abt(dpt, sV + warp * 16 * P, cO, P, QT / 8, HD / 16, 1);
            mma_xb(dva, st, cO, P, HD / 8, QT / 16, 1);
            ds_from_p();
            mma_xb(dka, st, cQ, P, HD / 8, QT / 16, 1);
        }
    }
    if (DQ && passing) {
        __syncthreads();  // a block's threads agree on passing
        if (threadIdx.x == 0) ordered_release(passing);
    }
    if constexpr (DK_LAG)
        if (ihi > ilo) {  // the span's last tile's dK product, then its stage given back
            wg_xb_issue(dka, pa, sQ + last_stage * QT * P, HD);
            wgmma_wait<0>();
            wg_release(emptyQ, last_stage);
            wgmma_hold(&dka[0][0], HD / 2), wgmma_hold_a(&pa[0][0], QT / 4);
        }
    // past the span, after its last product's wait (the issuer's copies may go to its last stage)
    if constexpr (SPAN)
        for (; i < nq; i++) dkdv_pass(i, true);

#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int j = k0 + warp * 16 + g + 8 * r;
        if (j >= T) continue;
        gm_cuda_act *krow = dk + head + (size_t)j * rs + 2 * t, *vrow = dv + head + (size_t)j * rs + 2 * t;
#pragma unroll
        for (int n = 0; n < HD / 8; n++) {
            put_pair(krow + n * 8, w, scale * dka[n][2 * r], scale * dka[n][2 * r + 1]);
            put_pair(vrow + n * 8, w, dva[n][2 * r], dva[n][2 * r + 1]);
        }
    }
}

#endif
