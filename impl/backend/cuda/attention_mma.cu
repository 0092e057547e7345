// Flash attention on bf16 tensor cores: mma.sync.m16n8k16 (bf16 inputs, fp32 accumulation) for
// head_dim 64 and 128, with the records' block mask, on the (B, T, NH, HD) activations of backend.h
// (act_elem.cuh's element: fp32 or bf16). Run on an H100 (2026-11-26, commit d81bddf, fp32
// element; reports/gpu-h100/) and, with the bf16 element and the 2-stage cp.async ring below, on
// H200s (2026-11-27, commits 34feab9 to 301becd; reports/gpu-h200/): every test of
// verify/test_cuda_attention_mma.c passed, memcheck found nothing, racecheck 0 hazards (the wgmma
// kernels too, at e4790d9), synccheck 0 errors (1772e6e). The 32-rows-a-warp forward and the wgmma
// forms first ran at ecc8627, right at once: mma32 bitwise the 16-row forward, wgmma within the
// bounds. Speed on the H200 at T 65536 on softcap's final window (run-e4790d9): forward 200 TFLOP/s
// (16 rows), 240 (32 rows), 222 (wgmma, overlapped; 190 before); backward 170 (mma.sync), 196
// (wgmma); FlexAttention 362 / 350 at ecc8627 (issue 31). With the records' documents every form
// runs at 105-122 (run-1772e6e/attention-docs.md), FlexAttention 217 / 224. attention.cu picks
// among them by those times. Before the
// H100 the device code had only been run on a CPU under a host emulation of mma.sync, ldmatrix and
// the warp collectives, outside the repository; verify/emu/ is such an emulation in the repository
// (mma_sm80.cuh's and wgmma_sm90.cuh's instructions; make verify runs it:
// verify/test_attn_emulated.c), under which every kernel here matches the CPU backend's dense
// reference.
//
// Precision: q, k, v and dout enter the MMAs as bf16: a bf16 element as it is, an fp32 one rounded
// (nearest even) as its tile is loaded into shared memory; scores, the softmax, lse, D and every
// accumulator are fp32; P (forward, dV) and dS (dQ, dK) are rounded to bf16 as the A operand of the
// next MMA (FlashAttention-2 does the same). out, dq, dk, dv are rounded to the activation element
// once, at their store (an ADD widens the old element, adds in fp32 and rounds once); lse is fp32.
//
// Forward (FlashAttention-2): a block of 8 warps owns 128 query rows of one (batch, head), 16 per
// warp (the m of m16n8k16), or of 4 warps, 32 per warp (M = 2 m-tiles: each K and V fragment
// loaded from shared memory feeds two MMAs; FlashAttention-2's shape); it walks key tiles of 64
// with an online softmax in the log2 domain (P = 2^(S scale log2 e - reference): one FFMA and one
// ex2.approx.ftz a score; the reference is the row's running maximum, moved, with the output's
// rescale, only when a row of the warp's m-tile gains more than 2^8; the scale must be positive,
// attention.cu sends no other here), and
// writes out and lse (B, NH, T).
// Streaming: the tiles a block walks (K and V in the forward and dq kernels, Q, dO and their
// per-query lse2, D in the dk/dv kernel) pass through a ring in shared memory with one block barrier
// per tile (the wgmma kernels with TMA instead give each stage back by an mbarrier and run their
// warpgroups apart: wg_release; not the one-pass backward, whose dS^T both warpgroups read): in the
// mma.sync forward and dq kernels 2 stages, tile i + 1 copied into one while tile i is computed
// from the other; in the wgmma forward and dq kernels and the dk/dv kernel (the *_STAGES
// constants) tiles i + 1 and i + 2 in flight while tile i is computed, one copy group a tile
// (with the documents' short rows a tile is short, and one tile of lead left the copy's latency
// exposed: by reading the code, not yet timed).
// With a bf16 element the mma.sync kernels' copies are cp.async (16 bytes, .cg) and the wgmma
// kernels' TMA box copies (one thread issues a group, every thread waits on its mbarrier: WG_TMA),
// both overlapping the math; an fp32 element is loaded, rounded to bf16 and stored synchronously
// at the same point (no overlap). The
// per-query vectors of dk/dv's query tiles (lse2, D: padded to whole tiles, attention.cuh) go with
// their tile: in the wgmma kernel with TMA by two bulk copies on the tile's barrier, else by 16-byte
// cp.async (copy_vec; up to c7fd396 they, and the doc ids every kernel then streamed, were loaded
// and stored right after the tile's barrier, each store waiting for its load: a memory latency a
// tile by reading the code, not yet measured; up to 2026-11-28 by 4-byte cp.async, bounded by T,
// and turned into log2 units in shared memory by the threads before the tile's barrier).
// Backward, deterministic (the two-kernel forms also free of atomics): D = rowsum(dout * out) and
// lse2 = lse log2(e), padded (attention.cu, one pass), then
//   dq kernel:   a block owns 128 query rows, walks key tiles of 64, recomputes P = exp2(S - lse),
//                dP = dO V^T, dS = P (dP - D), dQ += dS K, and adds scale * dQ once at the end;
//   dk/dv kernel: a block owns 128 key rows, walks query tiles of 64 (32 at head_dim 128: the
//                registers of dK and dV), computes S^T, P^T, dP^T = V dO^T and dS^T, dV += P^T dO,
//                dK += dS^T Q, and adds them once at the end.
// Every output element is summed by one thread in a fixed order, so runs repeat bit for bit. The
// price is S and dP computed twice (7 tile GEMMs per pair instead of FlashAttention-2's 5 with
// atomic dQ). The one-pass backward (GM_CUDA_ATTN_WGMMA1, wgmma only: dkdv_body with DQ) is
// FlashAttention-2's 5 with dQ's parts added over the key blocks in a fixed order behind a
// semaphore a query tile (ordered_sum.cuh; float atomics, but one part at a time): deterministic
// too, its dk and dv bitwise the wgmma dk/dv kernel's, its dq the same sum in another order (see
// dq_sum; executed under the emulation, not yet on a GPU).
//
// Mask (backend.h gm_attn_mask: causal, documents, sliding window of whole blocks), kept exactly:
// - key tiles a query block never sees are never visited: the key range starts at the window's
//   first block and at the first token of the first query's document (doc ids are nondecreasing;
//   with documents every token's bounds come from one pass a call, mask_bounds_body), and ends at
//   the diagonal; the dk/dv kernel's query range ends where the window (and the last key's
//   document) ends. With the records' 128-token blocks
//   the tiles align with the mask's blocks, so fully masked blocks cost nothing.
// - a tile pair where every query sees every key (tile_full) runs unmasked; any other one applies
//   the CPU's rule (attn_mask.h: gm_attn_allowed) to every (query, key) pair, as the one range it
//   leaves each row (row_bounds: a query's keys from the later of its window's first key and its
//   document's first token; a key's queries up to the first of its window's end, its document's and
//   T), so any block size is exact, not only 128 (before 8da4fbe a doc-id compare per pair; not yet
//   timed). Measured and
//   undone: each warp classifying its own 16 rows against the
//   tile (skip the math where they see none of it, no element mask where they see all), which
//   skips ~11-14% of the warp-tiles on the records' masks, ran 3-6% slower on the H200 at 26112b6
//   (reports/gpu-h200/run-26112b6/: window 14 at T 65536 3.10 / 7.67 ms fwd / bwd against 3.01 /
//   7.21 the run before, plain causal 33.5 / 93.6 against 31.7 / 89.6, the step's record mask
//   1.40 / 3.37 against 1.34 / 3.40): a skipping warp still waits at the tile's barrier, and the
//   classification sits between that barrier and the first MMA.
//   With the wgmma kernels' warpgroups apart (TMA: no block barrier a tile) each warpgroup walks
//   only the tiles its own 64 rows (keys in dk/dv) see, a span fixed once an item or block
//   (fwd_wg_span; not the one-pass backward, whose warpgroups share dS^T), and passes the others
//   with a wait and its stages' release: no classification a tile, and tile_full asks of the
//   warpgroup's rows. By bench/attn_tile_count.py (a count, not a measurement; documents of mean
//   700 of the bench's distribution, window 14, T 65536, seeds 1-3): 6-8% fewer warpgroup-tiles in
//   the forward, dq and dk/dv, 39-40% fewer with the element mask, the longer warpgroup's walk
//   2.4-2.9% shorter (partially masked tiles weighed 1.33; without documents 1.8%, 50%, 1.2%); not
//   yet timed.
// Padding: rows past T are loaded as zeros; their lse2 is +inf (P = 0) in the backward, keys past
// T are always masked (causal), and nothing past T is stored.
//
// Layouts (PTX ISA, mma.m16n8k16 with .bf16; g = lane / 4, t = lane % 4):
//   A 16x16 row-major: a0 (row g, cols 2t, 2t+1), a1 (row g+8, same), a2 (row g, cols 2t+8, +9),
//                      a3 (row g+8, cols 2t+8, +9); two bf16 per register, lower column low.
//   B 16x8 (k x n):    b0 (k 2t, 2t+1; n g), b1 (k 2t+8, +9; n g).
//   C/D 16x8 fp32:     c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8, same).
// Fragments come from shared memory with ldmatrix.x4 (four 8x8 b16 matrices; lanes 8i..8i+7 give
// the row addresses of matrix i, register i receives it); .trans gives the B fragment of a matrix
// stored k-major (V in P V, K in dS K, dO and Q in the dk/dv products). The accumulator of S
// (16 x 16 keys) becomes the A operand of P V without moving data: a0 = (c0, c1) of n-tile 2j,
// a1 = (c2, c3) of 2j, a2 = (c0, c1) of 2j+1, a3 = (c2, c3) of 2j+1.
// Shared tiles are bf16 rows of HD + 8 elements (a pitch of 144 or 272 bytes, 4 banks apart), so
// the 8 rows of each ldmatrix phase cover the 32 banks once: conflict-free. Global tiles are read
// in 16-byte chunks by consecutive threads along a row (whole 128-byte lines): a bf16 chunk (8
// elements) is stored to shared memory as it is, 16 bytes; an fp32 chunk (4 elements) is rounded
// and stored as 8 bytes of bf16 (either way a phase writes 128 contiguous bytes: conflict-free).
//
// Hopper (GM_CUDA_ATTN_WGMMA, sm_90a machine code on an sm_90 GPU; the WG template parameter): the
// same three kernels with their products by wgmma (wgmma_sm90.cuh), everything else shared. A
// block's two warpgroups own 64 rows each (queries, or keys in dk/dv); a product whose B side is a
// streamed tile read along head_dim (S = Q K^T, dP = dO V^T, S^T = K Q^T, dP^T = V dO^T) is HD/16
// wgmma m64n64k16 from shared memory (wg_abt_issue); one whose A side is an accumulator (P V, dS K,
// P^T dO, dS^T Q) is 4 wgmma m64n(HD)k16 with A from registers (rounded to bf16 in the A layout)
// and B read transposed (wg_xb_issue). The accumulators of wgmma have mma.sync's fragment layout
// per warp (a warp's 16 rows, n-tiles of 8 in order), so the softmax, the mask and the stores are
// the same code. Q, K, V, dO go to shared memory in the 128-byte swizzled layout wgmma's
// descriptors describe (tile_at's sw128, wgmma_sm90.cuh) instead of pitched rows, by TMA (the
// copy engine swizzles; with the fp32 element by the threads, a proxy fence ordering their stores
// before wgmma's reads); the dk/dv kernel walks query
// tiles of 64 (no fragment registers to hold). The forward overlaps a tile's softmax with the
// previous tile's P V (fwd_wg_body: FlashAttention-3's intra-warpgroup overlap; ptxas keeps its
// wgmma unserialized), the dq kernel a tile's P and dS with the previous tile's dQ product; the
// dk/dv kernel computes a tile's P^T while its dP^T product runs and dS^T while its dV product
// runs, and, with TMA, issues a tile's dK product at the next tile's start, before that tile's S^T
// and dP^T (DK_LAG: 250 registers, no serialization; overlapping the next tile's mask and P^T with
// the dK product, tried at c7fd396, made ptxas serialize its wgmma at 248 registers: C7518).
// Written against verify/emu/'s emulation of wgmma's descriptors, fragment layouts and
// asynchrony, then right on an H200 at its first run (ecc8627; the overlaps right at their first
// run too, e4790d9). The tiles come by TMA, and the forward's and dq's warpgroups run apart
// (stages given back on mbarriers, no block barrier a tile), since 2026-11-28, with the 128-byte
// swizzle; the dk/dv kernel's too (its lse2 and D by bulk copies) since the day's third session,
// and the forward also on persistent blocks (GM_CUDA_ATTN_WGMMA_PERSIST: fwd_wg_body's work items)
// and, at head_dim 128, with a producer warp of its own (FWD_PRODUCER); the dk/dv kernel's dK and
// dP^T products run under its CUDA cores' work since the day's fifth, and the forward's
// warpgroups can take turns to issue their products (FlashAttention-3's pingpong,
// GM_CUDA_ATTN_WGMMA_PINGPONG, wg_turn_wait) since the sixth: executed under the emulation, not yet
// on a GPU. Not yet done: a producer warp in the backward kernels (thread 0 issues, between its own
// products; since the seventh session waiting for the other warpgroup only where its own next tile
// needs it: wg_copy_ahead), the pingpong in the backward, and the one-pass backward apart (its
// dS^T is both warpgroups', one block barrier a tile). Nsight Compute (run-1772e6e) at the
// record's mask: one block of 8 warps an SM (12.5% occupancy), issue slots 25-34% busy, and 50%
// of the dq kernel's global sectors excess (35% dk/dv's; but 33-36% for the mma.sync kernels at
// run 4, whose copies go along rows). Up to 2026-11-28 the wgmma tiles were in the no-swizzle
// layout of 8 x 16-byte core matrices, which conflict-free stores filled 8 rows down first, so a
// quarter-warp's reads covered half of each 32-byte sector; the swizzled rows are copied along
// rows, whole lines (executed under the emulation, results the same to the bit; not yet on a GPU:
// the next run's profile says what the sectors did).
//
// Occupancy (nvcc 13.0 -Xptxas -v, sm_90a; see the kernels): 2 blocks per SM for the mma.sync
// forwards (8 warps of 16 rows, or 4 of 32) and the head_dim 64 wgmma forward, 1 block for the
// head_dim 128 wgmma forward (8 warps and, with TMA, its producer warp) and the backward kernels
// (8 warps); shared memory 55 to 210 KB per block
// (the *_smem functions).
//
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
#include "backend/cuda/mma_sm80.cuh"
#include "backend/cuda/ordered_sum.cuh"
#include "backend/cuda/tma_sm90.cuh"
#include "backend/cuda/wgmma_sm90.cuh"

