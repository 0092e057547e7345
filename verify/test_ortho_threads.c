// The CPU orthogonalize kernel runs its items in parallel (OpenMP over items, largest first,
// single-threaded BLAS inside): every item's result must be bitwise what one thread computing the
// items in order gives, whatever the thread count, and bitwise the single-matrix function
// (gm_ns_f32, gm_gram_ns_f32, gm_svd_polar_f32) times the item's scale.
#include <criterion/criterion.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/linalg.h"
#include "base/error.h"
#include "optim/ns_coeffs.h"
#include "ortho_fixtures.h"

_Static_assert(sizeof(gm_real) == sizeof(float), "this suite runs in the fp32 build");

// A Muon-like mix: repeated shapes, wide, tall, square, and one tiny item.
static const int shapes[][2] = {{96, 96}, {96, 384}, {384, 96}, {96, 96}, {288, 96}, {5, 9}, {96, 384}, {64, 64}};
#define NITEMS ((int)(sizeof shapes / sizeof shapes[0]))

static void run(const gm_ortho *cfg, float **G, float **out, int threads) {
    gm_ortho_item items[NITEMS];
    for (int i = 0; i < NITEMS; i++)
        items[i] = (gm_ortho_item){"item", out[i], G[i], shapes[i][0], shapes[i][1], 0.5 + i};
    const gm_backend *be = gm_backend_cpu();
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    be->orthogonalize(be, cfg, NITEMS, items);
    omp_set_num_threads(saved);
    cr_assert_eq(be->sync(be), 0, "%s", gm_error());
}

static void check_method(gm_ortho cfg) {
    float *G[NITEMS], *ref[NITEMS], *out[NITEMS];
    for (int i = 0; i < NITEMS; i++) {
        const size_t n = (size_t)shapes[i][0] * shapes[i][1];
        G[i] = malloc(n * 4), ref[i] = malloc(n * 4), out[i] = malloc(n * 4);
        cr_assert(G[i] && ref[i] && out[i]);
        th_gauss_f32(G[i], shapes[i][0], shapes[i][1], 300 + i);
    }
    run(&cfg, G, ref, 1);
    for (int i = 0; i < NITEMS; i++) {  // the kernel = the single-matrix function, scaled
        const int m = shapes[i][0], n = shapes[i][1];
        int rc = cfg.method == GM_ORTHO_SVD       ? gm_svd_polar_f32(G[i], out[i], m, n)
                 : cfg.method == GM_ORTHO_GRAM_NS ? gm_gram_ns_f32(&cfg, G[i], out[i], m, n, GM_MM_BLAS)
                                                  : gm_ns_f32(&cfg, G[i], out[i], m, n, GM_MM_BLAS);
        cr_assert_eq(rc, 0, "%s", gm_error());
        const float s = (float)(0.5 + i);
        for (size_t j = 0; j < (size_t)m * n; j++)
            cr_assert_eq(out[i][j] * s, ref[i][j], "method %d item %d (%dx%d) entry %zu: kernel %.9g, direct %.9g",
                         cfg.method, i, m, n, j, ref[i][j], out[i][j] * s);
    }
    for (int threads = 2; threads <= 4; threads++) {
        run(&cfg, G, out, threads);
        for (int i = 0; i < NITEMS; i++)
            cr_assert_eq(memcmp(out[i], ref[i], (size_t)shapes[i][0] * shapes[i][1] * 4), 0,
                         "method %d item %d (%dx%d): %d threads differ from 1", cfg.method, i, shapes[i][0],
                         shapes[i][1], threads);
    }
    for (int i = 0; i < NITEMS; i++) free(G[i]), free(ref[i]), free(out[i]);
}

Test(ortho_threads, newton_schulz_items_are_thread_independent) {
    check_method((gm_ortho){.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_find("quintic"), .steps = 5, .bf16 = 1,
                            .norm_src = GM_NS_NORM_OF_X});
}

Test(ortho_threads, gram_ns_items_are_thread_independent) {
    check_method((gm_ortho){.method = GM_ORTHO_GRAM_NS, .coeffs = gm_ns_coeffs_find("polar-express"), .steps = 5,
                            .bf16 = 1, .norm_src = GM_NS_NORM_OF_X, .gram_restarts = 1u << 2});
}

Test(ortho_threads, svd_items_are_thread_independent) { check_method((gm_ortho){.method = GM_ORTHO_SVD}); }
