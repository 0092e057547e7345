// The warpgroup PTX instructions of the Hopper attention (attention_mma.cu's WGMMA form), sm_90a
// only: wgmma.mma_async (bf16 operands, fp32 accumulators) with shared-memory matrix descriptors,
// its fence, commit and wait (for every group, or for all but the newest), the proxy fence that
// makes shared-memory writes of the threads (cp.async) visible to wgmma's reads, and the named
// barriers on which the forward's warpgroups take turns to issue their products. Kept apart, like
// mma_sm80.cuh, so that a host emulation (verify/emu/shim/backend/cuda/wgmma_sm90.cuh) can replace
// this one file.
//
// Shared-memory operands use the 128-byte swizzled layout (PTX ISA, "Matrix Descriptor Format" and
// the canonical layouts CUTLASS's make_gmma_desc documents): rows of 128 bytes (64 bf16), in atoms
// of 8 rows (1024 bytes, on a 1024-byte boundary) whose 16-byte chunk c of row r is stored at chunk
// c ^ r. K-major: the operand's rows (M or N) are the atom's rows, the next 8 at SBO, and the 16 K
// values of one instruction lie in one row (LBO unused); MN-major (transposed on read): the atom's
// rows are 8 K values, 64 M or N values each, the next 8 K at SBO and the next 64 M or N at LBO.
// The hardware applies the XOR to the address bits (chunk bits 4-6 with row bits 7-9), so a start
// address inside a row (the next 16 K, 32 bytes on: CUTLASS's descriptor iterator) reads the same
// layout; every start here keeps bits 7-9 clear, which the descriptor's base offset (0) assumes.
// Why not the no-swizzle layout of 8 x 16-byte core matrices this file used up to 2026-11-28:
// filling it by rows of 16-byte chunks makes bank conflicts, so its copies went down 8 rows first,
// and a warp's global reads covered half of each 32-byte sector (run 7's profile: 35-50% excess
// sectors); the swizzled rows are filled along rows, whole 128-byte lines a quarter-warp.
#ifndef GM_BACKEND_CUDA_WGMMA_SM90_CUH
#define GM_BACKEND_CUDA_WGMMA_SM90_CUH

#include <cuda_bf16.h>
#include <stdint.h>

// The instructions exist in the sm_90a compilation only (__CUDA_ARCH_FEAT_SM90_ALL); the build's
// compute_90 PTX, for other GPUs, gets bodies that trap, and the host runs the wgmma kernels only
// where a probe kernel reports the sm_90a machine code running (attention_mma.cu).
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
#define GM_WGMMA(...) __VA_ARGS__
#define GM_WGMMA_BUILT 1
#else
#define GM_WGMMA(...) __trap()
#define GM_WGMMA_BUILT 0
#endif

// A matrix descriptor: start address, LBO and SBO in 16-byte units (14 bits each), 128-byte
// swizzle (layout type 1 in bits 62-63), base offset 0.
static __device__ __forceinline__ uint64_t wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo) {
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(smem);
    return (uint64_t)((a >> 4) & 0x3fff) | (uint64_t)((lbo >> 4) & 0x3fff) << 16 |
           (uint64_t)((sbo >> 4) & 0x3fff) << 32 | (uint64_t)1 << 62;
}

// The first 1024-byte boundary of shared memory at or after p (the swizzle's atoms must start on
// one; CUDA promises dynamic shared memory 16-byte alignment only): a kernel asks 1024 bytes more.
static __device__ __forceinline__ unsigned char *swizzle_base(unsigned char *p) {
    return p + ((0u - (uint32_t)__cvta_generic_to_shared(p)) & 1023u);
}