extern "C" int gm_cuda_attn_mma_built(void) { return 1; }

#define MAX_HD 128
#define BLOCK_ROWS 128  // rows a block owns: queries (forward, dq) or keys (dk/dv)
// A warp owns M m-tiles (16 rows each) of them: the forward runs M = 1 or 2 (GM_CUDA_ATTN_MMA,
// GM_CUDA_ATTN_MMA32), the backward M = 1.
#define NWARPS(M) (BLOCK_ROWS / 16 / (M))
#define NTHREADS(M) (NWARPS(M) * 32)
#define BWD_THREADS NTHREADS(1)
#define KEY_TILE 64               // keys per step of the forward and dq kernels
// Queries per step of the dk/dv kernel: 32 at head_dim 128 with mma.sync (the registers of dK and
// dV), else 64 (wgmma's products need no fragment registers).
#define QUERY_TILE(HD, WG) ((HD) == 128 && !(WG) ? 32 : 64)
#define QUERY_STAGES 3  // the dk/dv kernel's query-tile ring: copies two tiles ahead
#define DQ_K_STAGES 4   // the wgmma dq kernel's key rings (two tiles ahead, K read a tile longer)
#define DQ_V_STAGES 3
#define FWD_K_STAGES 3  // the wgmma forward's rings (two tiles ahead, V read a tile longer)
#define FWD_V_STAGES 4
#define PITCH(HD) ((HD) + 8)                    // bf16 elements per shared row
#define LOG2E GM_ATTN_LOG2E
#define LN2 0.69314718055994531f

