// The records' mask (backend.h gm_attn_mask: causal, documents, sliding window of whole blocks) at
// the tensor-core attention's tile level (attention_mma.cu), kept exactly:
// - key tiles a query block never sees are never visited: the key range starts at the window's
//   first block and at the first token of the first query's document (doc ids are nondecreasing;
//   with documents every token's bounds come from one pass a call, mask_bounds_body), and ends at
//   the diagonal; the dk/dv kernel's query range ends where the window (and the last key's
//   document) ends. With the records' 128-token blocks the tiles align with the mask's blocks, so
//   fully masked blocks cost nothing.
// - a tile pair where every query sees every key (tile_full) runs unmasked; any other one applies
//   the CPU's rule (attn_mask.h: gm_attn_allowed) to every (query, key) pair, as the one range it
//   leaves each row (row_bounds), so any block size is exact, not only 128.
// - the wgmma kernels' warpgroups, which run apart (no block barrier a tile), each walk only the
//   tiles their own 64 rows see (the forward's fwd_wg_span, the dq and dk/dv kernels' spans; not
//   the one-pass backward, whose warpgroups share dS^T), and tile_full asks of the warpgroup's
//   rows. By bench/attn_tile_count.py (a count, not a measurement; documents of mean 700 of the
//   bench's distribution, window 14, T 65536, seeds 1-3): 6-8% fewer warpgroup-tiles in the
//   forward, dq and dk/dv, 39-40% fewer with the element mask, the longer warpgroup's walk 2.4-2.9%
//   shorter (partially masked tiles weighed 1.33; without documents 1.8%, 50%, 1.2%). Measured and
//   undone: each warp of the mma.sync kernels classifying its own 16 rows against the tile
//   (skipping the math where they see none of it), which skips ~11-14% of the warp-tiles on the
//   records' masks, ran 3-6% slower on the H200 at 26112b6 (reports/gpu-h200/run-26112b6/): a
//   skipping warp still waits at the tile's barrier, and the classification sits between that
//   barrier and the first MMA.
// Rows past T are loaded as zeros; keys past T are always masked (causal), queries past T see no
// key in the backward (lse2 +inf: P = 0), and nothing past T is stored.
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_MASK_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_MASK_CUH

#include "backend/attn_mask.h"
#include "backend/cuda/attention_mma_shapes.cuh"

// A thread's binary search in a document-id vector (nondecreasing): the first p in [lo, hi) with
// doc[p] >= val (strict: > val), hi when there is none.
static __device__ int doc_first(const int32_t *doc, int lo, int hi, int32_t val, bool strict) {
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (strict ? doc[mid] > val : doc[mid] >= val) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// The mask as a range per token: what gm_attn_allowed leaves a query x is the keys [lo, x] with lo
// its window's first key or its document's first token, whichever is later (causal, and doc ids
// nondecreasing: a key of the query's document at or before it is one at or after that token); what
// it leaves a key x is the queries [x, hi) with hi the end of its window, of its document, or T,
// whichever is first. With documents, mask_bounds_body writes them for every token of the batch
// once a call (bounds: lo of (b, x) at b T + x, hi at (B + b) T + x), before the kernels; without,
// the window's arithmetic gives them. Why: each block used to find its range by a warp's search of
// the doc ids and each of its rows by a thread's binary search, some ten dependent global loads
// before its first tile (by reading the code; timed only together with the other changes since
// 1772e6e: H200, run 8, reports/gpu-h200/README.md), and every layer, head and kernel searched
// again.
// The window's (and T's) part of token x's bound: its first key (query rows) or one past its last
// query (key rows).
static __device__ __forceinline__ int window_bound(const gm_attn_mask *m, int x, int T, bool rows_are_q) {
    return rows_are_q ? (int)gm_attn_first_key(m, x) : (int)min(gm_attn_query_end(m, x), (long long)T);
}
static __device__ __forceinline__ void mask_bounds_body(int32_t *bounds, gm_attn_mask m, int B, int T) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, n = (size_t)B * T;
    if (i >= n) return;
    const int x = (int)(i % T);
    const int32_t *doc = m.doc + (i - x), id = doc[x];
    bounds[i] = doc_first(doc, window_bound(&m, x, T, true), x, id, false);
    bounds[n + i] = doc_first(doc, x + 1, window_bound(&m, x, T, false), id, true);
}

