// The Hopper copy engine (TMA) for the wgmma attention (attention_mma.cu): bulk tensor copies of
// 64-row x 64-column boxes of a (B, T, NH, HD) bf16 activation into shared memory, 128-byte
// swizzled as the wgmma descriptors read them (wgmma_sm90.cuh), and of runs of a per-query fp32
// vector (the backward's lse2 and D), completed on shared-memory barriers (mbarrier) that count
// their bytes; and the host's tensor maps that describe them to it. Kept apart, like
// wgmma_sm90.cuh, so that the host emulation (verify/emu/shim/backend/cuda/tma_sm90.cuh) can
// replace this one file.
//
// Why: the cp.async copies had every thread compute and issue its 16-byte chunks of every tile (a
// tile's address arithmetic and zero-fill selects in each of 256 threads, ~60 instructions a tile
// in the forward's main loop by cuobjdump) and wait for its own copies before a barrier. One
// thread issues a tile's TMA copies (the engine walks the box, fills rows past T with zeros, and
// swizzles), and every thread waits on the tile's barrier: FlashAttention-3's producer side.
//
// The PTX (ISA 8.x): mbarrier.init / arrive.expect_tx / try_wait.parity / test_wait.parity on a
// 64-bit barrier in shared memory; cp.async.bulk.tensor.4d ... .mbarrier::complete_tx::bytes (the
// copy completes its bytes on the barrier: a phase completes when its one arrival and every
// expected byte have); cp.async.bulk.tensor.2d likewise for a vector's run. Why a tensor map for the
// vectors too, where a plain bulk copy (cp.async.bulk, no map) would do: compute-sanitizer's
// racecheck reported the plain copies of lse2 and D against the dk/dv kernel's reads of them
// (H200, run 8: 12 reports), though every read waits on the copy's mbarrier first; FlashAttention's
// notes on its sm_100 backward (Dao-AILab/flash-attention, AI/RACECHECK_TMA_HAZARD.md) find that
// racecheck does not take the mbarrier as ordering reads after cp.async.bulk, as it does after
// cp.async.bulk.tensor, and make the same change.
// sm_90a only here (the wgmma kernels' build; the compute_90 PTX gets bodies that trap).
#ifndef GM_BACKEND_CUDA_TMA_SM90_CUH
#define GM_BACKEND_CUDA_TMA_SM90_CUH

#include <cuda.h>  // CUtensorMap and the encoder's enums (types only: the driver is looked up at run time)
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __CUDA_ARCH_FEAT_SM90_ALL
#define GM_TMA(...) __VA_ARGS__
#else
#define GM_TMA(...) __trap()
#endif

// Rows and columns of a box: one panel of a sw128 slab (tile_at: 64 rows x 128 bytes).
#define TMA_BOX_ROWS 64
#define TMA_BOX_COLS 64

static __device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// A barrier expecting `count` arrivals a phase (phase 0 first).
static __device__ __forceinline__ void mbar_init(uint64_t *bar, int count) {
    GM_TMA(asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory"));
}
// After the initializing thread's mbar_init: the copy engine (async proxy) sees the barriers
// initialized; a barrier of the block then makes them the other threads'.
static __device__ __forceinline__ void mbar_init_fence(void) {
    GM_TMA(asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"));
}
// This thread's arrival on the barrier's current phase, which then also waits for `bytes` more to
// be completed by copies.
static __device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
    GM_TMA(asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
                        : "memory"));
}
// This thread's arrival on the barrier's current phase (no bytes: a consumer done with a stage).
static __device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
    GM_TMA(asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory"));
}
// Whether the barrier's phase of parity `parity` has completed, without waiting (test_wait): for an
// issuer with work of its own to do where a stage is not yet given back.
static __device__ __forceinline__ bool mbar_done(uint64_t *bar, int parity) {
    uint32_t done = 0;
    GM_TMA(asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                        "selp.u32 %0, 1, 0, p;\n}\n"
                        : "=r"(done)
                        : "r"(smem_u32(bar)), "r"(parity)
                        : "memory"));
    return done != 0;
}
// Until the barrier's phase of parity `parity` has completed (its copies' bytes are then visible).
static __device__ __forceinline__ void mbar_wait(uint64_t *bar, int parity) {
    GM_TMA(asm volatile("{\n.reg .pred done;\nTMA_WAIT:\n"
                        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                        "@!done bra TMA_WAIT;\n}\n" ::"r"(smem_u32(bar)),
                        "r"(parity)
                        : "memory"));
}
// Box (columns col.., head h, tokens t.., batch b) of the map's tensor into dst (1024-byte
// aligned: the swizzle's pattern), its 8 KB completed on bar. Rows past T arrive as zeros.
static __device__ __forceinline__ void tma_load_box(void *dst, const CUtensorMap *map, uint64_t *bar, int col, int h,
                                                    int t, int b) {
    GM_TMA(asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
                        "{%3, %4, %5, %6}], [%2];\n" ::"r"(smem_u32(dst)),
                        "l"((uint64_t)map), "r"(smem_u32(bar)), "r"(col), "r"(h), "r"(t), "r"(b)
                        : "memory"));
}

