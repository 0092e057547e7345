// The tensor-core attention's tile products (attention_mma.cu), of the two kinds every kernel
// runs: A B^T with both sides from shared memory, read along head_dim (S = Q K^T, dP = dO V^T, and
// with keys as rows S^T = K Q^T, dP^T = V dO^T), and X B with X an fp32 accumulator rounded to
// bf16 A fragments and B a streamed tile (O += P V, dQ += dS K, dV += P^T dO, dK += dS^T Q).
//
// mma.sync (mma_sm80.cuh; the mma.sync kernels, 16 rows a warp and m-tile), m16n8k16 with .bf16,
// g = lane / 4, t = lane % 4 (PTX ISA):
//   A 16x16 row-major: a0 (row g, cols 2t, 2t+1), a1 (row g+8, same), a2 (row g, cols 2t+8, +9),
//                      a3 (row g+8, cols 2t+8, +9); two bf16 per register, lower column low.
//   B 16x8 (k x n):    b0 (k 2t, 2t+1; n g), b1 (k 2t+8, +9; n g).
//   C/D 16x8 fp32:     c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8, same).
// Fragments come from shared memory with ldmatrix.x4 (four 8x8 b16 matrices; lanes 8i..8i+7 give
// the row addresses of matrix i, register i receives it); .trans gives the B fragment of a matrix
// stored k-major (V in P V, K in dS K, dO and Q in the dk/dv products). The accumulator of S
// (16 x 16 keys) becomes the A operand of P V without moving data: a0 = (c0, c1) of n-tile 2j,
// a1 = (c2, c3) of 2j, a2 = (c0, c1) of 2j+1, a3 = (c2, c3) of 2j+1.
//
// wgmma (wgmma_sm90.cuh, sm_90a; the WG kernels): a warpgroup's 64 rows (queries, or keys in
// dk/dv) are one m64 tile. A B^T is HD/16 wgmma m64n64k16 reading both sides from shared memory
// through descriptors (wg_abt_issue); X B is 4 wgmma m64n(HD)k16 with X from registers in mma.sync's
// A layout and B read transposed (wg_xb_issue). wgmma's accumulators have mma.sync's fragment
// layout per warp (a warp's 16 rows, n-tiles of 8 in order), so the softmax, the mask and the
// stores are one code for both kinds.
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_PRODUCTS_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_PRODUCTS_CUH

#include "backend/cuda/attention_mma_shapes.cuh"
#include "backend/cuda/mma_sm80.cuh"
#include "backend/cuda/wgmma_sm90.cuh"

// This lane's ldmatrix row address inside a 16 x 16 block at (row 0, col 0) of a shared tile of
// pitch P. A operand (and .trans B operand of a k-major tile): matrices (rows 0-7, cols 0-7),
// (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) -> lane row lane % 16, col (lane / 16) * 8.
static __device__ __forceinline__ const __nv_bfloat16 *a_addr(const __nv_bfloat16 *tile, int P) {
    const int lane = threadIdx.x % 32;
    return tile + (lane % 16) * P + (lane / 16) * 8;
}
// B operand of an n-major tile (rows n, contiguous k) for two n-tiles: matrices (n 0-7, k 0-7),
// (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15): registers {0, 1} are n-tile 0's b0, b1 and
// {2, 3} n-tile 1's.
static __device__ __forceinline__ const __nv_bfloat16 *b_addr(const __nv_bfloat16 *tile, int P) {
    const int lane = threadIdx.x % 32;
    return tile + ((lane & 7) + ((lane >> 4) << 3)) * P + ((lane >> 3) & 1) * 8;
}

// Two n-tiles acc[0], acc[1] += a times the B fragments of one ldmatrix.x4 (b0, b1 of each).
static __device__ __forceinline__ void mma_pair(float (*acc)[4], const uint32_t a[4], const uint32_t b[4]) {
    mma16816(acc[0], a, b[0], b[1]);
    mma16816(acc[1], a, b[2], b[3]);
}

