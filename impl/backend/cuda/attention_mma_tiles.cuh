// Global activation tiles into the tensor-core attention's shared bf16 tiles (attention_mma.cu),
// and its outputs' stores. Two layouts (tile_at): pitched rows of HD + 8 elements (144 or 272
// bytes, 4 banks apart, so the 8 rows of each ldmatrix phase cover the 32 banks once), which the
// mma.sync kernels read; and the 128-byte swizzle wgmma's descriptors describe (wgmma_sm90.cuh).
// Copies go along rows: consecutive threads read consecutive 16 bytes (whole 128-byte lines). A
// bf16 element is copied as it is by cp.async (rows past T zero-filled), overlapping the math; an
// fp32 one is loaded, rounded to bf16 (nearest even) and stored synchronously, where it is copied
// (no overlap). The wgmma kernels' bf16 tiles come by TMA instead (attention_mma_ring.cuh).
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_TILES_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_TILES_CUH

#include "backend/cuda/attention_mma_shapes.cuh"
#include "backend/cuda/mma_sm80.cuh"

// 16-byte chunks (GM_ACT_VEC elements) per thread for a tile of R rows copied by NTH threads.
#define CHUNKS(R, HD, NTH) ((R) * (HD) / GM_ACT_VEC / (NTH))

// The two layouts of a shared bf16 tile (rows of HD): pitched, rows of PITCH(HD) elements (what
// ldmatrix reads), or sw128, the 128-byte swizzled layout wgmma reads through a descriptor
// (wgmma_sm90.cuh): slabs of 64 rows, 64 HD elements each (a warpgroup's rows); a slab HD / 64
// panels of 64 rows x 64 columns; a panel's row r 128 bytes at r 128, its 16-byte chunk c at chunk
// c ^ (r % 8). A sw128 tile starts on a 1024-byte boundary (swizzle_base). Element offset of (row
// r, column col):
static __host__ __device__ __forceinline__ int tile_at(int r, int col, const int HD, const bool sw128) {
    return sw128 ? (r / 64 * HD + col / 64 * 64) * 64 + r % 64 * 64 + ((col % 64 / 8) ^ (r % 8)) * 8 + col % 8
                 : r * PITCH(HD) + col;
}
// Elements a tile row takes in the carving of shared memory: sw128 tiles have no padding (their
// bank conflicts are the swizzle's to avoid), so each stays on a 1024-byte boundary after the first.
#define TILE_PITCH(HD, WG) ((WG) ? (HD) : PITCH(HD))

// Rows [r0, r0 + R) of one head (src: its row 0, row stride rs elements) into a shared bf16 tile
// (pitched, or sw128), zeros past T, in 16-byte chunks copied by the block's NTH threads along
// rows: consecutive threads read consecutive 16 bytes of a row (whole 128-byte lines) and a phase
// of stores covers the 32 banks once (a pitched row's 128 bytes, or a swizzled row's 8 chunks in
// another order). A bf16 element is copied as it is by cp.async (rows past T zero-filled), landing
// at this thread's wait for its copies (cp_async_wait_all, or the wait for the tile's group); an
// fp32 one is loaded into registers (all loads in flight first), rounded to bf16 (nearest even)
// and stored, 8 bytes a chunk, before the return. Either way the tile is the block's after that
// wait and a barrier.
static __device__ __forceinline__ void load_rows(__nv_bfloat16 *dst, const gm_cuda_act *__restrict__ src, int r0,
                                                 const int R, int T, size_t rs, const int HD, const int NTH,
                                                 const bool sw128 = false) {
    // Chunks per row, a divisor of NTH (8, 16 or 32 of 128 or 256). This thread's chunk `it` is
    // row it NTH / CPR + threadIdx.x / CPR, column threadIdx.x % CPR: its rows step by a constant,
    // so the compiler makes one address and immediate offsets (from it NTH + threadIdx.x, a signed
    // int, it made and kept an address a chunk: the mma32 forward spilled 7 of them).
    const int CPR = HD / GM_ACT_VEC, c = threadIdx.x % CPR, row0 = threadIdx.x / CPR;
    if constexpr (sizeof(gm_cuda_act) == 2) {
#pragma unroll
        for (int it = 0; it < CHUNKS(R, HD, NTH); it++) {
            const int r = it * (NTH / CPR) + row0;
            const bool in = r0 + r < T;
            cp_async16(dst + tile_at(r, GM_ACT_VEC * c, HD, sw128),
                       src + (size_t)(in ? r0 + r : 0) * rs + GM_ACT_VEC * c, in ? 16 : 0);
        }
    } else {
        uint4 reg[CHUNKS(BLOCK_ROWS, MAX_HD, NTHREADS(2))];  // the most a thread copies
#pragma unroll
        for (int it = 0; it < CHUNKS(R, HD, NTH); it++) {
            const int r = it * (NTH / CPR) + row0;
            reg[it] = r0 + r < T ? *(const uint4 *)(src + (size_t)(r0 + r) * rs + GM_ACT_VEC * c)
                                 : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int it = 0; it < CHUNKS(R, HD, NTH); it++) {
            const int r = it * (NTH / CPR) + row0;
            const uint4 x = reg[it];
            *(uint2 *)(dst + tile_at(r, GM_ACT_VEC * c, HD, sw128)) =
                make_uint2(pack_bf16(__uint_as_float(x.x), __uint_as_float(x.y)),
                           pack_bf16(__uint_as_float(x.z), __uint_as_float(x.w)));
        }
    }
}