// Elements at.. of run `run` of the map's vectors (one box, tma_map_vec's) into dst (128-byte
// aligned), its bytes completed on bar.
static __device__ __forceinline__ void tma_load_vec(void *dst, const CUtensorMap *map, uint64_t *bar, int at, int run) {
    GM_TMA(asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
                        "{%3, %4}], [%2];\n" ::"r"(smem_u32(dst)),
                        "l"((uint64_t)map), "r"(smem_u32(bar)), "r"(at), "r"(run)
                        : "memory"));
}

// The driver's tensor-map encoder (CUDA 12.0's interface), looked up once; NULL where the driver
// has none (the wgmma kernels then do not run: gm_cuda_attn_wgmma_runs).
static PFN_cuTensorMapEncodeTiled_v12000 tma_encoder(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode;
    static int looked;
    if (!looked) {
        cudaDriverEntryPointQueryResult found;
        void *fn = NULL;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) ==
                cudaSuccess &&
            found == cudaDriverEntryPointSuccess)
            encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
        looked = 1;
    }
    return encode;
}

// The tensor map of a (B, T, NH, HD) bf16 activation at base (16-byte aligned, as
// gm_cuda_attn_mma_fits asks) for tma_load_box: dimensions (HD, NH, T, B) innermost first, boxes
// of 64 columns x 1 head x 64 tokens x 1 batch row, 128-byte swizzle, zeros out of bounds.
// Returns NULL, or why it could not (the driver's encoder missing, or refusing these arguments).
static const char *tma_map_rows(CUtensorMap *map, const void *base, int B, int T, int NH, int HD) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tma_encoder();
    if (!encode) return "the driver has no cuTensorMapEncodeTiled";
    const cuuint64_t dims[4] = {(cuuint64_t)HD, (cuuint64_t)NH, (cuuint64_t)T, (cuuint64_t)B};
    const cuuint64_t strides[3] = {(cuuint64_t)HD * 2, (cuuint64_t)NH * HD * 2, (cuuint64_t)T * NH * HD * 2};
    const cuuint32_t box[4] = {TMA_BOX_COLS, 1, TMA_BOX_ROWS, 1}, step[4] = {1, 1, 1, 1};
    if (encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (void *)base, dims, strides, box, step,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return "cuTensorMapEncodeTiled refused the activation's shape";
    return NULL;
}

// The tensor map of `runs` runs of `len` fp32 elements at base (16-byte aligned; len a multiple of
// 4), run after run (the backward's per-query lse2 and D: a head's padded queries a run) for
// tma_load_vec: boxes of `box` elements (16 to 256, a multiple of 4) of one run, no swizzle,
// zeros past len. Returns NULL, or why it could not.
static const char *tma_map_vec(CUtensorMap *map, const float *base, int runs, int len, int box) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tma_encoder();
    if (!encode) return "the driver has no cuTensorMapEncodeTiled";
    const cuuint64_t dims[2] = {(cuuint64_t)len, (cuuint64_t)runs}, strides[1] = {(cuuint64_t)len * 4};
    const cuuint32_t boxes[2] = {(cuuint32_t)box, 1}, step[2] = {1, 1};
    if (encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)base, dims, strides, boxes, step,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return "cuTensorMapEncodeTiled refused the per-query vectors' shape";
    return NULL;
}

#endif
