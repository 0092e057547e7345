// The naive attention of the CUDA backend: scalar fp32 flash-style kernels on (B, T, NH, HD),
// HD <= 128 (tiles of keys in shared memory, online softmax, only the log-sum-exp kept) and their
// backward, which recomputes the probabilities from that lse (FlashAttention-2 order):
//   dq_i += scale * sum_j P_ij (dout_i . v_j - D_i) k_j  (blocks own query rows)
//   dk_j += scale * sum_i P_ij (dout_i . v_j - D_i) q_i  (blocks own key rows)
//   dv_j += sum_i P_ij dout_i
// with D_i = dout_i . out_i computed by the dispatcher (attention.cu). It is the GPU-side
// reference of the tensor-core kernels (attention_mma.cu), and serves the head dims those do not.
// Every output row is owned by one warp, which sums its terms in a fixed order: no atomics, so
// the results repeat bit for bit.
//
// Precision: q, k, v, dout are activations (act_elem.cuh), widened exactly to fp32 as their tiles
// are loaded; every product and sum is fp32; out, dq, dk, dv are rounded to the activation element
// once, at their store (an ADD widens the old element, adds in fp32 and rounds once); lse is fp32.
//
// Work layout: a warp handles a few rows (query rows in the forward and dq kernels, key rows in
// the dk/dv kernel); its 32 lanes take the 32 rows of the other side's tile, one each: a lane
// computes one score (a dot product over HD from shared memory), then the warp accumulates the
// weighted rows with the weights broadcast by __shfl_sync, each lane owning head-dim elements
// d = lane + 32*c. Shared tiles read row-per-lane are padded by one float (no bank conflicts).
//
// Masking: the token rule of gm_attn_allowed (attn_mask.h, the same function as the CPU) is
// applied to every (query, key) pair, so the result is exact for any block size. A tile pair
// whose every element is masked is skipped as a whole (causal, outside the window, or disjoint
// documents: document ids are nondecreasing along a row, attn_mask.h), before any load, with a
// test that is the same for all threads of the block.
#include <cuda_runtime.h>
#include <math.h>

#include "backend/attn_mask.h"
#include "backend/cuda/attention.cuh"

#define MAX_HD 128
#define DC (MAX_HD / 32)  // head-dim elements per lane
#define WARPS 4
#define TILE 32          // rows of the "lane side" tile: one per lane
#define FWD_RPW 4        // forward: query rows per warp
#define FWD_ROWS (WARPS * FWD_RPW)
#define BWD_RPW 2        // backward kernels: rows per warp
#define BWD_ROWS (WARPS * BWD_RPW)

// Is every pair of queries [q0, q1) x keys [k0, k1) masked? (Both ranges non-empty, inside T.)
static __device__ bool tile_masked(const gm_attn_mask *m, const int32_t *doc, int q0, int q1, int k0, int k1) {
    if (k0 > q1 - 1) return true;  // every key after every query
    if (m->window_blocks > 0 && q0 / m->block - (k1 - 1) / m->block >= m->window_blocks) return true;
    if (doc && (doc[q0] > doc[k1 - 1] || doc[k0] > doc[q1 - 1])) return true;  // disjoint documents
    return false;
}

static __device__ __forceinline__ bool allowed(const gm_attn_mask *m, const int32_t *doc, int i, int j) {
    return gm_attn_allowed(m, i, j, doc ? doc[i] : 0, doc ? doc[j] : 0);
}

// Row t of head h in batch b of a (B, T, NH, HD) tensor is base + t * NH * HD.
#define HEAD_BASE(p, b, h) ((p) + ((size_t)(b) * T * NH + (h)) * HD)