// Elements p[0], p[1] (a pair, aligned to its size) written as gm_act_put does: x, y in fp32, an
// ADD widening the old elements first, each rounded to the element once; one 8- or 4-byte store.
static __device__ __forceinline__ void put_pair(gm_cuda_act *p, gm_grad_write w, float x, float y) {
    struct __align__(2 * sizeof(gm_cuda_act)) pair {
        gm_cuda_act a, b;
    };
    if (w == GM_GRAD_ADD) {  // a SET never reads p
        const pair old = *(const pair *)p;
        x = gm_act_widen(old.a) + x, y = gm_act_widen(old.b) + y;
    }
    pair v;
    gm_act_round(&v.a, x), gm_act_round(&v.b, y);
    *(pair *)p = v;
}

// n floats (a multiple of 4) of a per-query vector (lse2, D: padded to whole tiles, attention.cuh)
// from src into shared memory by NTH threads' 16-byte cp.async: they land with the tile they belong
// to, at the copying thread's wait for its copies. Why not loads and stores: a store waits for its
// load, so right after each tile's barrier every warp waited a global-memory latency (by reading
// the code; timed only together with the other changes since 1772e6e: H200, run 8,
// reports/gpu-h200/README.md).
static __device__ __forceinline__ void copy_vec(float *dst, const float *src, const int n, const int NTH) {
    for (int i = threadIdx.x; i < n / 4; i += NTH) cp_async16(dst + 4 * i, src + 4 * i, 16);
}

// The tiles a block streams through its ring (a stage is read while the next ones are filled):
// key tile [k0, k0 + KEY_TILE) of the forward and dq kernels: K, V rows (k, v: the head's row 0),
// by the block's NTH threads (pitched: the mma.sync kernels').
static __device__ __forceinline__ void load_key_tile(__nv_bfloat16 *sK, __nv_bfloat16 *sV,
                                                     const gm_cuda_act *__restrict__ k,
                                                     const gm_cuda_act *__restrict__ v, int k0, int T, size_t rs,
                                                     const int HD, const int NTH) {
    load_rows(sK, k, k0, KEY_TILE, T, rs, HD, NTH);
    load_rows(sV, v, k0, KEY_TILE, T, rs, HD, NTH);
}
// Query tile [qa, qa + QT) of the dk/dv kernel: Q, dO rows (q, dout: the head's row 0), and per
// query lse2 and D (lse2, D: the head's padded vectors, attention.cuh).
static __device__ __forceinline__ void load_query_tile(__nv_bfloat16 *sQ, __nv_bfloat16 *sO, float *sL, float *sD,
                                                       const gm_cuda_act *__restrict__ q,
                                                       const gm_cuda_act *__restrict__ dout,
                                                       const float *__restrict__ lse2, const float *__restrict__ D,
                                                       int qa, const int QT, int T, size_t rs, const int HD) {
    load_rows(sQ, q, qa, QT, T, rs, HD, BWD_THREADS);
    load_rows(sO, dout, qa, QT, T, rs, HD, BWD_THREADS);
    copy_vec(sL, lse2 + qa, QT, BWD_THREADS);
    copy_vec(sD, D + qa, QT, BWD_THREADS);
}

#endif
