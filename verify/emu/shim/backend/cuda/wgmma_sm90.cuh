// Host emulation of impl/backend/cuda/wgmma_sm90.cuh (verify/emu/emu.h). wgmma is asynchronous: an
// issued operation is queued per thread, closed into a group at the commit, and performed at the
// warpgroup's wait that completes its group (the latest point the PTX ISA allows: a wait for all
// but the newest N groups performs the older ones, in order), reading shared memory and the A
// registers then, so a kernel that touched either before that wait computes something else; and
// since a write there would be applied before the product rather than race with it, the wait also
// compares each operation's accumulators and A registers with their values at issue and stops the
// program, naming the thread, where they differ (two groups in flight on one accumulator, which
// these kernels never have, would read as such a write). With GM_EMU_LAG=w, warpgroup w waits 1 ms
// longer at each wait, so that the other runs as far ahead as the kernel's synchronization lets it
// (the wgmma forward's and dq kernel's stage releases). Per operation, each thread computes its
// own accumulators: warp w of the warpgroup holds rows 16w..16w+15, n-tile j in registers
// 4j..4j+3 in mma.sync's C layout; A from registers in mma.sync's A layout, per warp. Descriptors:
// start address, LBO and SBO in 16-byte units, the canonical layouts of the PTX ISA's "Matrix
// Descriptor Format" as CUTLASS's make_gmma_desc documents them, in bytes for 2-byte elements.
// The kernels' one layout, the 128-byte swizzle (layout type 1; the no-swizzle core matrices they
// used up to 2026-11-28 are gone, and any other type stops the emulation): element (mn, k) of a
// K-major operand at start + (mn/8) SBO + (mn%8) 128 + k 2 (an instruction's 16 K in one row; LBO
// unused), of an MN-major one at start + (mn/64) LBO + (mn%64) 2 + (k/8) SBO + (k%8) 128; then
// the 16-byte chunk bits of that address (4-6) XORed with its row bits (7-9), shared-memory
// addresses being offsets from `smem` (1024-byte aligned). A swizzled
// start with row bits set, or a base offset, stops the emulation: what the hardware does there
// rests on the descriptor's base offset, which these kernels never need (their tiles start on
// 1024-byte boundaries, wgmma_sm90.cuh). The fences have nothing to order in a model whose memory
// is coherent.
#ifndef GM_BACKEND_CUDA_WGMMA_SM90_CUH
#define GM_BACKEND_CUDA_WGMMA_SM90_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <thread>
#include <vector>

#define GM_WGMMA_BUILT 1

struct emu_wgmma_op {
    bool a_in_registers, a_mn_major, b_mn_major;
    uint64_t desc_a, desc_b;
    const uint32_t *a;  // a_in_registers: this thread's fragment
    float *d;
    int n, scale_d;
    float d_at_issue[64];  // this thread's n / 2 accumulators as they were at issue
    uint32_t a_at_issue[4];
};
static inline emu_wgmma_op emu_wgmma_issue(bool a_in_registers, bool a_mn_major, bool b_mn_major, uint64_t da,
                                           uint64_t db, const uint32_t *a, float *d, int n, int scale_d) {
    emu_wgmma_op op = {a_in_registers, a_mn_major, b_mn_major, da, db, a, d, n, scale_d, {}, {}};
    memcpy(op.d_at_issue, d, sizeof(float) * (size_t)n / 2);
    if (a) memcpy(op.a_at_issue, a, sizeof op.a_at_issue);
    if (emu_fault("wgmma_write") && threadIdx.x == 5) d[0] += 1.0f;  // as a kernel writing it in flight would
    return op;
}
extern thread_local std::vector<emu_wgmma_op> emu_wgmma_ops;
extern thread_local std::vector<size_t> emu_wgmma_groups;  // each committed group's end in emu_wgmma_ops

static inline uint64_t wgmma_desc(const void *p, uint32_t lbo, uint32_t sbo) {
    const uint32_t a = (uint32_t)((const unsigned char *)p - smem);
    return (uint64_t)((a >> 4) & 0x3fff) | (uint64_t)((lbo >> 4) & 0x3fff) << 16 |
           (uint64_t)((sbo >> 4) & 0x3fff) << 32 | (uint64_t)1 << 62;
}
static inline unsigned char *swizzle_base(unsigned char *p) {
    return p + ((0u - (uint32_t)(p - smem)) & 1023u) + (emu_fault("swizzle_base") ? 128 : 0);
}
static inline uint64_t wgmma_desc_plus(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }
template <int ID, int THREADS> static inline void named_bar_sync(void) { emu_named_bar(ID, THREADS, true); }
template <int ID, int THREADS> static inline void named_bar_arrive(void) { emu_named_bar(ID, THREADS, false); }
static inline void wgmma_fence(void) {}
static inline void fence_proxy_async(void) {}
static inline void wgmma_hold(float *, const int) {}
static inline void wgmma_hold_a(uint32_t *, const int) {}