// Rows [r0, r0 + nrows) of one head of a (B, T, NH, HD) activation (row stride rs, from `src`,
// the head's row 0) into shared fp32 memory with row pitch `pitch`; rows at or past `rend` are zero.
static __device__ __forceinline__ void load_rows(float *dst, int pitch, const gm_cuda_act *src, int r0, int nrows,
                                                 int rend, size_t rs, int HD) {
    for (int e = threadIdx.x; e < nrows * HD; e += blockDim.x) {
        int r = e / HD, d = e % HD;
        dst[r * pitch + d] = r0 + r < rend ? gm_act_ld(src, (size_t)(r0 + r) * rs + d) : 0.0f;
    }
}

// Row pitch (floats) of a shared 2-D array, as declared.
#define PITCH(a) ((int)(sizeof(a)[0] / sizeof(float)))

// ---- forward: grid (ceil(T / FWD_ROWS), NH, B), WARPS warps ----
__global__ static void __launch_bounds__(WARPS * 32)
    attn_fwd_kernel(gm_cuda_act *out, float *lse, const gm_cuda_act *q, const gm_cuda_act *k, const gm_cuda_act *v,
                    int T, int NH, int HD, float scale, gm_attn_mask m) {
    __shared__ float sQ[FWD_ROWS][MAX_HD];
    __shared__ float sK[TILE][MAX_HD + 1];
    __shared__ float sV[TILE][MAX_HD];
    const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int q0 = blockIdx.x * FWD_ROWS, q1 = min(q0 + FWD_ROWS, T);
    const size_t rs = (size_t)NH * HD;  // stride between tokens
    const gm_cuda_act *qb = HEAD_BASE(q, b, h), *kb = HEAD_BASE(k, b, h), *vb = HEAD_BASE(v, b, h);
    const int32_t *doc = m.doc ? m.doc + (size_t)b * T : NULL;

    load_rows(&sQ[0][0], PITCH(sQ), qb, q0, FWD_ROWS, T, rs, HD);
    float mrow[FWD_RPW], lrow[FWD_RPW], o[FWD_RPW][DC];
#pragma unroll
    for (int rr = 0; rr < FWD_RPW; rr++) {
        mrow[rr] = -INFINITY, lrow[rr] = 0.0f;
#pragma unroll
        for (int c = 0; c < DC; c++) o[rr][c] = 0.0f;
    }

    const int ntiles = (q1 - 1) / TILE + 1;  // key tiles up to the last query
    for (int kt = 0; kt < ntiles; kt++) {
        const int k0 = kt * TILE, k1 = min(k0 + TILE, T);
        if (tile_masked(&m, doc, q0, q1, k0, k1)) continue;  // the same answer for the whole block
        __syncthreads();                                      // the previous tile is consumed
        load_rows(&sK[0][0], PITCH(sK), kb, k0, TILE, k1, rs, HD);
        load_rows(&sV[0][0], PITCH(sV), vb, k0, TILE, k1, rs, HD);
        __syncthreads();
        const int j = k0 + lane;
#pragma unroll
        for (int rr = 0; rr < FWD_RPW; rr++) {
            const int r = warp * FWD_RPW + rr, i = q0 + r;
            if (i >= T) break;  // the same for the whole warp
            const bool ok = j < k1 && allowed(&m, doc, i, j);
            float s = -INFINITY;
            if (ok) {
                float acc = 0.0f;
                for (int d = 0; d < HD; d++) acc += sQ[r][d] * sK[lane][d];
                s = acc * scale;
            }
            const float mt = gm_warp_max(s);
            if (mt == -INFINITY) continue;  // no visible key in this tile for row i (whole warp)
            const float mnew = fmaxf(mrow[rr], mt);
            const float p = ok ? expf(s - mnew) : 0.0f;
            const float corr = expf(mrow[rr] - mnew);  // 0 while the row is still empty
            lrow[rr] = lrow[rr] * corr + gm_warp_sum(p);
#pragma unroll
            for (int c = 0; c < DC; c++) o[rr][c] *= corr;
            for (int jj = 0; jj < TILE; jj++) {
                const float pj = __shfl_sync(GM_FULL_MASK, p, jj);
#pragma unroll
                for (int c = 0; c < DC; c++) {
                    const int d = lane + 32 * c;
                    if (d < HD) o[rr][c] += pj * sV[jj][d];
                }
            }
            mrow[rr] = mnew;
        }
    }
    // Every row sees at least its own key (k = q is always allowed), so lrow > 0.
    gm_cuda_act *ob = HEAD_BASE(out, b, h);
#pragma unroll
    for (int rr = 0; rr < FWD_RPW; rr++) {
        const int i = q0 + warp * FWD_RPW + rr;
        if (i >= T) break;
#pragma unroll
        for (int c = 0; c < DC; c++) {
            const int d = lane + 32 * c;
            if (d < HD) gm_act_st(ob, (size_t)i * rs + d, o[rr][c] / lrow[rr]);
        }
        if (lane == 0) lse[((size_t)b * NH + h) * T + i] = mrow[rr] + logf(lrow[rr]);
    }
}