// acc (16 M x 8*NT: M m-tiles of NT n-tiles, acc[m NT + n]) += A (16 M x 16*KS from shared rows,
// A layout) * B^T where B is an n-major shared tile (8*NT rows of 16*KS): S = Q K^T, dP = dO V^T,
// S^T = K Q^T, dP^T = V dO^T. Each B fragment loaded feeds the M m-tiles.
static __device__ __forceinline__ void mma_abt(float (*acc)[4], const __nv_bfloat16 *A, const __nv_bfloat16 *Bt,
                                               int P, const int NT, const int KS, const int M) {
    const __nv_bfloat16 *pa = a_addr(A, P), *pb = b_addr(Bt, P);
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        uint32_t a[2][4];
#pragma unroll
        for (int mt = 0; mt < M; mt++) ldsm_x4(a[mt], pa + mt * 16 * P + ks * 16);
#pragma unroll
        for (int n = 0; n < NT; n += 2) {
            uint32_t b[4];
            ldsm_x4(b, pb + n * 8 * P + ks * 16);
#pragma unroll
            for (int mt = 0; mt < M; mt++) mma_pair(acc + mt * NT + n, a[mt], b);
        }
    }
}

// The A fragment (mma.sync's A layout) of columns 16 kk .. 16 kk + 15 of a warp's 16-row fp32
// accumulator x (n-tiles of 8 columns), rounded to bf16: the A side of mma_xb's and wgmma's
// products from registers.
static __device__ __forceinline__ void pack_a_frag(uint32_t a[4], const float (*x)[4], int kk) {
    a[0] = pack_bf16(x[2 * kk][0], x[2 * kk][1]), a[1] = pack_bf16(x[2 * kk][2], x[2 * kk][3]);
    a[2] = pack_bf16(x[2 * kk + 1][0], x[2 * kk + 1][1]), a[3] = pack_bf16(x[2 * kk + 1][2], x[2 * kk + 1][3]);
}

// acc (16 M x 8*NT, acc[m NT + n]) += X (16 M x 16*KS, fp32 accumulator layout x[m 2KS + j],
// rounded to bf16 here) * B where B is a k-major shared tile (16*KS rows of 8*NT): O += P V,
// dQ += dS K, dV += P^T dO, dK += dS^T Q. Each B fragment loaded feeds the M m-tiles.
static __device__ __forceinline__ void mma_xb(float (*acc)[4], const float (*x)[4], const __nv_bfloat16 *B, int P,
                                              const int NT, const int KS, const int M) {
    const __nv_bfloat16 *pb = a_addr(B, P);
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        uint32_t a[2][4];
#pragma unroll
        for (int mt = 0; mt < M; mt++) pack_a_frag(a[mt], x + mt * 2 * KS, ks);
#pragma unroll
        for (int n = 0; n < NT; n += 2) {
            uint32_t b[4];
            ldsm_x4_trans(b, pb + ks * 16 * P + n * 8);
#pragma unroll
            for (int mt = 0; mt < M; mt++) mma_pair(acc + mt * NT + n, a[mt], b);
        }
    }
}