static inline float emu_desc_element(uint64_t desc, int mn, int k, bool mn_major) {
    const bool fault = emu_fault("wgmma_desc");
    const uint32_t start = (uint32_t)(desc & 0x3fff) << 4, lbo = (uint32_t)((desc >> (fault ? 32 : 16)) & 0x3fff) << 4,
                   sbo = (uint32_t)((desc >> (fault ? 16 : 32)) & 0x3fff) << 4;
    const unsigned type = (unsigned)(desc >> 62), base_offset = (unsigned)(desc >> 49) & 7;
    uint32_t at;
    if (type == 1 && base_offset == 0 && (start >> 7) % 8 == 0) {
        at = mn_major ? start + (mn / 64) * lbo + (mn % 64) * 2 + (k / 8) * sbo + (k % 8) * 128
                      : start + (mn / 8) * sbo + (mn % 8) * 128 + k * 2;
        if (!emu_fault("wgmma_swizzle")) at ^= (at >> 7) % 8 << 4;
    } else {
        fprintf(stderr, "emu: block (%u, %u, %u) thread %u: wgmma descriptor %#llx (layout type %u, start byte %u, "
                "base offset %u) is not one the emulation knows\n", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
                (unsigned long long)desc, type, start, base_offset);
        abort();
    }
    uint16_t h;
    memcpy(&h, smem + at, 2);
    return __uint_as_float((uint32_t)h << 16);
}
// A and B in shared memory: K-major, or MN-major where TA / TB is set; A in registers: B MN-major.
template <int TA, int TB> static inline void wgmma_m64n64k16_ss(float d[32], uint64_t da, uint64_t db, int scale_d) {
    emu_wgmma_ops.push_back(emu_wgmma_issue(false, TA, TB, da, db, nullptr, d, 64, scale_d));
}
template <int TA, int TB> static inline void wgmma_m64n32k16_ss(float d[16], uint64_t da, uint64_t db, int scale_d) {
    emu_wgmma_ops.push_back(emu_wgmma_issue(false, TA, TB, da, db, nullptr, d, 32, scale_d));
}
static inline void wgmma_m64n64k16_rs(float d[32], const uint32_t a[4], uint64_t db) {
    emu_wgmma_ops.push_back(emu_wgmma_issue(true, false, true, 0, db, a, d, 64, 1));
}
static inline void wgmma_m64n128k16_rs(float d[64], const uint32_t a[4], uint64_t db) {
    emu_wgmma_ops.push_back(emu_wgmma_issue(true, false, true, 0, db, a, d, 128, 1));
}
static inline void wgmma_commit(void) { emu_wgmma_groups.push_back(emu_wgmma_ops.size()); }
// Performs the operations of every committed group but the newest N (every thread of the warpgroup
// has issued the same sequence, so operation i is the same instruction on all of them).
template <int N> static inline void wgmma_wait(void) {
    static const char *const lag = getenv("GM_EMU_LAG");  // a warpgroup that waits 1 ms longer at each wait
    if (lag && atoi(lag) == (int)threadIdx.x / 128) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int t = threadIdx.x % 128, w = t / 32, g = t % 32 / 4, tq = t % 4;
    const size_t done = emu_wgmma_groups.size() > (size_t)N ? emu_wgmma_groups[emu_wgmma_groups.size() - 1 - N] : 0;
    emu_warpgroup &wg = emu_warpgroups[threadIdx.x / 128];
    wg.queue[t] = &emu_wgmma_ops;
    for (size_t i = 0; i < done; i++) {
        const emu_wgmma_op &op = emu_wgmma_ops[i];
        const char *what = memcmp(op.d, op.d_at_issue, sizeof(float) * (size_t)op.n / 2) ? "accumulators"
                           : op.a && memcmp(op.a, op.a_at_issue, sizeof op.a_at_issue) ? "A registers"
                                                                                        : nullptr;
        if (what) {
            fprintf(stderr, "emu: block (%u, %u, %u) thread %u wrote the %s of a wgmma in flight (operation %zu)\n",
                    blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, what, i);
            abort();
        }
    }
    wg.bar->arrive_and_wait();  // every thread's operations are queued and their registers stay put
    for (size_t i = 0; i < done; i++) {
        const emu_wgmma_op &op = emu_wgmma_ops[i];
        // This thread's two rows of A (16 w + g, + 8) and its two columns of B an n-tile (8 j + 2 tq, + 1),
        // all it reads: decoded once each, not once a product term.
        float A[2][16], Bcols[32][2][16];
        for (int ot = 0; ot < 4 && op.a_in_registers; ot++) {  // the fragments of the quad holding these rows
            const uint32_t *a = (*wg.queue[32 * w + 4 * g + ot])[i].a;
            const int ak[4] = {2 * ot, 2 * ot, 2 * ot + 8, 2 * ot + 8};  // registers 0, 2: row g; 1, 3: g + 8
            for (int r = 0; r < 4; r++) A[r % 2][ak[r]] = emu_bf16_lo(a[r]), A[r % 2][ak[r] + 1] = emu_bf16_hi(a[r]);
        }
        for (int h = 0; h < 2 && !op.a_in_registers; h++)
            for (int k = 0; k < 16; k++) A[h][k] = emu_desc_element(op.desc_a, 16 * w + g + 8 * h, k, op.a_mn_major);
        for (int j = 0; j < op.n / 8; j++)
            for (int c = 0; c < 2; c++)
                for (int k = 0; k < 16; k++)
                    Bcols[j][c][k] = emu_desc_element(op.desc_b, 8 * j + 2 * tq + c, k, op.b_mn_major);
        for (int j = 0; j < op.n / 8; j++)
            for (int e = 0; e < 4; e++) {
                double acc = 0;
                for (int k = 0; k < 16; k++) acc += (double)A[e / 2][k] * Bcols[j][e & 1][k];
                float &dv = op.d[4 * j + e];
                dv = (float)((op.scale_d ? dv : 0.0f) + acc);
            }
    }
    wg.bar->arrive_and_wait();  // nobody reads another's registers any more
    emu_wgmma_ops.erase(emu_wgmma_ops.begin(), emu_wgmma_ops.begin() + (long)done);
    size_t kept = 0;
    for (size_t gi = 0; gi < emu_wgmma_groups.size(); gi++)
        if (emu_wgmma_groups[gi] > done) emu_wgmma_groups[kept++] = emu_wgmma_groups[gi] - done;
    emu_wgmma_groups.resize(kept);
}
static inline void wgmma_commit_wait(void) { wgmma_commit(), wgmma_wait<0>(); }

#endif
