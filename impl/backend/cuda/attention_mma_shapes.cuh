// The tensor-core attention's shapes (attention_mma.cu): the rows a block owns, the tiles it
// streams and the stages of its rings, at head_dim 64 or 128 (MAX_HD). The kernels are built per
// head_dim from these constants, so every array size and loop count is a constant.
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_SHAPES_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_SHAPES_CUH

#include "backend/cuda/attention.cuh"

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
// The dk/dv kernel's query-tile ring, copied two tiles ahead: with LAG (the wgmma kernel with TMA,
// not the one-pass backward: DK_LAG) a tile's Q is read a tile longer, by its dK product issued at
// the next tile, so a stage more, as the dq kernel's K ring and the forward's V ring have. With
// three there (up to 925987e), tile i + 2 went into tile i - 1's stage, which the warpgroups give
// back only during tile i: the issuer found it free only if the other warpgroup was not behind, and
// otherwise copied it a tile later, leaving one tile of lead (H200, run 8: 10% of the dk/dv
// kernel's samples at its wait for a tile's copies, the most of any instruction).
#define QUERY_STAGES(LAG) ((LAG) ? 4 : 3)
#define DQ_K_STAGES 4   // the wgmma dq kernel's key rings (two tiles ahead, K read a tile longer)
#define DQ_V_STAGES 3
#define FWD_K_STAGES 3  // the wgmma forward's rings (two tiles ahead, V read a tile longer)
#define FWD_V_STAGES 4
#define PITCH(HD) ((HD) + 8)                    // bf16 elements per shared row
#define LOG2E GM_ATTN_LOG2E
#define LN2 0.69314718055994531f

#endif
