// Host emulation of impl/backend/cuda/mma_sm80.cuh (verify/emu/emu.h): the same functions, by the
// PTX ISA's fragment layouts (g = lane / 4, t = lane % 4).
#ifndef GM_BACKEND_CUDA_MMA_SM80_CUH
#define GM_BACKEND_CUDA_MMA_SM80_CUH

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "base/bf16.h"

// bf16 halves of a register (low: the lower-index element) as floats; two floats rounded to bf16
// (base/bf16.h: nearest even, the GPU's canonical NaN) in one register, lo in the low half.
static inline float emu_bf16_lo(uint32_t r) { return gm_bf16_to_f32((gm_bf16)(r & 0xffffu)); }
static inline float emu_bf16_hi(uint32_t r) { return gm_bf16_to_f32((gm_bf16)(r >> 16)); }
static inline uint32_t pack_bf16(float lo, float hi) {
    return (uint32_t)gm_f32_to_bf16(lo) | (uint32_t)gm_f32_to_bf16(hi) << 16;
}

// d += a b, m16n8k16: A 16 x 16 (a0: row g, k 2t, 2t+1; a1: row g+8; a2: row g, k 2t+8, 2t+9; a3:
// row g+8, k 2t+8, 2t+9), B 16 x 8 (b0: k 2t, 2t+1 of column g; b1: k 2t+8, 2t+9), D (d0, d1: row
// g, columns 2t, 2t+1; d2, d3: row g+8). Each element's 16 products summed in double, then added
// to C in float.
static inline void mma16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    const bool fault = emu_fault("mma_a");
    const uint32_t mine[6] = {a[0], a[fault ? 2 : 1], a[fault ? 1 : 2], a[3], b0, b1};
    auto s = emu_exchange(mine, sizeof mine);
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; l++) {
        uint32_t f[6];
        memcpy(f, s[l], sizeof f);
        const int g = l / 4, t = l % 4;
        const int ar[4] = {g, g + 8, g, g + 8}, ak[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
        for (int i = 0; i < 4; i++) A[ar[i]][ak[i]] = emu_bf16_lo(f[i]), A[ar[i]][ak[i] + 1] = emu_bf16_hi(f[i]);
        B[2 * t][g] = emu_bf16_lo(f[4]), B[2 * t + 1][g] = emu_bf16_hi(f[4]);
        B[2 * t + 8][g] = emu_bf16_lo(f[5]), B[2 * t + 9][g] = emu_bf16_hi(f[5]);
    }
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int e = 0; e < 4; e++) {
        const int r = g + 8 * (e / 2), c = 2 * t + (e & 1);
        double acc = 0;
        for (int k = 0; k < 16; k++) acc += (double)A[r][k] * B[k][c];
        d[e] = (float)(d[e] + acc);
    }
}

// ldmatrix .x4: lanes 8i..8i+7 give the row addresses of matrix i; register i of lane l receives
// row l/4, columns 2(l%4) and 2(l%4)+1 of matrix i (.trans: of its transpose).
static inline void emu_ldmatrix(uint32_t r[4], const __nv_bfloat16 *row, bool trans) {
    auto s = emu_exchange(&row, sizeof row);
    const int lane = threadIdx.x % 32, rr = lane / 4, cc = 2 * (lane % 4);
    for (int i = 0; i < 4; i++) {
        const uint16_t *rows[8];
        for (int j = 0; j < 8; j++) memcpy(&rows[j], s[8 * i + j], sizeof(void *));
        const uint16_t lo = trans ? rows[cc][rr] : rows[rr][cc], hi = trans ? rows[cc + 1][rr] : rows[rr][cc + 1];
        r[i] = (uint32_t)lo | (uint32_t)hi << 16;
    }
}
static inline void ldsm_x4(uint32_t r[4], const __nv_bfloat16 *row) { emu_ldmatrix(r, row, false); }
static inline void ldsm_x4_trans(uint32_t r[4], const __nv_bfloat16 *row) { emu_ldmatrix(r, row, true); }

// ex2.approx.ftz.f32: a subnormal input counts as 0, a subnormal result is 0 (the value of a normal
// result as exp2f's: the GPU's exp2f is the same MUFU.EX2 with subnormal handling around it).
static inline float ex2_ftz(float x) {
    const float r = exp2f(fabsf(x) < FLT_MIN ? 0.0f : x);
    return r < FLT_MIN ? 0.0f : r;
}

// cp.async: queued and performed at this thread's wait (the latest moment the PTX ISA allows), so a
// read of the destination before the wait sees the old bytes; with GM_EMU_COPIES=eager, performed
// at once instead (the earliest moment), so a copy into a stage that a warp still reads changes
// what it reads. src_bytes below the copy's size (16 or 4) zero-fills the rest. A commit closes the
// copies queued since the last one into a group (emu_copy_groups: each group's end in
// emu_copies); wait_group N performs every committed group but the newest N, wait_all every copy.
struct emu_copy {
    void *dst;
    const void *src;
    int bytes, size;
};
extern thread_local std::vector<emu_copy> emu_copies;
extern thread_local std::vector<size_t> emu_copy_groups;
static inline void emu_copy_land(const emu_copy &c) {
    unsigned char buf[16] = {0};
    memcpy(buf, c.src, (size_t)c.bytes);
    memcpy(c.dst, buf, (size_t)c.size);
}
static inline void emu_copy_issue(const emu_copy &c) {
    static const char *const mode = getenv("GM_EMU_COPIES");
    if (mode && !strcmp(mode, "eager")) emu_copy_land(c);
    else emu_copies.push_back(c);
}
static inline void cp_async16(void *dst, const void *src, int src_bytes) { emu_copy_issue({dst, src, src_bytes, 16}); }
static inline void cp_async4(void *dst, const void *src, int src_bytes) { emu_copy_issue({dst, src, src_bytes, 4}); }
// Perform the first n queued copies (the oldest) and drop them, and the groups they end.
static inline void emu_copies_land(size_t n) {
    for (size_t i = 0; i < n; i++) emu_copy_land(emu_copies[i]);
    emu_copies.erase(emu_copies.begin(), emu_copies.begin() + (long)n);
    size_t kept = 0;
    for (size_t end : emu_copy_groups)
        if (end > n) emu_copy_groups[kept++] = end - n;
    emu_copy_groups.resize(kept);
}
static inline void cp_async_commit(void) { emu_copy_groups.push_back(emu_copies.size()); }
template <int N> static inline void cp_async_wait(void) {
    const size_t g = emu_copy_groups.size();
    if (g > (size_t)N) emu_copies_land(emu_copy_groups[g - N - 1]);
}
static inline void cp_async_wait_all(void) {
    emu_copies_land(emu_copies.size());
    emu_copy_groups.clear();
}

#endif