// ---- fragment addressing (the instructions: mma_sm80.cuh) ----

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

// ---- global activation tiles -> shared bf16 tiles ----

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
                  WG_BARS + QUERY_STAGES <= WG_MBARS,
              "the ring and every stage's empty barrier");
static_assert(FWD_K_STAGES <= WG_BARS && DQ_K_STAGES <= WG_BARS && QUERY_STAGES <= WG_BARS,
              "a group is copied after every warp gave back the K (dk/dv: query) stage it reuses, after waiting "
              "for the group a ring back: at most WG_BARS back, so a barrier is rearmed after every wait on it");
static_assert(GM_ATTN_QVEC_ROWS % BLOCK_ROWS == 0, "the per-query vectors cover a block's rows past T");
// The activations' tensor maps (q, k, v, dout) the wgmma kernels' TMA copies read.
typedef struct {
    CUtensorMap q, k, v, o;
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
static __device__ __forceinline__ void wg_release(uint64_t *empty, int stage) {
    if constexpr (WG_TMA) {
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
// reading the code; not yet timed.
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
// the code: the GPU has not yet timed the difference).
static __device__ __forceinline__ void copy_vec(float *dst, const float *src, const int n, const int NTH) {
    for (int i = threadIdx.x; i < n / 4; i += NTH) cp_async16(dst + 4 * i, src + 4 * i, 16);
}
// The same into a wgmma kernel's stage as group j: with TMA one bulk copy by the issuer (its bytes,
// WG_VEC_BYTES, counted in the group's wg_expect), else copy_vec by every thread (all issuers).
#define WG_VEC_BYTES(n) ((uint32_t)(n) * 4)
static __device__ __forceinline__ void wg_fetch_vec(float *dst, const float *src, uint64_t *bars, int j, const int n,
                                                    const int NTH) {
    if constexpr (WG_TMA) tma_load_bulk(dst, src, WG_VEC_BYTES(n), bars + j % WG_BARS);
    else copy_vec(dst, src, n, NTH);
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

// ---- the mask at tile level ----

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
// before its first tile (by reading the code; not yet timed), and every layer, head and kernel
// searched again.
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

// ---- the two kinds of product with wgmma (sm_90a; the WG kernels): mma_abt's and mma_xb's ----

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

// ---- forward: grid (ceil(T / 128), NH, B), NTHREADS(M) threads ----

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
// tiles, so that wait and the block's start weigh: by reading the code, not yet timed).
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
// reading the code; not yet timed.
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
// tile one of them passes is time saved (the header's count), not a wait at a block barrier.
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

// dS / scale = P (dP - D) over the dq kernel's 16 x KEY_TILE tile: s holds P and becomes dS / scale;
// D per row (this lane's rows g, g + 8).
static __device__ __forceinline__ void times_dp_minus_d(float (*s)[4], const float (*dp)[4], const float *Drow) {
#pragma unroll
    for (int n = 0; n < KEY_TILE / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[n][e] *= dp[n][e] - Drow[e / 2];
}

// ---- backward, dq: grid (ceil(T / 128), NH, B), BWD_THREADS (256) threads, a warp's 16 rows (M = 1);
// key tiles in a ring as the forward. WG: the three products by wgmma, as the forward's (S = Q K^T
// and dP = dO V^T by wg_abt_issue, dQ += dS K by wg_xb_issue, K read transposed) ----

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

// ---- backward, dk and dv: grid (ceil(T / 128), NH, B), BWD_THREADS (256) threads, a warp's 16 keys;
// query tiles in a ring as the forward's key tiles. WG: the four products by wgmma, a warpgroup's
// 64 keys as the A side (S^T = K Q^T and dP^T = V dO^T by wg_abt_issue over 64-query tiles,
// dV += P^T dO and dK += dS^T Q by wg_xb_issue, dO and Q read transposed; with TMA the warpgroups
// run apart, a query stage given back by each warp after its dK product, as the forward's key
// stages). DQ (with WG): the one-pass backward, grid (ceil(T / 128) NH B) ----
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
// writes that stay in L2 while the blocks keep together) and two barriers a tile.

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
// GPU test one_pass_backward at head_dim 64 is the check (not yet run).
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
    // barrier wait runs under it); the tile's query stage is given back, and the tile two ahead
    // copied into it, only then. (Issued at the end of its own tile and waited for in the next,
    // across the loop's back edge, ptxas serialized the kernel's wgmma: C7515.) With TMA only: the
    // threads' copies (fp32 element) overwrite that stage after the tile's block barrier, which
    // the product would still be reading; and not in the one-pass backward, whose dq product
    // waits for dK's anyway.
    constexpr bool DK_LAG = WG && WG_TMA && !DQ;
    extern __shared__ __align__(16) unsigned char smem[];
    const int P = TILE_PITCH(HD, WG), QT = QUERY_TILE(HD, WG);
    // sQ, sO, sL, sD: QUERY_STAGES stages each of QT queries; DQ: sDS (dS^T, 128 keys x 64 queries,
    // sw128 on a 1024-byte boundary like the tiles before it) and the block's work index
    __nv_bfloat16 *sK = (__nv_bfloat16 *)(WG ? swizzle_base(smem) : smem), *sV = sK + BLOCK_ROWS * P,
                  *sQ = sV + BLOCK_ROWS * P, *sO = sQ + QUERY_STAGES * QT * P, *sDS = sO + QUERY_STAGES * QT * P;
    // WG: the TMA barrier ring, then the query stages' empty barriers
    uint64_t *bars = (uint64_t *)(sDS + (DQ ? BLOCK_ROWS * 64 : 0)), *emptyQ = bars + WG_BARS;
    float *sL = (float *)(bars + (WG ? WG_MBARS : 0)), *sD = sL + QUERY_STAGES * QT;  // per query: lse2, D
    int32_t *sBound = (int32_t *)(sD + QUERY_STAGES * QT);
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
    // Query tile i into stage i % QUERY_STAGES, two tiles ahead: one cp.async group a tile (empty
    // past qend), the first also holding sK and sV; with WG wgmma's tile group i instead (with tile
    // 0 the block's K and V: qend > k0), its lse2 and D by the same copies.
    const auto load_tile = [&](int i) {
        const int qa = k0 + i * QT, stg = i % QUERY_STAGES;
        if (qa < qend) {
            float *cL = sL + stg * QT, *cD = sD + stg * QT;
            if constexpr (WG) {
                if (wg_issuer()) {
                    wg_reuse(emptyQ, stg, i / QUERY_STAGES);
                    wg_expect(bars, i,
                              2 * WG_TILE_BYTES(QT, HD) + 2 * WG_VEC_BYTES(QT) +
                                  (i == 0 ? 2 * WG_TILE_BYTES(BLOCK_ROWS, HD) : 0));
                    if (i == 0) {
                        wg_fetch(sK, &tm->k, k + head, bars, 0, b, h, k0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
                        wg_fetch(sV, &tm->v, v + head, bars, 0, b, h, k0, BLOCK_ROWS, T, rs, HD, BWD_THREADS);
                    }
                    wg_fetch(sQ + stg * QT * P, &tm->q, q + head, bars, i, b, h, qa, QT, T, rs, HD, BWD_THREADS);
                    wg_fetch(sO + stg * QT * P, &tm->o, dout + head, bars, i, b, h, qa, QT, T, rs, HD, BWD_THREADS);
                    wg_fetch_vec(cL, lse2 + vec + qa, bars, i, QT, BWD_THREADS);
                    wg_fetch_vec(cD, D + vec + qa, bars, i, QT, BWD_THREADS);
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
    // (i - 1) % QUERY_STAGES: ptxas computed that remainder again, 9 instructions a tile, cuobjdump)
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
            copied, upto, nq, wait, [&](int t) { return wg_free(emptyQ, t % QUERY_STAGES, t / QUERY_STAGES); },
            load_tile);
    };
    // (a pass before the span issues no TMA copy: the issuer is warpgroup 0's, whose span starts at
    // the block's first tile; see fwd_wg_pass)
    const auto dkdv_pass = [&](int i, bool issue) {
        cp_async_wait<1>();
        if (DK_LAG && issue) copy_ahead(i, true);
        wg_wait(bars, i);
        if constexpr (!WG_TMA) __syncthreads(), load_tile(i + 2);  // the block's one barrier a tile
        wg_release(emptyQ, i % QUERY_STAGES);
        if constexpr (WG_TMA) {  // (DK_LAG: with TMA, spans are its)
            if (issue) copy_ahead(i + 2, false);
            __syncwarp();
        }
    };
    int i = 0;
    if constexpr (SPAN)
        for (; i < ilo; i++) dkdv_pass(i, false);
    for (int qa = k0 + i * QT; SPAN ? i < ihi : qa < qend; qa += QT, i++) {  // QT divides 128: qa tile-aligned
        const int stage = i % QUERY_STAGES;
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
                // Into tile i - 1's stage, once both warpgroups have given it back (with DK_LAG
                // just above; there only if they have, copy_ahead), under dP^T's product: its
                // issuer's waits and TMA issue do not hold up the warpgroup's products.
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

// ---- the Hopper parts one at a time (gm_cuda_attn_wgmma_parts): one block of BWD_THREADS ----
//
// x: a (1, 128, 2, HD) activation of small integers (every product and sum below exact in fp32,
// in any order), read at head 1: rows r of the checks are its tokens. Writes, for parts_compare:
// raw_tma, raw_copy (128 HD each): the bytes of a 128-row sw128 tile filled by TMA (the map's T
// PARTS_T: the second box cut there) and by load_rows; raw_bulk (PARTS_BULK): x's elements from
// HD on as a bulk copy brought them (tma_load_bulk); abt (128 x 64): each warpgroup's S = A B^T
// with A its 64 rows of the copied tile and B the first 64 (wg_abt_issue); xb (128 x HD): O = P V,
// P the warp's rows of x's first 64 columns packed as A fragments, V the tile's first 64 rows
// (wg_xb_issue); dq (64 x HD): dS K (wg_dq_issue), dS^T the tile's 128 rows x its first 64
// columns stored by store_ds_t, K the whole tile.
#define PARTS_T 100
#define PARTS_BULK 128
static __device__ __forceinline__ void parts_body(const gm_cuda_act *__restrict__ x, const attn_tmaps *tm,
                                                  uint16_t *raw_tma, uint16_t *raw_copy, uint16_t *raw_bulk,
                                                  float *abt, float *xb, float *dq, const int HD) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int R = BLOCK_ROWS, h = 1, lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const size_t rs = (size_t)2 * HD;
    __nv_bfloat16 *tT = (__nv_bfloat16 *)swizzle_base(smem), *tC = tT + R * HD, *sDS = tC + R * HD;
    uint64_t *bars = (uint64_t *)(sDS + R * 64);
    uint16_t *sBulk = (uint16_t *)(bars + WG_MBARS);
    const int wg = warpgroup(), row0 = wg * 64 + warp % 4 * 16 + g;  // this lane's first row of the checks
    const auto value = [&](int r, int c) { return gm_act_widen(x[h * HD + r * rs + c]); };
    wg_bars_init(bars);
    if (WG_TMA && threadIdx.x == 0) {
        wg_expect(bars, 0, WG_TILE_BYTES(R, HD) + PARTS_BULK * 2);
        wg_fetch(tT, &tm->q, x + h * HD, bars, 0, 0, h, 0, R, PARTS_T, rs, HD, BWD_THREADS);
        tma_load_bulk(sBulk, x + HD, PARTS_BULK * 2, bars);
    }
    load_rows(tC, x + h * HD, 0, R, R, rs, HD, BWD_THREADS, true);
    cp_async_wait_all();
    fence_proxy_async();
    __syncthreads();  // the barriers initialized, the copied tile the block's
    if constexpr (WG_TMA) mbar_wait(bars, 0);
    for (int i = threadIdx.x; i < R * HD; i += BWD_THREADS)
        raw_tma[i] = WG_TMA ? ((const uint16_t *)tT)[i] : 0, raw_copy[i] = ((const uint16_t *)tC)[i];
    for (int i = threadIdx.x; i < PARTS_BULK; i += BWD_THREADS) raw_bulk[i] = WG_TMA ? sBulk[i] : 0;

    float s[KEY_TILE / 8][4], p[KEY_TILE / 8][4], o[MAX_HD / 8][4], dqp[MAX_HD / 16][4];
    wg_abt_issue(s, tC + wg * 64 * HD, tC, HD);
    wgmma_wait<0>();
    wgmma_hold(&s[0][0], KEY_TILE / 2);
    for (int n = 0; n < KEY_TILE / 8; n++)
        for (int e = 0; e < 4; e++) {
            const int r = row0 + 8 * (e / 2), c = 8 * n + 2 * t + (e & 1);
            abt[r * 64 + c] = s[n][e], p[n][e] = value(r, c);
        }

    uint32_t pa[KEY_TILE / 16][4];
    pack_a(pa, p);
    zero(o, HD / 8);
    wg_xb_issue(o, pa, tC, HD);
    wgmma_wait<0>();
    wgmma_hold(&o[0][0], HD / 2), wgmma_hold_a(&pa[0][0], KEY_TILE / 4);
    for (int n = 0; n < HD / 8; n++)
        for (int e = 0; e < 4; e++) xb[(row0 + 8 * (e / 2)) * HD + 8 * n + 2 * t + (e & 1)] = o[n][e];

    for (int n = 0; n < 8; n++)  // dS^T: the warp's 16 keys (rows) x 64 queries (columns)
        for (int e = 0; e < 4; e++) p[n][e] = value(warp * 16 + g + 8 * (e / 2), 8 * n + 2 * t + (e & 1));
    store_ds_t(sDS, p, warp * 16);
    fence_proxy_async();
    __syncthreads();
    wg_dq_issue(&dqp[0][0], sDS, tC, wg, HD);
    wgmma_wait<0>();
    wgmma_hold(&dqp[0][0], HD / 4);
    for (int j = 0; j < HD / 16; j++)
        for (int e = 0; e < 4; e++)
            dq[(warp % 4 * 16 + g + 8 * (e / 2)) * HD + wg * HD / 2 + 8 * j + 2 * t + (e & 1)] = dqp[j][e];
}
static __host__ size_t parts_smem(int HD) {
    return 1024 + (size_t)2 * BLOCK_ROWS * HD * 2 + BLOCK_ROWS * 64 * 2 + WG_MBARS * 8 + PARTS_BULK * 2;
}

// parts_body's input: x (1, 128, 2, HD) as the element, xv the same values in fp32, integers in
// [-127, 127] (exact in bf16; products and sums of up to 128 of them below 2^24).
static __host__ void parts_input(gm_cuda_act *x, float *xv, int HD) {
    uint32_t r = 12345;
    for (int i = 0; i < BLOCK_ROWS * 2 * HD; i++) {
        r = r * 1664525u + 1013904223u;
        xv[i] = (float)((int)(r >> 24) % 255 - 127);
        uint32_t bits;
        memcpy(&bits, &xv[i], 4);
        const uint16_t hi = (uint16_t)(bits >> 16);  // exact: the value has at most 8 significant bits
        if (sizeof(gm_cuda_act) == 2) memcpy((void *)&x[i], &hi, 2);
        else memcpy((void *)&x[i], &xv[i], 4);
    }
}

// One line a part into report (appended): "ok", or how many of its values are wrong and the
// first; returns the parts that failed. Exact comparisons (the values are exact in every order).
static __host__ int parts_compare(const float *xv, int HD, const uint16_t *raw_tma, const uint16_t *raw_copy,
                                  const uint16_t *raw_bulk, const float *abt, const float *xb, const float *dq,
                                  char *report, size_t len) {
    const int R = BLOCK_ROWS;
    const auto X = [&](int r, int c) { return xv[((size_t)r * 2 + 1) * HD + c]; };
    const auto bf16_bits = [](float v) {
        uint32_t b;
        memcpy(&b, &v, 4);
        return (uint16_t)(b >> 16);
    };
    const auto bf16_value = [](uint16_t h) {
        const uint32_t b = (uint32_t)h << 16;
        float v;
        memcpy(&v, &b, 4);
        return v;
    };
    int failed = 0;
    size_t at = strlen(report);
    const auto line = [&](const char *part, long bad, long of, int r, int c, double got, double want) {
        if (bad) failed++;
        if (at >= len) return;
        at += (size_t)(bad ? snprintf(report + at, len - at,
                                      "HD %d %s: %ld of %ld wrong, first row %d column %d: %g for %g\n", HD, part, bad,
                                      of, r, c, got, want)
                           : snprintf(report + at, len - at, "HD %d %s: ok\n", HD, part));
    };
    for (int part = 0; part < 2; part++) {  // the two copies of the tile, in tile_at's layout
        const uint16_t *raw = part ? raw_copy : raw_tma;
        const int T = part ? R : PARTS_T;
        long bad = 0;
        int br = 0, bc = 0;
        uint16_t bg = 0, bw = 0;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < HD; c++) {
                const uint16_t want = r < T ? (sizeof(gm_cuda_act) == 2 || part ? bf16_bits(X(r, c)) : 0) : 0;
                const uint16_t got = raw[tile_at(r, c, HD, true)];
                if (got != want && !bad++) br = r, bc = c, bg = got, bw = want;
            }
        if (sizeof(gm_cuda_act) != 2 && !part) continue;  // no TMA with the fp32 element
        line(part ? "copied tile (load_rows) in the 128-byte swizzle"
                  : "TMA box copy in the 128-byte swizzle, zeros past T",
             bad, (long)R * HD, br, bc, bf16_value(bg), bf16_value(bw));
    }
    if (sizeof(gm_cuda_act) == 2) {  // the bulk copy: x's elements HD.. as they are
        long bad = 0;
        int bi = 0;
        for (int i = 0; i < PARTS_BULK; i++)
            if (raw_bulk[i] != bf16_bits(xv[HD + i]) && !bad++) bi = i;
        line("TMA bulk copy", bad, PARTS_BULK, 0, bi, bf16_value(raw_bulk[bi]), xv[HD + bi]);
    }
    const auto check = [&](const char *part, const float *got, int rows, int cols, auto want) {
        long bad = 0;
        int br = 0, bc = 0;
        double bg = 0, bw = 0;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                const double w = want(r, c), v = got[(size_t)r * cols + c];
                if (v != w && !bad++) br = r, bc = c, bg = v, bw = w;
            }
        line(part, bad, (long)rows * cols, br, bc, bg, bw);
    };
    check("wgmma A B^T, both K-major from swizzled tiles", abt, R, 64, [&](int r, int c) {
        double sum = 0;
        for (int d = 0; d < HD; d++) sum += (double)X(r, d) * X(c, d);
        return sum;
    });
    check("wgmma A B, A from registers, B MN-major", xb, R, HD, [&](int r, int c) {
        double sum = 0;
        for (int k = 0; k < 64; k++) sum += (double)X(r, k) * X(k, c);
        return sum;
    });
    check("wgmma dS K, A and B MN-major, B from column HD / 2", dq, 64, HD, [&](int q, int c) {
        double sum = 0;
        for (int key = 0; key < R; key++) sum += (double)X(key, q) * X(key, c);
        return sum;
    });
    return failed;
}

// verify/emu/ compiles the device code above as host C++ (GM_ATTN_HOST_EMULATION, with its own
// mma_sm80.cuh and wgmma_sm90.cuh) and runs the bodies on a CPU; the kernels and launchers below are
// CUDA only.
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

// Register budgets (nvcc 13.0 -Xptxas -v, sm_90a, bf16 element; 2026-11-28, since load_rows' chunks
// step by constant rows, the compiler keeping one address where it kept one a chunk): the mma.sync
// backward kernels, one block of 8 warps per SM, 156 to 224 registers without spilling (162 to 233
// before; at head_dim 128 they spilled 32 to 1256 bytes before the ring); the M = 1 mma.sync
// forwards, two blocks of 8 warps per SM, 128 or fewer, no spill (16 bytes at head_dim 128 before;
// 198 registers at one block an SM). The M = 2 forwards ask for two blocks of 4 warps per SM (2 x
// 103 KB of shared memory at head_dim 128): 210 registers at head_dim 64 (222), and at 128 254 with
// 8 bytes spilled (one 64-bit value reloaded once a tile, cuobjdump -sass; 28 bytes before, 7 chunk
// addresses, since fd5e1cd; none at f40f733; 84 bytes at 5531b1e, 140 at c7fd396: ptxas's
// allocation at this edge moves with small changes; its 128 output and 64 score registers per
// thread are FlashAttention-2's too). The wgmma kernels (WG), one block of 8 warps per SM (and the
// forward's producer warp), no spill and no serialization (with the swizzled tiles and TMA,
// 2026-11-28): forward 152 registers at head_dim 128 with its producer warp (146 before its
// warpgroups' spans, fwd_wg_span; 157 while the producer was told apart by threadIdx.x,
// warp_index; 164 with thread 0 issuing; 127 at 64, under the cap of 128 of its two blocks an SM,
// 120 before the spans; 140 and 108 before its work items), dq 175 (142; 170 and 140 before its
// issuer copied ahead, wg_copy_ahead, 170 and 138 before the spans), dk/dv 250 (186; 236 and 170
// with each tile's dK product waited for in that tile, 240 and 174 while its lse and D came by
// cp.async); with the cp.async copies of the swizzled tiles 154, 191, 246; at c7fd396 159, 227
// and 244 (C7518, wgmma serialized, from 248).
// The one-pass backward (dk/dv with DQ): 252 (202; 254 and 192 with its copies issued before its
// S^T and dP^T products, 188 at head_dim 64 before its lse and D were read 8 bytes at a time:
// col_pair), no spill, no serialization (252 and 202 with
// the core-matrix copies); its dq's fp32 partial sums added by 16-byte float atomics
// (ATOMG.E.ADD.F32x4 with no destination: a reduction in L2, subnormal sums flushed to zero, as
// every float atomic does).
// Instructions in one pass of the main loop at head_dim 128 (cuobjdump -sass of the sm_90a build;
// a full tile / a partially masked one, with no row's maximum moving), at 5531b1e and 2026-11-27: mma32
// forward 1645 -> 923 / 1158 (+156 on a tile whose maxima move), 16-row 840 -> 518 / 648 (+78; at
// two blocks an SM), wgmma forward 826 -> 367 / 492 (+64), wgmma dq 806 -> 359 / 483, dk/dv 1145
// -> 691 / 817: the scale in the exponent and ex2_ftz, the output's rescale only where a maximum
// moved by 2^8 (softmax_tile), the mask's compares skipped on full tiles where they had run
// predicated (mask_tile), and the wgmma descriptors built once a product and kept uniform
// (wgmma_desc_plus, warpgroup). At 0a42429 the wgmma forward's full tile took 395 (per-thread
// descriptors after the producer's branch on threadIdx.x, see warp_index); 296 since, 298 with
// the two branches past the pingpong's turns (wg_turn_wait). With the warpgroups' spans the tile
// loops' code (both paths) 499 instructions for 500 (the forward), 500 for 496 (dq), 540 for 571
// (dk/dv; at head_dim 64 731 for 737, 447 for 433, 487 for 518), the forward's stage arithmetic
// partly off the uniform datapath (3 R2UR a tile). Not yet timed.
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
    const int QT = QUERY_TILE(HD, WG);
    return tiles_smem(2 * BLOCK_ROWS + 2 * QUERY_STAGES * QT, HD, WG) + (2 * QUERY_STAGES * QT + BLOCK_ROWS) * 4 +
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

// The tensor maps of a wgmma form's TMA copies (q, k, v, and o: dout, NULL in the forward), or
// zeros where the form (or the fp32 element) copies without; 0 (noted) where the encoder refused.
static int tensor_maps(gm_cuda_ctx *c, attn_tmaps *tm, bool WG, const gm_cuda_act *q, const gm_cuda_act *k,
                       const gm_cuda_act *v, const gm_cuda_act *o, int B, int T, int NH, int HD) {
    memset(tm, 0, sizeof *tm);
    if (!WG || !WG_TMA) return 1;
    const gm_cuda_act *src[4] = {q, k, v, o};
    CUtensorMap *map[4] = {&tm->q, &tm->k, &tm->v, &tm->o};
    for (int i = 0; i < 4; i++) {
        const char *why = src[i] ? tma_map_rows(map[i], src[i], B, T, NH, HD) : NULL;
        if (why) {
            gm_cuda_note(c, __FILE__, __LINE__, "attention (wgmma, TMA)", why);
            return 0;
        }
    }
    return 1;
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
    if (!tensor_maps(c, &tm, wg, q, k, v, NULL, B, T, NH, HD)) return;
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
    if (!tensor_maps(c, &tm, form != GM_ATTN_BWD_MMA, q, k, v, dout, B, T, NH, HD)) return;
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
                     uint16_t *raw_copy, uint16_t *raw_bulk, float *abt, float *xb, float *dq) {
    parts_body(x, &tm, raw_tma, raw_copy, raw_bulk, abt, xb, dq, HD);
}

int gm_cuda_attn_wgmma_parts_run(gm_cuda_ctx *c, int HD, char *report, size_t len) {
    report[0] = 0;
    if (!gm_cuda_attn_wgmma_runs(c) || (HD != 64 && HD != 128)) {
        snprintf(report, len, "%s\n", HD != 64 && HD != 128 ? "head_dim 64 or 128" : "wgmma does not run here");
        return -1;
    }
    const size_t nx = (size_t)BLOCK_ROWS * 2 * HD, nt = (size_t)BLOCK_ROWS * HD;
    // x, raw_tma, raw_copy, raw_bulk, abt, xb, dq
    const size_t bytes[7] = {nx * sizeof(gm_cuda_act), nt * 2, nt * 2, PARTS_BULK * 2, (size_t)BLOCK_ROWS * 64 * 4,
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
        rc = why ? -1 : 0;
    }
    if (!rc) {
        const gm_cuda_act *x = (const gm_cuda_act *)dev[0];
        uint16_t *raw_tma = (uint16_t *)dev[1], *raw_copy = (uint16_t *)dev[2], *raw_bulk = (uint16_t *)dev[3];
        float *abt = (float *)dev[4], *xb = (float *)dev[5], *dq = (float *)dev[6];
        void (*kern)(const gm_cuda_act *, attn_tmaps, uint16_t *, uint16_t *, uint16_t *, float *, float *, float *) =
            HD == 64 ? attn_wgmma_parts<64> : attn_wgmma_parts<128>;
        cudaError_t e = cudaMemcpy(dev[0], host[0], bytes[0], cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)parts_smem(HD));
        if (e == cudaSuccess)
            kern<<<1, BWD_THREADS, parts_smem(HD)>>>(x, tm, raw_tma, raw_copy, raw_bulk, abt, xb, dq);
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
