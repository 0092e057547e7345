// A host emulation of the CUDA execution model, enough for the tensor-core attention's device code
// (impl/backend/cuda/attention_mma.cu and the headers it includes) to run on a CPU: attn_emu.cc
// includes that file as C++.
// One block at a time: each of its threads is an OS thread; __syncthreads is a barrier of the
// block; the warp collectives (shuffles, ballot, and mma / ldmatrix in shim/) exchange values
// through per-warp slots and a barrier of the warp; wgmma (shim/) works per warpgroup of 128
// threads. Shared memory is the array `smem` the includer defines (one block's). No timing, no
// concurrency between blocks. What each instruction does is in the shim headers, written from the
// PTX ISA's fragment layouts; that the model matches the hardware was checked by running the kernels
// that had passed on an H100 and an H200 under it (reports/gpu-sim/README.md).
#ifndef GM_VERIFY_EMU_H
#define GM_VERIFY_EMU_H

// CUDA's headers in their host form first, so that what follows cannot change how they read.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <barrier>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

// The device code is read as CUDA C++ (act_elem.cuh's device helpers) with every qualifier empty.
#define __CUDACC__ 1
#undef __device__
#undef __global__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)

// Each thread's coordinates.
extern thread_local uint3 emu_thread_idx, emu_block_idx;
extern thread_local dim3 emu_grid_dim, emu_block_dim;
#define threadIdx emu_thread_idx
#define blockIdx emu_block_idx
#define gridDim emu_grid_dim
#define blockDim emu_block_dim

// A warp's exchange: two slot sets used in turn, one barrier per collective (no lane can be more
// than one collective ahead of another lane of its warp, so the set it writes is never being read).
struct emu_warp {
    std::barrier<> *bar;
    unsigned char slot[2][32][64];
};
extern emu_warp *emu_warps;           // the running block's
extern std::barrier<> *emu_block_bar;  // the running block's
extern thread_local int emu_phase;    // this thread's next slot set

// Deposit n bytes of this lane's, wait for the warp, and return the slot set holding every lane's.
static inline unsigned char (*emu_exchange(const void *in, size_t n))[64] {
    emu_warp &w = emu_warps[threadIdx.x / 32];
    unsigned char(*s)[64] = w.slot[emu_phase];
    memcpy(s[threadIdx.x % 32], in, n);
    emu_phase ^= 1;
    w.bar->arrive_and_wait();
    return s;
}
static inline void __syncthreads() { emu_block_bar->arrive_and_wait(); }
static inline void __syncwarp(unsigned = 0xffffffffu) { emu_warps[threadIdx.x / 32].bar->arrive_and_wait(); }
template <class X> static inline X __shfl_xor_sync(unsigned, X v, int o) {
    auto s = emu_exchange(&v, sizeof v);
    X r;
    memcpy(&r, s[(threadIdx.x % 32) ^ o], sizeof r);
    return r;
}
template <class X> static inline X __shfl_down_sync(unsigned, X v, int o) {
    auto s = emu_exchange(&v, sizeof v);
    const unsigned l = threadIdx.x % 32 + o;
    X r;
    memcpy(&r, s[l < 32 ? l : threadIdx.x % 32], sizeof r);
    return r;
}
template <class X> static inline X __shfl_sync(unsigned, X v, int src) {
    auto s = emu_exchange(&v, sizeof v);
    X r;
    memcpy(&r, s[src % 32], sizeof r);
    return r;
}
static inline unsigned __ballot_sync(unsigned, int p) {
    const int mine = p != 0;
    auto s = emu_exchange(&mine, sizeof mine);
    unsigned r = 0;
    for (int l = 0; l < 32; l++) {
        int x;
        memcpy(&x, s[l], sizeof x);
        if (x) r |= 1u << l;
    }
    return r;
}
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
static inline int min(int a, int b) { return a < b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }

// Warpgroups of 128 threads (wgmma): a barrier and each thread's queue of issued operations.
struct emu_wgmma_op;
struct emu_warpgroup {
    std::barrier<> *bar;
    std::vector<emu_wgmma_op> *queue[128];
};
extern emu_warpgroup *emu_warpgroups;  // the running block's

// A deliberate fault, so that a test can show the emulation's checks fail when an instruction is
// wrong: GM_EMU_FAULT=mma_a (mma.sync reads A registers 1 and 2 swapped), wgmma_desc (wgmma
// reads descriptors with LBO and SBO swapped), wgmma_swizzle (wgmma reads without the 128-byte
// swizzle), swizzle_base (the wgmma kernels' tiles start 128 bytes past the swizzle's boundary),
// tma_parity (a TMA barrier waited on for the other phase), wgmma_write (thread 5 changes an
// accumulator of each wgmma it issues, as a kernel writing one in flight would) or sum_order (the
// one-pass backward's work indices handed out last first: shim/backend/cuda/ordered_sum.cuh) or
// named_arrive (below); unset, none.
static inline bool emu_fault(const char *name) {
    static const char *const set = getenv("GM_EMU_FAULT");
    return set && !strcmp(set, name);
}

// The block's named barriers (bar.sync / bar.arrive id, count: wgmma_sm90.cuh's named_bar_*): one
// completes when `count` threads have arrived since it last did, releasing those that wait there.
// A wait that nothing completes within GM_EMU_HANG_S seconds (default 20, as the TMA barriers'),
// or a block that ends with one part arrived (attn_emu.cc's launch), stops the emulation. With
// GM_EMU_FAULT=named_arrive thread 5 never arrives without waiting (the turn it passes is lost).
struct emu_named_barrier {
    std::mutex mu;
    std::condition_variable done;
    int arrived = 0;
    unsigned completions = 0;
};
#define EMU_NAMED_BARRIERS 16
extern emu_named_barrier *emu_named_barriers;  // the running block's
static inline void emu_named_bar(int id, int count, bool wait) {
    if (id < 1 || id >= EMU_NAMED_BARRIERS || count <= 0 || count % 32) {
        fprintf(stderr, "attn_emu: named barrier %d of %d threads: not a barrier the kernels may use\n", id, count);
        abort();
    }
    if (!wait && threadIdx.x == 5 && emu_fault("named_arrive")) return;
    static const char *const hang = getenv("GM_EMU_HANG_S");
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(hang ? atoi(hang) : 20);
    emu_named_barrier &b = emu_named_barriers[id];
    std::unique_lock<std::mutex> lock(b.mu);
    const unsigned seen = b.completions;
    if (++b.arrived == count) {
        b.arrived = 0, b.completions++;
        b.done.notify_all();
    } else if (wait && !b.done.wait_until(lock, limit, [&] { return b.completions != seen; })) {
        fprintf(stderr,
                "attn_emu: thread %u waits at named barrier %d, which nothing completed in %s s (%d of %d threads "
                "arrived): a GPU would hang\n",
                threadIdx.x, id, hang ? hang : "20", b.arrived, count);
        abort();
    }
}

#endif