// The descriptor of the operand `bytes` further on (a multiple of 16) in the same layout: the start
// address field plus bytes / 16 (no carry leaves its 14 bits: shared memory ends below 256 KB). Why:
// a descriptor built from a pointer is a generic-to-shared conversion, masks and shifts, some ten
// instructions on the uniform datapath (cuobjdump -sass), where an offset from one is an add.
static __device__ __forceinline__ uint64_t wgmma_desc_plus(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// Before the first wgmma reading registers other instructions wrote (accumulators, A fragments).
static __device__ __forceinline__ void wgmma_fence(void) {
    GM_WGMMA(asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"));
}
// Close the wgmma issued so far (and not yet in a group) into a group.
static __device__ __forceinline__ void wgmma_commit(void) {
    GM_WGMMA(asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"));
}
// Wait until at most N groups are pending (the newest N; groups complete in order): the registers
// of the others are then the threads' again.
template <int N> static __device__ __forceinline__ void wgmma_wait(void) {
    GM_WGMMA(asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"));
}
// Commit and wait for everything: the synchronous products.
static __device__ __forceinline__ void wgmma_commit_wait(void) { wgmma_commit(), wgmma_wait<0>(); }
// The compiler must neither read nor move an accumulator across an asynchronous wgmma: a register
// barrier on each.
static __device__ __forceinline__ void wgmma_hold(float *d, const int n) {
#pragma unroll
    for (int i = 0; i < n; i++) asm volatile("" : "+f"(d[i])::"memory");
}
// Likewise for A fragments in registers, which an asynchronous wgmma reads until its wait.
static __device__ __forceinline__ void wgmma_hold_a(uint32_t *a, const int n) {
#pragma unroll
    for (int i = 0; i < n; i++) asm volatile("" : "+r"(a[i])::"memory");
}
// Named barrier ID (1 to 15: 0 is __syncthreads') of THREADS threads, a multiple of 32 counted
// across the block: wait there until that many have arrived (sync), or arrive and go on (arrive).
// The ID a constant, so that ptxas reserves that barrier only (a register ID reserves all 16, which
// caps the blocks an SM). The wgmma forward's warpgroups hand each other the turn to issue their
// products so (attention_mma_fwd.cuh, wg_turn_wait / wg_turn_pass); every thread of a warp takes the
// same one.
template <int ID, int THREADS> static __device__ __forceinline__ void named_bar_sync(void) {
    asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
template <int ID, int THREADS> static __device__ __forceinline__ void named_bar_arrive(void) {
    asm volatile("bar.arrive %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
// Shared-memory writes of the generic proxy (stores, cp.async) before reads by wgmma (async proxy).
static __device__ __forceinline__ void fence_proxy_async(void) {
    GM_WGMMA(asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"));
}

// d (64 x 64, fp32, this thread's 32) (+)= A B^T: A 64 x 16 and B 64 x 16 in shared memory
// (descriptors), K-major, or with TA / TB set MN-major (transposed on read: the product is then
// A^T or B^T of the matrix stored); scale_d 0 overwrites d.
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_m64n64k16_ss(float d[32], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    GM_WGMMA(asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
        "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
        "%31}, %32, %33, p, 1, 1, %35, %36;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
          "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)));
}

// The same with N 32: d (64 x 32, fp32, this thread's 16).
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_m64n32k16_ss(float d[16], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    GM_WGMMA(asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
        "%11, %12, %13, %14, %15}, %16, %17, p, 1, 1, %19, %20;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)));
}

// d (64 x 64, fp32, this thread's 32) += A B: A 64 x 16 from registers (mma.sync's A layout per
// warp, the warp's 16 rows), B 16 x 64 MN-major in shared memory (descriptor; transposed on read).
static __device__ __forceinline__ void wgmma_m64n64k16_rs(float d[32], const uint32_t a[4], uint64_t desc_b) {
    GM_WGMMA(asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
        "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
        "%31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
          "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b)));
}

// d (64 x 128, fp32, this thread's 64) += A B: A 64 x 16 from registers (mma.sync's A layout per
// warp, the warp's 16 rows), B 16 x 128 MN-major in shared memory (descriptor; transposed on read).
static __device__ __forceinline__ void wgmma_m64n128k16_rs(float d[64], const uint32_t a[4], uint64_t desc_b) {
    GM_WGMMA(asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
        "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
        "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
        "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, "
        "1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
          "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
          "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
          "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
          "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b)));
}

#endif