// Token x's bound (x < T): its first key (lo, query rows) or one past its last query (hi, key
// rows); lo or hi: the batch row's slice of mask_bounds_body's, NULL without documents.
static __device__ __forceinline__ int token_bound(const gm_attn_mask *m, const int32_t *lohi, int x, int T,
                                                  bool rows_are_q) {
    return lohi ? lohi[x] : window_bound(m, x, T, rows_are_q);
}

// bound[r] = token_bound of the block's row rows0 + r (one thread a row, BLOCK_ROWS of them; past T
// 0: any lo for a query row, since mask_tile's hi is 0 there; an empty range for a key row). Read by
// mask_tile after the block's first barrier. Why: a partially masked tile then costs two compares
// a pair, where it read the keys' doc ids from shared memory and compared them too, and worked out
// the window bounds of its rows again.
static __device__ __forceinline__ void row_bounds(int32_t *bound, const gm_attn_mask *m, const int32_t *lohi,
                                                  int rows0, int T, bool rows_are_q) {
    const int r = threadIdx.x, x = rows0 + r;
    if (r < BLOCK_ROWS) bound[r] = x < T ? token_bound(m, lohi, x, T, rows_are_q) : 0;
}

// Batch row b's slice (of B) of the bounds: lo (query rows) or hi (key rows), NULL without documents.
static __device__ __forceinline__ const int32_t *bounds_of(const int32_t *bounds, int T, int B, int b,
                                                           bool rows_are_q) {
    return bounds ? bounds + ((size_t)(rows_are_q ? 0 : B) + b) * T : nullptr;
}

// Does every query of [q0, min(q0 + nq, T)) see every key of [k0, k0 + nk)? Causal: the last key
// is at or before the first query; then one corner decides, row_bounds' bounds being nondecreasing
// along the rows: `corner` is whether the last valid query's first key is at or before k0 (query
// rows), or key k0's query end is past the last valid query (key rows). Then k0 + nk - 1 <= q0 < T,
// so no key is padding; padded query rows are harmless (see the header).
static __device__ __forceinline__ bool tile_full(int q0, int k0, int nk, bool corner) {
    return k0 + nk - 1 <= q0 && corner;
}

// Unless the tile is full, set every pair of a 16 x 8*NT score tile the mask refuses to -inf (raw
// scores: the scale comes in the exponent, in one FFMA with its subtraction). Rows are
// `rows0 + (warp row)`, columns `cols0 + (column)`; `rows_are_q` says which side the queries are
// on (rows in the forward and dq kernels, columns in dk/dv); rbound: row_bounds' bounds of the
// tile's rows. A pair costs two compares and no integer division. Why: on the H200 at 8826418 the
// window-14 forward at T 1024, where the window masks nothing, took 0.081 ms against 0.050 for the
// same pairs as plain causal, and what differs between the two runs of the same kernel is the
// window clause: two integer divisions by the block size per pair of every partially masked tile,
// then. A full tile returns at once: ptxas then branches around the compares, which it had issued
// predicated on every tile (cuobjdump -sass).
static __device__ __forceinline__ void mask_tile(float (*s)[4], const int NT, bool full, int T, int rows0, int cols0,
                                                 const int32_t *rbound, bool rows_are_q) {
    if (full) return;
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    // This lane's rows g and g + 8: the other side's range [lo, hi) the rule leaves them (queries:
    // keys up to the query itself, none past T; keys: queries from the key itself).
    int lo[2], hi[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int x = rows0 + g + 8 * h;
        lo[h] = rows_are_q ? rbound[g + 8 * h] : x;
        hi[h] = rows_are_q ? (x < T ? x + 1 : 0) : rbound[g + 8 * h];
    }
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int h = e >> 1, y = cols0 + n * 8 + 2 * t + (e & 1);
            if (!(y >= lo[h] && y < hi[h])) s[n][e] = -INFINITY;
        }
}

#endif