// NT accumulator tiles (16 x 8 each, this lane's 4 values) set to 0.
static __device__ __forceinline__ void zero(float (*acc)[4], const int NT) {
#pragma unroll
    for (int n = 0; n < NT; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
}

// This thread's warpgroup (0 or 1), broadcast from lane 0 so that the compiler knows it is the same
// across the warp: the descriptors built from it then stay in uniform registers, where a value it
// takes as per-thread goes through R2UR for each wgmma (cuobjdump -sass).
static __device__ __forceinline__ int warpgroup(void) { return __shfl_sync(GM_FULL_MASK, (int)threadIdx.x / 128, 0); }
// This thread's warp, broadcast the same way: a branch on it is one ptxas knows each warp takes
// whole, so that the code after it keeps the uniform datapath. Branching on threadIdx.x instead (the
// head_dim-128 forward's producer warp, up to 2026-11-28) left the consumers' loop after it on
// per-thread registers: each wgmma descriptor a 64-bit add with carry and R2URs, ~12 instructions
// a product where a uniform add is one; a full tile 395 instructions a thread where it is 296
// (cuobjdump -sass), registers 157 where they are 146.
static __device__ __forceinline__ int warp_index(void) { return __shfl_sync(GM_FULL_MASK, (int)threadIdx.x / 32, 0); }

// Byte offset in a sw128 slab of row 0's columns 16 ks.. (a K-major product's step ks): panel
// 16 ks / 64 (8192 bytes each), then 32 bytes a step inside the row (the swizzle's XOR is the
// hardware's, on the address).
static __device__ __forceinline__ uint32_t sw128_k_bytes(int ks) { return ks / 4 * 64 * 64 * 2 + ks % 4 * 32; }

// s (this warp's 16 rows x 64 columns, s[n][4]: wgmma's accumulator order, the same fragments as
// mma.sync's n-tiles) = A B^T for the warpgroup's 64 rows of A (S = Q K^T, dP = dO V^T, and with
// keys as rows S^T = K Q^T, dP^T = V dO^T): HD/16 wgmma m64n64k16 reading A (from the warpgroup's
// first row) and the 64-row streamed tile B from shared memory (sw128 slabs), K-major: SBO the next
// 8 rows (1024 bytes on), columns 16 ks.. at sw128_k_bytes(ks) from the slab. With s2: a second,
// independent product s2 = A2 B2^T issued behind the first (the backward's S and dP), so the tensor
// cores run both before the one wait. Issued and committed as one group, or with `apart` as two,
// s's then s2's, so that a wait for s alone lets s2's product run on (s, s2 the wgmma's until a
// wait completes their group).
static __device__ __forceinline__ void wg_abt_issue(float (*s)[4], const __nv_bfloat16 *A, const __nv_bfloat16 *B,
                                                    const int HD, float (*s2)[4] = nullptr,
                                                    const __nv_bfloat16 *A2 = nullptr,
                                                    const __nv_bfloat16 *B2 = nullptr, bool apart = false) {
    const uint32_t lbo = 16, sbo = 1024;  // LBO unused (K-major, swizzled), 1 as CUTLASS sets it
    float *d = &s[0][0], *d2 = s2 ? &s2[0][0] : nullptr;
    wgmma_hold(d, KEY_TILE / 2);
    if (d2) wgmma_hold(d2, KEY_TILE / 2);
    wgmma_fence();
    const uint64_t da = wgmma_desc(A, lbo, sbo), db = wgmma_desc(B, lbo, sbo);
#pragma unroll
    for (int ks = 0; ks < HD / 16; ks++)
        wgmma_m64n64k16_ss<0, 0>(d, wgmma_desc_plus(da, sw128_k_bytes(ks)), wgmma_desc_plus(db, sw128_k_bytes(ks)),
                                 ks > 0);
    if (d2) {
        if (apart) wgmma_commit();
        const uint64_t da2 = wgmma_desc(A2, lbo, sbo), db2 = wgmma_desc(B2, lbo, sbo);
#pragma unroll
        for (int ks = 0; ks < HD / 16; ks++)
            wgmma_m64n64k16_ss<0, 0>(d2, wgmma_desc_plus(da2, sw128_k_bytes(ks)),
                                     wgmma_desc_plus(db2, sw128_k_bytes(ks)), ks > 0);
    }
    wgmma_commit();
}

// The warp's 16 x 64 accumulator x as the four A fragments of a wgmma product: a[kk] is columns
// 16 kk .. 16 kk + 15.
static __device__ __forceinline__ void pack_a(uint32_t (*a)[4], const float (*x)[4]) {
#pragma unroll
    for (int kk = 0; kk < KEY_TILE / 16; kk++) pack_a_frag(a[kk], x, kk);
}

// o (this warp's 16 rows x HD) += X B: 4 wgmma m64n(HD)k16 with X (A fragments a from pack_a) from
// registers and the 64-row streamed tile B from shared memory (a sw128 slab), read MN-major
// (transposed: SBO the next 8 rows, 1024 bytes on; LBO the next 64 columns, a panel on):
// O += P V, dQ += dS K, dV += P^T dO, dK += dS^T Q; issued and committed as one group (o and a the
// wgmma's until a wait completes it).
static __device__ __forceinline__ void wg_xb_issue(float (*o)[4], uint32_t (*a)[4], const __nv_bfloat16 *B,
                                                   const int HD) {
    const uint32_t lbo = 64 * 64 * 2, sbo = 1024;
    float *d = &o[0][0];
    wgmma_hold(d, HD / 2);
    wgmma_hold_a(&a[0][0], KEY_TILE / 4);
    wgmma_fence();
    const uint64_t db = wgmma_desc(B, lbo, sbo);
#pragma unroll
    for (int kk = 0; kk < KEY_TILE / 16; kk++) {  // rows 16 kk.. of B: two atoms on
        const uint64_t desc = wgmma_desc_plus(db, 2 * 1024 * kk);
        if (HD == 128) wgmma_m64n128k16_rs(d, a[kk], desc);
        else wgmma_m64n64k16_rs(d, a[kk], desc);
    }
    wgmma_commit();
}

#endif
