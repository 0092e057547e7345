// Counter-based RNG: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011). Element i of stream s under seed k is a pure function of (k, s, i), so
// any element can be drawn on any device in any order, and the CPU and the GPU give the same
// stream: the integers and uniforms bit for bit; the normals go through logf/cosf/sqrtf, whose
// last ulp may differ between libm and CUDA's math library.
#ifndef GM_BASE_RNG_H
#define GM_BASE_RNG_H

#include <math.h>
#include <stdint.h>

#include "base/hostdev.h"

typedef struct {
    uint32_t v[4];
} gm_u32x4;

GM_HD static inline void gm_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

// The raw block function: 10 rounds over a 128-bit counter with a 64-bit key.
GM_HD static inline gm_u32x4 gm_philox4x32_10(gm_u32x4 ctr, uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, lo0, hi1, lo1;
        gm_mulhilo32(0xD2511F53u, ctr.v[0], &hi0, &lo0);
        gm_mulhilo32(0xCD9E8D57u, ctr.v[2], &hi1, &lo1);
        gm_u32x4 next = {{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
        ctr = next;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return ctr;
}

// Block `block` of stream `stream` under `seed`: the counter is (block, stream) as 2 x 64 bits.
GM_HD static inline gm_u32x4 gm_rng_block(uint64_t seed, uint64_t stream, uint64_t block) {
    gm_u32x4 ctr = {{(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)}};
    return gm_philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

// 32 random bits: element i of the stream.
GM_HD static inline uint32_t gm_rng_u32(uint64_t seed, uint64_t stream, uint64_t i) {
    return gm_rng_block(seed, stream, i >> 2).v[i & 3];
}

// Uniform in [0, 1) with 24 random bits (exact in fp32).
GM_HD static inline float gm_u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

GM_HD static inline float gm_rng_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    return gm_u32_to_unit(gm_rng_u32(seed, stream, i));
}

// Standard normal, element i: Box-Muller on the two uniforms of half of block i/2; u1 is taken in
// (0, 1] so the logarithm is finite.
GM_HD static inline float gm_rng_normal(uint64_t seed, uint64_t stream, uint64_t i) {
    gm_u32x4 b = gm_rng_block(seed, stream, i >> 1);
    int h = (int)(i & 1) * 2;
    float u1 = ((float)(b.v[h] >> 8) + 1.0f) * (1.0f / 16777216.0f);
    float u2 = gm_u32_to_unit(b.v[h + 1]);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

#endif