// ---- backward 1: dq; grid (ceil(T / BWD_ROWS), NH, B); warps own query rows, lanes take keys ----
__global__ static void __launch_bounds__(WARPS * 32)
    attn_bwd_dq_kernel(gm_cuda_act *dq, gm_grad_write w, const gm_cuda_act *dout, const gm_cuda_act *q,
                       const gm_cuda_act *k, const gm_cuda_act *v, const float *lse, const float *D, int T, int NH,
                       int HD, float scale, gm_attn_mask m) {
    __shared__ float sQ[BWD_ROWS][MAX_HD];
    __shared__ float sO[BWD_ROWS][MAX_HD];  // dout rows
    __shared__ float sK[TILE][MAX_HD + 1];
    __shared__ float sV[TILE][MAX_HD + 1];
    const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int q0 = blockIdx.x * BWD_ROWS, q1 = min(q0 + BWD_ROWS, T);
    const size_t rs = (size_t)NH * HD;
    const gm_cuda_act *qb = HEAD_BASE(q, b, h), *ob = HEAD_BASE(dout, b, h);
    const gm_cuda_act *kb = HEAD_BASE(k, b, h), *vb = HEAD_BASE(v, b, h);
    const float *lrow = lse + ((size_t)b * NH + h) * T, *Drow = D + ((size_t)b * NH + h) * T;
    const int32_t *doc = m.doc ? m.doc + (size_t)b * T : NULL;

    load_rows(&sQ[0][0], PITCH(sQ), qb, q0, BWD_ROWS, T, rs, HD);
    load_rows(&sO[0][0], PITCH(sO), ob, q0, BWD_ROWS, T, rs, HD);
    float acc[BWD_RPW][DC], lse_i[BWD_RPW], D_i[BWD_RPW];
#pragma unroll
    for (int rr = 0; rr < BWD_RPW; rr++) {
        const int i = q0 + warp * BWD_RPW + rr;
        lse_i[rr] = i < T ? lrow[i] : 0.0f;
        D_i[rr] = i < T ? Drow[i] : 0.0f;
#pragma unroll
        for (int c = 0; c < DC; c++) acc[rr][c] = 0.0f;
    }

    const int ntiles = (q1 - 1) / TILE + 1;
    for (int kt = 0; kt < ntiles; kt++) {
        const int k0 = kt * TILE, k1 = min(k0 + TILE, T);
        if (tile_masked(&m, doc, q0, q1, k0, k1)) continue;
        __syncthreads();
        load_rows(&sK[0][0], PITCH(sK), kb, k0, TILE, k1, rs, HD);
        load_rows(&sV[0][0], PITCH(sV), vb, k0, TILE, k1, rs, HD);
        __syncthreads();
        const int j = k0 + lane;
#pragma unroll
        for (int rr = 0; rr < BWD_RPW; rr++) {
            const int r = warp * BWD_RPW + rr, i = q0 + r;
            if (i >= T) break;
            float ds = 0.0f;
            if (j < k1 && allowed(&m, doc, i, j)) {
                float s = 0.0f, dp = 0.0f;
                for (int d = 0; d < HD; d++) s += sQ[r][d] * sK[lane][d];
                for (int d = 0; d < HD; d++) dp += sO[r][d] * sV[lane][d];
                const float p = expf(s * scale - lse_i[rr]);
                ds = p * (dp - D_i[rr]) * scale;
            }
            for (int jj = 0; jj < TILE; jj++) {
                const float dsj = __shfl_sync(GM_FULL_MASK, ds, jj);
#pragma unroll
                for (int c = 0; c < DC; c++) {
                    const int d = lane + 32 * c;
                    if (d < HD) acc[rr][c] += dsj * sK[jj][d];
                }
            }
        }
    }
    gm_cuda_act *dqb = HEAD_BASE(dq, b, h);
#pragma unroll
    for (int rr = 0; rr < BWD_RPW; rr++) {
        const int i = q0 + warp * BWD_RPW + rr;
        if (i >= T) break;
#pragma unroll
        for (int c = 0; c < DC; c++) {
            const int d = lane + 32 * c;
            if (d < HD) gm_act_put(dqb, (size_t)i * rs + d, w, acc[rr][c]);
        }
    }
}

