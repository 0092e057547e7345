// The GPU draws the same Philox stream as the CPU (skipped where no GPU is present).
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/device.h"
#include "base/error.h"
#include "base/rng.h"
#include "cuda_check.h"

Test(cuda_rng, gpu_stream_equals_cpu_stream) {
    CC_REQUIRE_GPU();
    const size_t n = 1 << 20;
    const uint64_t first = (1ull << 33) + 5;  // exercise the high word of the counter
    uint32_t *u = malloc(n * sizeof *u);
    float *z = malloc(n * sizeof *z);
    cr_assert(u && z);
    cr_assert_eq(gm_cuda_rng_u32(99, 4, first, u, n), 0, "%s", gm_error());
    cr_assert_eq(gm_cuda_rng_normal(99, 4, first, z, n), 0, "%s", gm_error());
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(u[i], gm_rng_u32(99, 4, first + i), "u32 element %zu", i);
        float ref = gm_rng_normal(99, 4, first + i);
        // libm and CUDA's logf/cosf may differ in the last ulps: allow 4 ulp of the magnitude.
        cr_assert_leq(fabsf(z[i] - ref), 4.0f * 1.2e-7f * fmaxf(1.0f, fabsf(ref)), "normal element %zu: %g vs %g", i, z[i], ref);
    }
    free(u);
    free(z);
}

// An empty range launches nothing: a 0-block grid is an invalid launch on a GPU (and in the
// simulator, which found it), so n = 0 must succeed without one.
Test(cuda_rng, empty_range_launches_nothing) {
    CC_REQUIRE_GPU();
    uint32_t u = 7;
    float z = 7.0f;
    cr_assert_eq(gm_cuda_rng_u32(99, 4, 0, &u, 0), 0, "%s", gm_error());
    cr_assert_eq(gm_cuda_rng_normal(99, 4, 0, &z, 0), 0, "%s", gm_error());
    cr_assert(u == 7 && z == 7.0f, "an empty range wrote its output");
}
