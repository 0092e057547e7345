// Philox4x32-10: the published known-answer vectors, counter addressing, and the distributions.
#include <criterion/criterion.h>
#include <math.h>

#include "base/rng.h"

// Known-answer tests of the Random123 distribution (kat_vectors, philox4x32 10 rounds).
Test(rng, philox_known_answers) {
    struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
        gm_u32x4 c = {{kat[k].ctr[0], kat[k].ctr[1], kat[k].ctr[2], kat[k].ctr[3]}};
        gm_u32x4 r = gm_philox4x32_10(c, kat[k].key[0], kat[k].key[1]);
        for (int j = 0; j < 4; j++) cr_assert_eq(r.v[j], kat[k].out[j], "vector %zu word %d: %08x", k, j, r.v[j]);
    }
}

Test(rng, elements_are_addressed_by_counter) {
    uint64_t seed = 0x1234567890abcdefull;
    for (uint64_t i = 0; i < 64; i++) {
        gm_u32x4 b = gm_rng_block(seed, 7, i / 4);
        cr_assert_eq(gm_rng_u32(seed, 7, i), b.v[i % 4]);
    }
    // Streams and seeds are independent: no shared values in the first 1000 elements.
    int same_stream = 0, same_seed = 0;
    for (uint64_t i = 0; i < 1000; i++) {
        same_stream += gm_rng_u32(seed, 0, i) == gm_rng_u32(seed, 1, i);
        same_seed += gm_rng_u32(seed, 0, i) == gm_rng_u32(seed + 1, 0, i);
    }
    cr_assert_leq(same_stream, 1);
    cr_assert_leq(same_seed, 1);
}

Test(rng, uniform_and_normal_moments) {
    const int n = 1 << 20;
    double su = 0, su2 = 0, sn = 0, sn2 = 0, sn4 = 0;
    float umin = 1, umax = 0;
    for (int i = 0; i < n; i++) {
        float u = gm_rng_uniform(42, 3, (uint64_t)i);
        float z = gm_rng_normal(42, 3, (uint64_t)i);
        cr_assert(u >= 0.0f && u < 1.0f);
        cr_assert(isfinite(z));
        umin = fminf(umin, u);
        umax = fmaxf(umax, u);
        su += u, su2 += (double)u * u;
        sn += z, sn2 += (double)z * z, sn4 += (double)z * z * z * z;
    }
    // Standard errors at n = 2^20: mean ~3e-4 (uniform) and 1e-3 (normal); bars are 5 sigma.
    cr_assert_lt(fabs(su / n - 0.5), 1.5e-3);
    cr_assert_lt(fabs(su2 / n - 1.0 / 3.0), 1.5e-3);
    cr_assert_lt(fabs(sn / n), 5e-3);
    cr_assert_lt(fabs(sn2 / n - 1.0), 7e-3);
    cr_assert_lt(fabs(sn4 / n - 3.0), 0.05, "kurtosis %f", sn4 / n);
    cr_assert_lt(umin, 1e-5);
    cr_assert_gt(umax, 1.0 - 1e-5);
}
