// Host emulation of impl/backend/cuda/tma_sm90.cuh (verify/emu/emu.h): the tensor map records the
// activation (base, B, T, NH, HD); a box copy writes 64 rows x 64 bf16 columns into shared memory
// at dst (which must sit on a 1024-byte boundary, or the emulation stops naming it) as the 128-byte
// swizzle lays them out: element (r, c) at byte r 128 + c 2 with that offset's chunk bits (4-6)
// XORed with its row bits (7-9); rows past T and columns past HD are zeros. A vector map records
// its runs of fp32 elements (base, runs, len, box); a vector copy writes box elements of one run as
// they are, zeros past len (destination on a 128-byte boundary, or it stops). The barriers follow
// the PTX ISA: a phase completes when its arrivals (the count given at init) have arrived and every
// byte expected (arrive.expect_tx) has been completed by copies; try_wait.parity P returns once
// the phase of parity P has completed, test_wait.parity P at once whether it has. Copies land at
// the first wait or test on their barrier (the latest moment the PTX ISA allows: a kernel that
// reads a tile before waiting reads the old bytes), or with GM_EMU_COPIES=eager at issue (the
// earliest: a copy into a stage still being read changes what it reads). A wait blocks until its
// phase completes (arrivals and copies of other threads, which run at once); one that nothing
// completes within GM_EMU_HANG_S seconds (default 20: a tile takes milliseconds here) is one a GPU
// would hang in, and the emulation stops, naming the barrier. State lives beside shared memory
// (each barrier's record by address), behind one lock.
#ifndef GM_BACKEND_CUDA_TMA_SM90_CUH
#define GM_BACKEND_CUDA_TMA_SM90_CUH

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#define TMA_BOX_ROWS 64
#define TMA_BOX_COLS 64

struct emu_tensor {
    const unsigned char *base;
    int B, T, NH, HD;     // an activation's (tma_map_rows)
    int runs, len, box;   // a vector map's (tma_map_vec; box 0 for an activation)
};
static_assert(sizeof(emu_tensor) <= sizeof(CUtensorMap), "a tensor map holds the emulation's record");

static inline const char *tma_map_rows(CUtensorMap *map, const void *base, int B, int T, int NH, int HD) {
    const emu_tensor e = {(const unsigned char *)base, B, T, NH, HD, 0, 0, 0};
    memset(map, 0, sizeof *map);
    memcpy(map, &e, sizeof e);
    return NULL;
}
static inline const char *tma_map_vec(CUtensorMap *map, const float *base, int runs, int len, int box) {
    if ((uintptr_t)base % 16 || len % 4 || box % 4 || box < 16 || box > 256) {
        fprintf(stderr, "emu: a vector map of %d runs of %d with boxes of %d: the encoder would refuse it\n", runs,
                len, box);
        abort();
    }
    const emu_tensor e = {(const unsigned char *)base, 0, 0, 0, 0, runs, len, box};
    memset(map, 0, sizeof *map);
    memcpy(map, &e, sizeof e);
    return NULL;
}

// A copy in flight: a box of `tensor` (a vector map's: elements col.. of run b).
struct emu_box {
    unsigned char *dst;
    emu_tensor tensor;
    int col, h, t, b;
};
struct emu_mbar {
    int count, pending;
    long long tx;
    unsigned phase;
    std::vector<emu_box> in_flight;
};
inline std::mutex emu_mbar_lock;
inline std::condition_variable emu_mbar_moved;  // an arrival, a copy issued or landed
inline std::map<const void *, emu_mbar> emu_mbars;

static inline void emu_mbar_complete(emu_mbar &m) {
    if (m.pending == 0 && m.tx == 0) m.phase++, m.pending = m.count;
    emu_mbar_moved.notify_all();
}
static inline void emu_box_land(emu_mbar &m, const emu_box &x) {
    if (x.tensor.box) {
        const emu_tensor &e = x.tensor;
        for (int i = 0; i < e.box; i++) {
            float v = 0.0f;
            if (x.col + i < e.len && x.b < e.runs) memcpy(&v, e.base + ((size_t)x.b * e.len + x.col + i) * 4, 4);
            memcpy(x.dst + i * 4, &v, 4);
        }
        m.tx -= e.box * 4;
        emu_mbar_complete(m);
        return;
    }
    for (int r = 0; r < TMA_BOX_ROWS; r++)
        for (int c = 0; c < TMA_BOX_COLS; c++) {
            const emu_tensor &e = x.tensor;
            uint16_t v = 0;
            if (x.t + r < e.T && x.col + c < e.HD)
                memcpy(&v, e.base + ((((size_t)x.b * e.T + x.t + r) * e.NH + x.h) * e.HD + x.col + c) * 2, 2);
            uint32_t at = (uint32_t)(r * 128 + c * 2);
            at ^= (at >> 7) % 8 << 4;
            memcpy(x.dst + at, &v, 2);
        }
    m.tx -= TMA_BOX_ROWS * TMA_BOX_COLS * 2;
    emu_mbar_complete(m);
}