// ---- backward 2: dk, dv; grid (ceil(T / BWD_ROWS), NH, B); warps own key rows, lanes take queries ----
__global__ static void __launch_bounds__(WARPS * 32)
    attn_bwd_dkdv_kernel(gm_cuda_act *dk, gm_cuda_act *dv, gm_grad_write w, const gm_cuda_act *dout,
                         const gm_cuda_act *q, const gm_cuda_act *k, const gm_cuda_act *v, const float *lse,
                         const float *D, int T, int NH, int HD, float scale, gm_attn_mask m) {
    __shared__ float sQ[TILE][MAX_HD + 1];
    __shared__ float sO[TILE][MAX_HD + 1];  // dout rows
    __shared__ float sK[BWD_ROWS][MAX_HD];
    __shared__ float sV[BWD_ROWS][MAX_HD];
    __shared__ float sL[TILE], sD[TILE];
    const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int k0 = blockIdx.x * BWD_ROWS, k1 = min(k0 + BWD_ROWS, T);
    const size_t rs = (size_t)NH * HD;
    const gm_cuda_act *qb = HEAD_BASE(q, b, h), *ob = HEAD_BASE(dout, b, h);
    const gm_cuda_act *kb = HEAD_BASE(k, b, h), *vb = HEAD_BASE(v, b, h);
    const float *lrow = lse + ((size_t)b * NH + h) * T, *Drow = D + ((size_t)b * NH + h) * T;
    const int32_t *doc = m.doc ? m.doc + (size_t)b * T : NULL;

    load_rows(&sK[0][0], PITCH(sK), kb, k0, BWD_ROWS, T, rs, HD);
    load_rows(&sV[0][0], PITCH(sV), vb, k0, BWD_ROWS, T, rs, HD);
    float dka[BWD_RPW][DC], dva[BWD_RPW][DC];
#pragma unroll
    for (int rr = 0; rr < BWD_RPW; rr++)
#pragma unroll
        for (int c = 0; c < DC; c++) dka[rr][c] = 0.0f, dva[rr][c] = 0.0f;

    const int ntiles = (T - 1) / TILE + 1;
    for (int qt = k0 / TILE; qt < ntiles; qt++) {
        const int qa = qt * TILE, qz = min(qa + TILE, T);
        if (tile_masked(&m, doc, qa, qz, k0, k1)) continue;
        __syncthreads();
        load_rows(&sQ[0][0], PITCH(sQ), qb, qa, TILE, qz, rs, HD);
        load_rows(&sO[0][0], PITCH(sO), ob, qa, TILE, qz, rs, HD);
        if (threadIdx.x < TILE) {
            bool in = qa + (int)threadIdx.x < qz;
            sL[threadIdx.x] = in ? lrow[qa + threadIdx.x] : 0.0f;
            sD[threadIdx.x] = in ? Drow[qa + threadIdx.x] : 0.0f;
        }
        __syncthreads();
        const int i = qa + lane;
#pragma unroll
        for (int rr = 0; rr < BWD_RPW; rr++) {
            const int r = warp * BWD_RPW + rr, j = k0 + r;
            if (j >= T) break;
            float p = 0.0f, ds = 0.0f;
            if (i < qz && allowed(&m, doc, i, j)) {
                float s = 0.0f, dp = 0.0f;
                for (int d = 0; d < HD; d++) s += sQ[lane][d] * sK[r][d];
                for (int d = 0; d < HD; d++) dp += sO[lane][d] * sV[r][d];
                p = expf(s * scale - sL[lane]);
                ds = p * (dp - sD[lane]) * scale;
            }
            for (int ii = 0; ii < TILE; ii++) {
                const float pi = __shfl_sync(GM_FULL_MASK, p, ii), dsi = __shfl_sync(GM_FULL_MASK, ds, ii);
#pragma unroll
                for (int c = 0; c < DC; c++) {
                    const int d = lane + 32 * c;
                    if (d < HD) {
                        dva[rr][c] += pi * sO[ii][d];
                        dka[rr][c] += dsi * sQ[ii][d];
                    }
                }
            }
        }
    }
    gm_cuda_act *dkb = HEAD_BASE(dk, b, h), *dvb = HEAD_BASE(dv, b, h);
#pragma unroll
    for (int rr = 0; rr < BWD_RPW; rr++) {
        const int j = k0 + warp * BWD_RPW + rr;
        if (j >= T) break;
#pragma unroll
        for (int c = 0; c < DC; c++) {
            const int d = lane + 32 * c;
            if (d < HD) {
                gm_act_put(dkb, (size_t)j * rs + d, w, dka[rr][c]);
                gm_act_put(dvb, (size_t)j * rs + d, w, dva[rr][c]);
            }
        }
    }
}

