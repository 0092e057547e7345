// The tensor-core attention's dq kernel (attention_mma.cu; the backward's first, the dk/dv kernel
// its second): grid (ceil(T / 128), NH, B), BWD_THREADS (256) threads, a warp's 16 query rows
// (M = 1); key tiles in a ring as the forward's. WG: the three products by wgmma, as the
// forward's (S = Q K^T and dP = dO V^T by wg_abt_issue, dQ += dS K by wg_xb_issue, K read
// transposed).
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_DQ_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_DQ_CUH

#include "backend/cuda/attention_mma_mask.cuh"
#include "backend/cuda/attention_mma_products.cuh"
#include "backend/cuda/attention_mma_ring.cuh"
#include "backend/cuda/attention_mma_shapes.cuh"
#include "backend/cuda/attention_mma_softmax.cuh"
#include "backend/cuda/attention_mma_tiles.cuh"

template <bool WG>
static __device__ __forceinline__ void dq_body(gm_cuda_act *__restrict__ dq, const gm_cuda_act *__restrict__ dout,
                                               const gm_cuda_act *__restrict__ q, const gm_cuda_act *__restrict__ k,
                                               const gm_cuda_act *__restrict__ v, const float *__restrict__ lse2,
                                               const float *__restrict__ D, int T, int NH, float scale_log2,
                                               float scale, gm_attn_mask m, const int32_t *__restrict__ bounds,
                                               gm_grad_write w, const int HD, const attn_tmaps *tm) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int P = TILE_PITCH(HD, WG);
    // sK, sV: 2 stages each of KEY_TILE rows, or with WG DQ_K_STAGES and DQ_V_STAGES; WG: the TMA
    // barrier ring
    __nv_bfloat16 *sQ = (__nv_bfloat16 *)(WG ? swizzle_base(smem) : smem), *sO = sQ + BLOCK_ROWS * P,
                  *sK = sO + BLOCK_ROWS * P, *sV = sK + (WG ? DQ_K_STAGES : 2) * KEY_TILE * P;
    uint64_t *bars = (uint64_t *)(sV + (WG ? DQ_V_STAGES : 2) * KEY_TILE * P);
    int32_t *sBound = (int32_t *)(bars + (WG ? WG_MBARS : 0));
    const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int q0 = (int)(gridDim.x - 1 - blockIdx.x) * BLOCK_ROWS, qlast = min(q0 + BLOCK_ROWS, T) - 1;
    const size_t rs = (size_t)NH * HD, head = ((size_t)b * T * NH + h) * HD;
    const size_t vec = ((size_t)b * NH + h) * gm_cuda_attn_qvec_len(T, 1);
    const int32_t *lo = bounds_of(bounds, T, gridDim.z, b, true);

    const int kbeg = token_bound(&m, lo, q0, T, true) / KEY_TILE * KEY_TILE;  // <= q0: at least one tile
    const int ntiles = (qlast - kbeg) / KEY_TILE + 1;
    // WG: key tile group j (with j = 0 also Q and dO), nothing past the last tile
    uint64_t *emptyK = bars + WG_BARS, *emptyV = emptyK + DQ_K_STAGES;  // WG: the stages' empty barriers
    const auto wg_copy = [&](int j) {
        if (j >= ntiles || !wg_issuer()) return;
        wg_reuse(emptyK, j % DQ_K_STAGES, j / DQ_K_STAGES), wg_reuse(emptyV, j % DQ_V_STAGES, j / DQ_V_STAGES);
        wg_expect(bars, j, 2 * WG_TILE_BYTES(KEY_TILE, HD) + (j == 0 ? 2 * WG_TILE_BYTES(BLOCK_ROWS, HD) : 0));
        if (j == 0) {
            wg_fetch(sQ, &tm->q, q + head, bars, 0, b, h, q0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
            wg_fetch(sO, &tm->o, dout + head, bars, 0, b, h, q0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
        }
        const int k0 = kbeg + j * KEY_TILE;
        wg_fetch(sK + j % DQ_K_STAGES * KEY_TILE * P, &tm->k, k + head, bars, j, b, h, k0, KEY_TILE, T, rs, HD,
                 BWD_THREADS);
        wg_fetch(sV + j % DQ_V_STAGES * KEY_TILE * P, &tm->v, v + head, bars, j, b, h, k0, KEY_TILE, T, rs, HD,
                 BWD_THREADS);
    };
    if constexpr (WG) {
        wg_bars_init(bars);
        wg_copy(0), wg_copy(1);
    } else {
        load_rows(sQ, q + head, q0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
        load_rows(sO, dout + head, q0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
        load_key_tile(sK, sV, k + head, v + head, kbeg, T, rs, HD, BWD_THREADS);
    }
    float lrow[2], Drow[2];  // this lane's rows g, g + 8: lse in log2 units (+inf past T: P = 0), D
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int i = q0 + warp * 16 + g + 8 * r;  // < Tq
        lrow[r] = lse2[vec + i], Drow[r] = D[vec + i];
    }
    row_bounds(sBound, &m, lo, q0, T, true);

    float acc[MAX_HD / 8][4];
    zero(acc, HD / 8);

    if constexpr (WG) {
        // FlashAttention-3's overlap, as in the wgmma forward: per key tile j, S_j and dP_j issued with
        // dQ += dS_{j-1} K_{j-1}, a wait for S_j and dP_j only, then tile j's mask, P and dS on the CUDA
        // cores while the tensor cores run dQ's product, then its wait and dS_j's packing. The copies
        // run two tiles ahead, one group a tile (wg_copy): during tile j, K_{j-1} (the product in
        // flight), K_j and V_j are read while K, V_{j+1} may be in flight and K, V_{j+2} are copied:
        // K keeps DQ_K_STAGES (4) stages, V DQ_V_STAGES (3). With TMA the warpgroups are decoupled
        // (wg_release: V_j given back after dP_j, K_{j-1} after dQ's product with it; the issuer
        // waits for them before copying into a stage again); with the threads' copies (fp32) one
        // barrier a tile, after which every warpgroup is done with K_{j-2} and V_{j-1}, the stages
        // the copies then overwrite. dQ is summed in the order of the other forms: bitwise their
        // arithmetic.
        // As the forward's warpgroups (fwd_wg_span), each walks the key tiles [jlo, jhi) its own 64
        // rows see (its first row's first key, its last row inside T) and passes the others: a
        // pass waits for the group, gives its stages back and, where `issue`, makes the issuer's
        // copy (dq_pass; before the span with the threads' copies only, as fwd_wg_pass says why).
        __syncthreads();  // the TMA barriers initialized before anyone waits on one (and sBound written)
        const int wg = warpgroup(), r0 = 64 * wg, rlast = min(r0 + 63, qlast - q0);  // rows of the block's
        const int jlo = r0 <= rlast ? sBound[r0] / KEY_TILE - kbeg / KEY_TILE : 0;
        const int jhi = r0 <= rlast ? (q0 + rlast - kbeg) / KEY_TILE + 1 : 0;
        const __nv_bfloat16 *sQw = sQ + wg * 64 * HD, *sOw = sO + wg * 64 * HD;
        // With TMA the issuer copies ahead as far as the stages given back let it, and waits for a
        // stage only before it waits for that tile (wg_copy_ahead: why); the threads' copies (fp32)
        // wait for nothing: tile `upto` alone (wg_copy_ahead's loop there, which would copy the same
        // tiles, cost that build's dq kernel 84 bytes of spill at head_dim 128, ptxas -v).
        int copied = 2;  // the issuer's next tile (0 and 1 above)
        const auto copy_ahead = [&](int upto, bool wait) {
            if constexpr (!WG_TMA) wg_copy(upto);
            else
                wg_copy_ahead(
                    copied, upto, ntiles, wait,
                    [&](int t) {
                        return wg_free(emptyK, t % DQ_K_STAGES, t / DQ_K_STAGES) &&
                               wg_free(emptyV, t % DQ_V_STAGES, t / DQ_V_STAGES);
                    },
                    wg_copy);
        };
        const auto dq_pass = [&](int j, bool issue) {
            if (WG_TMA && issue) copy_ahead(j, true);
            wg_wait(bars, j);
            if constexpr (!WG_TMA) __syncthreads();  // the block's one barrier a tile
            wg_release(emptyV, j % DQ_V_STAGES), wg_release(emptyK, j % DQ_K_STAGES);
            if (issue) copy_ahead(j + 2, false);
            if constexpr (WG_TMA) __syncwarp();
        };
        uint32_t pa[KEY_TILE / 16][4];  // dS_{j-1}, the A side of the product in flight
        int j = 0;
        for (; j < jlo; j++) dq_pass(j, !WG_TMA);
        for (; j < jhi; j++) {
            const int k0 = kbeg + j * KEY_TILE;
            const bool lag = j > jlo;  // dS_{j-1} K_{j-1} to issue
            if constexpr (WG_TMA) copy_ahead(j, true), __syncwarp();  // tile j copied; warp 0 whole
            wg_wait(bars, j);  // group j; group j + 1 may be in flight
            if constexpr (!WG_TMA) __syncthreads();  // the threads' copies: everyone's stored, the stages free
            const __nv_bfloat16 *cK = sK + j % DQ_K_STAGES * KEY_TILE * P;
            float s[KEY_TILE / 8][4], dp[KEY_TILE / 8][4];
            wg_abt_issue(s, sQw, cK, HD, dp, sOw, sV + j % DQ_V_STAGES * KEY_TILE * P);
            if (lag) {
                wg_xb_issue(acc, pa, sK + (j - 1) % DQ_K_STAGES * KEY_TILE * P, HD);
                wgmma_wait<1>();  // S_j, dP_j; dQ's product runs on
            } else {
                wgmma_wait<0>();
            }
            wg_release(emptyV, j % DQ_V_STAGES);  // V_j read (dP_j); K_j is read once more, by dQ's product
            // Groups up to j + 2 (j + 2 into K_{j-2}'s and V_{j-1}'s stages, given back in tile
            // j - 1) whose stages both warpgroups have given back, issued under dQ's product: where
            // it came before the tile's products, the issuer's waits for the other warpgroup's
            // releases and its TMA issue held up its warpgroup's S and dP.
            copy_ahead(j + 2, false);
            if constexpr (WG_TMA) __syncwarp();  // warp 0 whole again after its issuer's waits, for wgmma's wait
            wgmma_hold(&s[0][0], KEY_TILE / 2), wgmma_hold(&dp[0][0], KEY_TILE / 2);
            const bool full = tile_full(q0 + r0, k0, KEY_TILE, sBound[rlast] <= k0);
            mask_tile(s, KEY_TILE / 8, full, T, q0 + warp * 16, k0, sBound + warp * 16, true);
            exp2_minus_lse(s, KEY_TILE / 8, scale_log2, lrow, false);  // P
            times_dp_minus_d(s, dp, Drow);                // dS / scale
            wgmma_wait<0>();                              // dQ += dS_{j-1} K_{j-1}: acc and pa are the threads'
            if (lag) wg_release(emptyK, (j - 1) % DQ_K_STAGES);
            wgmma_hold(&acc[0][0], HD / 2), wgmma_hold_a(&pa[0][0], KEY_TILE / 4);
            pack_a(pa, s);
        }
        if (jhi > jlo) {  // dQ's product with the span's last tile, then its K given back
            wg_xb_issue(acc, pa, sK + (jhi - 1) % DQ_K_STAGES * KEY_TILE * P, HD);
            wgmma_wait<0>();
            wg_release(emptyK, (jhi - 1) % DQ_K_STAGES);
            wgmma_hold(&acc[0][0], HD / 2), wgmma_hold_a(&pa[0][0], KEY_TILE / 4);
        }
        // past the span, after its last product's wait (the threads' copies may overwrite K_{jhi-1})
        for (; j < ntiles; j++) dq_pass(j, true);
    } else {
        for (int k0 = kbeg, stage = 0; k0 <= qlast; k0 += KEY_TILE, stage ^= 1) {
            const key_stage ks =
                key_ring_step(sK, sV, sBound, k + head, v + head, q0, qlast, k0, stage, T, rs, HD, BWD_THREADS);
            const __nv_bfloat16 *cK = ks.K, *cV = ks.V;
            const bool full = ks.full;

            float s[KEY_TILE / 8][4], dp[KEY_TILE / 8][4];
            zero(s, KEY_TILE / 8);
            mma_abt(s, sQ + warp * 16 * P, cK, P, KEY_TILE / 8, HD / 16, 1);
            mask_tile(s, KEY_TILE / 8, full, T, q0 + warp * 16, k0, sBound + warp * 16, true);
            exp2_minus_lse(s, KEY_TILE / 8, scale_log2, lrow, false);  // P
            zero(dp, KEY_TILE / 8);
            mma_abt(dp, sO + warp * 16 * P, cV, P, KEY_TILE / 8, HD / 16, 1);
            times_dp_minus_d(s, dp, Drow);  // dS / scale
            mma_xb(acc, s, cK, P, HD / 8, KEY_TILE / 16, 1);
        }
    }

#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int i = q0 + warp * 16 + g + 8 * r;
        if (i >= T) continue;
        gm_cuda_act *row = dq + head + (size_t)i * rs + 2 * t;
#pragma unroll
        for (int n = 0; n < HD / 8; n++) put_pair(row + n * 8, w, scale * acc[n][2 * r], scale * acc[n][2 * r + 1]);
    }
}

#endif
