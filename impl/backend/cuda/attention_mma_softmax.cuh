// Scores into probabilities for the tensor-core attention (attention_mma.cu), in the log2 domain:
// P = 2^(S scale log2 e - reference), one FFMA and one ex2.approx.ftz a score (the scale must be
// positive; attention.cu sends no other here). The forward's online softmax (the reference is a
// row's running maximum, moved, with the output's rescale, only when a row of the warp's m-tile
// gains more than 2^8), the backward's P from lse2, and its dS = P (dP - D).
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_SOFTMAX_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_SOFTMAX_CUH

#include "backend/cuda/attention_mma_shapes.cuh"
#include "backend/cuda/mma_sm80.cuh"

// Columns 2t, 2t + 1 of n-tile n (this lane's, in the accumulator layout) of a per-column vector
// in shared memory (8-byte aligned): one 8-byte load, where indexing the two floats made ptxas
// load them one by one (cuobjdump: 16 LDS a tile for each of the dk/dv kernel's lse2 and D).
static __device__ __forceinline__ float2 col_pair(const float *cols, int n) {
    return *(const float2 *)(cols + n * 8 + 2 * (threadIdx.x % 4));
}

// P = 2^(S scale_log2 - lse) over a 16 x 8*NT tile of raw scores, lse in log2 units per row
// (this lane's rows g and g + 8: lse[0], lse[1]) or, by_column, per column (shared, by column); -inf
// scores give 0. One FFMA and one ex2 a score. (by_column a constant, not lse's rows or columns
// given as NULL: ptxas then kept a trap for a NULL column vector, and in the dk/dv kernel a wgmma
// wait before it, C7517.)
static __device__ __forceinline__ void exp2_minus_lse(float (*s)[4], const int NT, float scale_log2, const float *lse,
                                                      const bool by_column) {
#pragma unroll
    for (int n = 0; n < NT; n++) {
        const float2 col = by_column ? col_pair(lse, n) : make_float2(0.0f, 0.0f);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float x = by_column ? (e & 1 ? col.y : col.x) : lse[e / 2];
            s[n][e] = ex2_ftz(fmaf(s[n][e], scale_log2, -x));
        }
    }
}

// Row r of the output accumulator o (16 x HD; this lane's row g for r = 0, g + 8 for r = 1) times c.
static __device__ __forceinline__ void rescale_row(float (*o)[4], int r, float c, const int HD) {
#pragma unroll
    for (int n = 0; n < HD / 8; n++) o[n][2 * r] *= c, o[n][2 * r + 1] *= c;
}

// How far (log2 units) a row's tile maximum may exceed the maximum its P and output are scaled to
// before they are rescaled (FlashAttention-4's conditional rescaling): P stays below 2^8, and the
// output's rescale is skipped on the tiles where no row of the m-tile moved that far.
#define RESCALE_SLACK 8.0f

// Online softmax of one m-tile: its raw scores s (16 x KEY_TILE, masked; log2 units once times
// scale_log2 > 0) update the reference maximum (log2 units) and sum of this lane's rows g (mrow[0],
// lrow[0]; e = 0, 1) and g + 8 (mrow[1], lrow[1]; e = 2, 3), and s becomes P = exp2(s scale_log2 -
// reference). The references move, to the rows' running maxima, only when some row of the m-tile
// (a warp's 16 rows: the same rows in every form, so the forms stay bitwise alike) found a score
// more than RESCALE_SLACK above its reference; then corr[r] is the factor that takes row r's output
// accumulator to the new reference, applied here to o (16 x HD) when given, else left to the caller
// (rescale_row; the wgmma forward, whose o is then still a product's in flight), and the return is
// true; else nothing needs rescaling (false; corr 1). Out = o / l is the same sum either way. Why:
// the rescale is HD/4 multiplies a lane a tile (128 of the mma32 forward's ~1000 instructions a
// tile), and after a row's first tiles its maximum rarely grows by 2^8. A row's KEY_TILE scores are
// spread over the 4 lanes of a quad; lrow holds this lane's columns only (the quad sums them at the
// end). The max is taken of the raw scores and scaled once (the same value as the max of the scaled
// ones: rounding is monotone), and each P is one FFMA and one ex2.
static __device__ __forceinline__ bool softmax_tile(float (*s)[4], float scale_log2, float *mrow, float *lrow,
                                                    float *corr, float (*o)[4] = nullptr, const int HD = 0) {
    float mx[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = -INFINITY;
#pragma unroll
        for (int n = 0; n < KEY_TILE / 8; n++) mx[r] = fmaxf(mx[r], fmaxf(s[n][2 * r], s[n][2 * r + 1]));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(GM_FULL_MASK, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(GM_FULL_MASK, mx[r], 2));
        mx[r] *= scale_log2;
    }
    // a row's first visible scores always move it (-inf + slack = -inf)
    const bool move = __ballot_sync(GM_FULL_MASK, mx[0] > mrow[0] + RESCALE_SLACK || mx[1] > mrow[1] + RESCALE_SLACK);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        if (move) {
            const float mnew = fmaxf(mrow[r], mx[r]);
            const float c = ex2_ftz(mrow[r] - (mnew == -INFINITY ? 0.0f : mnew));  // 0 while the row was empty
            mrow[r] = mnew;
            lrow[r] *= c;
            if (o) rescale_row(o, r, c, HD);
            corr[r] = c;
        } else {
            corr[r] = 1.0f;
        }
        const float mref = mrow[r] == -INFINITY ? 0.0f : mrow[r];  // nothing visible yet: p = 0, no inf - inf
#pragma unroll
        for (int n = 0; n < KEY_TILE / 8; n++) {
            s[n][2 * r] = ex2_ftz(fmaf(s[n][2 * r], scale_log2, -mref));
            s[n][2 * r + 1] = ex2_ftz(fmaf(s[n][2 * r + 1], scale_log2, -mref));
            lrow[r] += s[n][2 * r] + s[n][2 * r + 1];
        }
    }
    return move;
}

// dS / scale = P (dP - D) over the dq kernel's 16 x KEY_TILE tile: s holds P and becomes dS / scale;
// D per row (this lane's rows g, g + 8).
static __device__ __forceinline__ void times_dp_minus_d(float (*s)[4], const float (*dp)[4], const float *Drow) {
#pragma unroll
    for (int n = 0; n < KEY_TILE / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[n][e] *= dp[n][e] - Drow[e / 2];
}

#endif