void gm_cuda_attn_naive_fwd(gm_cuda_ctx *c, gm_cuda_act *out, float *lse, const gm_cuda_act *q,
                            const gm_cuda_act *k, const gm_cuda_act *v, int B, int T, int NH, int HD, double scale,
                            gm_attn_mask m) {
    dim3 grid((T + FWD_ROWS - 1) / FWD_ROWS, NH, B);
    attn_fwd_kernel<<<grid, WARPS * 32, 0, c->stream>>>(out, lse, q, k, v, T, NH, HD, (float)scale, m);
    GM_CU_LAUNCHED(c);
}

void gm_cuda_attn_naive_bwd(gm_cuda_ctx *c, gm_cuda_act *dq, gm_cuda_act *dk, gm_cuda_act *dv, gm_grad_write w,
                            const gm_cuda_act *dout, const gm_cuda_act *q, const gm_cuda_act *k, const gm_cuda_act *v,
                            const float *lse, const float *D, int B, int T, int NH, int HD, double scale,
                            gm_attn_mask m) {
    dim3 grid((T + BWD_ROWS - 1) / BWD_ROWS, NH, B);
    attn_bwd_dq_kernel<<<grid, WARPS * 32, 0, c->stream>>>(dq, w, dout, q, k, v, lse, D, T, NH, HD, (float)scale, m);
    GM_CU_LAUNCHED(c);
    attn_bwd_dkdv_kernel<<<grid, WARPS * 32, 0, c->stream>>>(dk, dv, w, dout, q, k, v, lse, D, T, NH, HD, (float)scale,
                                                             m);
    GM_CU_LAUNCHED(c);
}
