// bf16 conversion rounds to nearest, ties to even, over the whole bf16 range; gm_round_bf16 is the
// round trip.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>

#include "base/bf16.h"

// For every pair of adjacent finite bf16 values, the float midpoint must go to the even one,
// and the floats just below/above the midpoint to the lower/upper one.
Test(bf16, rounds_to_nearest_even_everywhere) {
    for (uint32_t h = 0; h < 0xFFFF; h++) {
        if ((h & 0x7F80u) == 0x7F80u || h == 0x7FFFu || h == 0x8000u - 1) continue;  // inf/NaN
        if ((h & 0x7FFFu) == 0x7F7Fu) continue;  // next value up is infinity, checked below
        uint32_t lo = h << 16, hi = (h + 1) << 16;
        if ((h & 0x8000u) != ((h + 1) & 0x8000u)) continue;  // sign change: not adjacent
        uint32_t mid = lo + 0x8000u;
        gm_bf16 even = (h & 1) ? (gm_bf16)(h + 1) : (gm_bf16)h;
        cr_assert_eq(gm_f32_to_bf16(gm_bits_f32(lo)), h, "exact value %08x", lo);
        cr_assert_eq(gm_f32_to_bf16(gm_bits_f32(mid)), even, "midpoint %08x", mid);
        cr_assert_eq(gm_f32_to_bf16(gm_bits_f32(mid - 1)), h, "below midpoint %08x", mid - 1);
        cr_assert_eq(gm_f32_to_bf16(gm_bits_f32(mid + 1)), (gm_bf16)(h + 1), "above midpoint %08x", mid + 1);
        (void)hi;
    }
}

Test(bf16, specials) {
    cr_assert_eq(gm_f32_to_bf16(INFINITY), 0x7F80);
    cr_assert_eq(gm_f32_to_bf16(-INFINITY), 0xFF80);
    cr_assert(isnan(gm_bf16_to_f32(gm_f32_to_bf16(NAN))));
    // A NaN whose payload sits only in the low bits must not round into infinity.
    cr_assert(isnan(gm_bf16_to_f32(gm_f32_to_bf16(gm_bits_f32(0x7F800001u)))));
    // Every NaN, of either sign and any payload, becomes 0x7FFF: __float2bfloat16_rn's canonical NaN.
    const uint32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FA5A5A5u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        cr_assert_eq(gm_f32_to_bf16(gm_bits_f32(nans[i])), 0x7FFF, "NaN %08x", nans[i]);
        cr_assert_eq(gm_f32_bits(gm_round_bf16(gm_bits_f32(nans[i]))), 0x7FFF0000u, "NaN %08x", nans[i]);
    }
    cr_assert_eq(gm_f32_to_bf16(FLT_MAX), 0x7F80, "FLT_MAX rounds up to infinity");
    cr_assert_eq(gm_f32_to_bf16(-0.0f), 0x8000);
    cr_assert_eq(gm_bf16_to_f32(0x3F80), 1.0f);
    cr_assert_eq(gm_round_bf16(1.0f + 1.0f / 256.0f), 1.0f, "tie goes to even (1.0)");
    cr_assert_eq(gm_round_bf16(1.0f + 3.0f / 256.0f), 1.0f + 4.0f / 256.0f, "tie goes to even (1+4/256)");
}

// gm_round_bf16 (written branch-free for vectorized loops) is the round trip through bf16, bit
// for bit, for every float sign/exponent with a sweep of mantissas, including infinities and
// every kind of NaN.
Test(bf16, round_is_the_round_trip_bit_for_bit) {
    for (uint64_t x = 0; x <= 0xFFFFFFFFu; x += 0x1001u) {
        for (uint32_t d = 0; d < 3; d++) {  // each sample, and its neighbours in the low bits
            const uint32_t u = (uint32_t)x ^ d;
            const float f = gm_bits_f32(u), want = gm_bf16_to_f32(gm_f32_to_bf16(f)), got = gm_round_bf16(f);
            cr_assert_eq(gm_f32_bits(got), gm_f32_bits(want), "%08x: gm_round_bf16 %08x, round trip %08x", u,
                         gm_f32_bits(got), gm_f32_bits(want));
        }
    }
    const uint32_t special[] = {0x7F800000u, 0xFF800000u, 0x7F800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FFFFFFFu,
                                0x7F7FFFFFu, 0x00000001u, 0x80000000u, 0x3F808000u, 0x3F818000u};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        const float f = gm_bits_f32(special[i]);
        cr_assert_eq(gm_f32_bits(gm_round_bf16(f)), gm_f32_bits(gm_bf16_to_f32(gm_f32_to_bf16(f))), "%08x", special[i]);
    }
}