static inline uint32_t smem_u32(const void *p) { return (uint32_t)((const unsigned char *)p - smem); }

static inline void mbar_init(uint64_t *bar, int count) {
    std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbars[bar] = emu_mbar{count, count, 0, 0, {}};
}
static inline void mbar_init_fence(void) {}
static inline emu_mbar &emu_mbar_of(uint64_t *bar) {
    auto it = emu_mbars.find(bar);
    if (it == emu_mbars.end()) {
        fprintf(stderr, "emu: block (%u, %u, %u) thread %u uses the barrier at shared byte %u before its init\n",
                blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, smem_u32(bar));
        abort();
    }
    return it->second;
}
static inline void mbar_arrive(uint64_t *bar) {
    std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar &m = emu_mbar_of(bar);
    m.pending--;
    emu_mbar_complete(m);
}
static inline void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
    std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar &m = emu_mbar_of(bar);
    m.tx += bytes, m.pending--;
    emu_mbar_complete(m);
}
// test_wait: the copies issued on bar land first, as at a wait.
static inline bool mbar_done(uint64_t *bar, int parity) {
    std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar &m = emu_mbar_of(bar);
    std::vector<emu_box> land;
    land.swap(m.in_flight);
    for (const emu_box &x : land) emu_box_land(m, x);
    return (int)(m.phase % 2) != parity;
}
static inline void mbar_wait(uint64_t *bar, int parity) {
    if (emu_fault("tma_parity")) parity ^= 1;
    static const char *const hang = getenv("GM_EMU_HANG_S");
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(hang ? atoi(hang) : 20);
    std::unique_lock<std::mutex> hold(emu_mbar_lock);
    for (;;) {
        emu_mbar &m = emu_mbar_of(bar);
        std::vector<emu_box> land;
        land.swap(m.in_flight);
        for (const emu_box &x : land) emu_box_land(m, x);
        if ((int)(m.phase % 2) != parity) return;
        if (emu_mbar_moved.wait_until(hold, limit) == std::cv_status::timeout) {
            fprintf(stderr,
                    "emu: block (%u, %u, %u) thread %u waits on the barrier at shared byte %u for its phase of parity "
                    "%d, which nothing completed in %s s (%d arrivals and %lld bytes short): a GPU would hang\n",
                    blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, smem_u32(bar), parity, hang ? hang : "20",
                    m.pending, m.tx);
            abort();
        }
    }
}
// Issues x on bar: it lands at the first wait on bar, or now with GM_EMU_COPIES=eager.
static inline void emu_copy_issue(uint64_t *bar, const emu_box &x) {
    static const char *const mode = getenv("GM_EMU_COPIES");
    std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar &m = emu_mbar_of(bar);
    if (mode && !strcmp(mode, "eager")) emu_box_land(m, x);
    else m.in_flight.push_back(x), emu_mbar_moved.notify_all();
}
static inline void tma_load_box(void *dst, const CUtensorMap *map, uint64_t *bar, int col, int h, int t, int b) {
    if (smem_u32(dst) % 1024) {
        fprintf(stderr, "emu: block (%u, %u, %u) thread %u copies a box to shared byte %u, off the swizzle's 1024\n",
                blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, smem_u32(dst));
        abort();
    }
    emu_box x = {(unsigned char *)dst, {}, col, h, t, b};
    memcpy(&x.tensor, map, sizeof x.tensor);
    if (x.tensor.box) {
        fprintf(stderr, "emu: block (%u, %u, %u) thread %u copies a box of a vector map as an activation's\n",
                blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x);
        abort();
    }
    emu_copy_issue(bar, x);
}
static inline void tma_load_vec(void *dst, const CUtensorMap *map, uint64_t *bar, int at, int run) {
    emu_box x = {(unsigned char *)dst, {}, at, 0, 0, run};
    memcpy(&x.tensor, map, sizeof x.tensor);
    if (smem_u32(dst) % 128 || !x.tensor.box) {
        fprintf(stderr,
                "emu: block (%u, %u, %u) thread %u copies a vector's box to shared byte %u: %s\n", blockIdx.x,
                blockIdx.y, blockIdx.z, threadIdx.x, smem_u32(dst),
                x.tensor.box ? "off a 128-byte boundary" : "the map is an activation's");
        abort();
    }
    emu_copy_issue(bar, x);
}

#endif
