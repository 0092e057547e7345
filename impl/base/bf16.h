// bfloat16 <-> float32. bf16 is the upper 16 bits of an IEEE float32; conversion from fp32
// rounds to nearest, ties to even, as the GPU's __float2bfloat16_rn does; like it, every NaN
// becomes the canonical bf16 NaN 0x7FFF (sign and payload dropped), so CPU and GPU roundings agree
// bit for bit on every input. Overflow rounds to infinity.
#ifndef GM_BASE_BF16_H
#define GM_BASE_BF16_H

#include <stdint.h>
#include <string.h>

#include "base/hostdev.h"

typedef uint16_t gm_bf16;

GM_HD static inline uint32_t gm_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

GM_HD static inline float gm_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

GM_HD static inline gm_bf16 gm_f32_to_bf16(float f) {
    uint32_t u = gm_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (gm_bf16)0x7FFFu;  // the canonical NaN
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (gm_bf16)(u >> 16);
}

GM_HD static inline float gm_bf16_to_f32(gm_bf16 h) { return gm_bits_f32((uint32_t)h << 16); }

// Round a float to the nearest bf16 value and return it as a float (bf16 emulation on the CPU):
// gm_bf16_to_f32(gm_f32_to_bf16(f)), written with a select instead of an early return so that
// loops over it vectorize (Newton-Schulz rounds every product through it).
GM_HD static inline float gm_round_bf16(float f) {
    const uint32_t u = gm_f32_bits(f);
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    return gm_bits_f32((u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFF0000u : rounded);
}

#endif
