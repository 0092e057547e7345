// The time of one orthogonalization of a Gaussian (rows, cols) matrix on one thread (single-
// threaded OpenBLAS), as the CPU backend runs each Muon matrix: our side of bench/peers.py's
// Newton-Schulz comparison with the speedrun's NS in PyTorch. Prints one JSON line with the
// machine (gm_hardware_slug) and the seconds of every timed call (after one warm-up).
//
//   build/bench/ns_time --rows=768 --cols=3072 [--reps=5] [--ortho=newton-schulz|gram-ns]
//                       [--coeffs=quintic] [--steps=5] [--bf16=1]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/linalg.h"
#include "base/args.h"
#include "base/help.h"
#include "base/error.h"
#include "base/rng.h"
#include "base/timer.h"
#include "optim/ns_coeffs.h"
#include "train/hardware.h"

static void usage(void) {
    printf("usage: ns_time [--rows=N] [--cols=N] [--reps=N] [--ortho=newton-schulz|gram-ns] [--coeffs=NAME]\n"
           "               [--steps=N] [--bf16=0|1]\n"
           "  The time of one orthogonalization of a Gaussian matrix on one thread; one JSON line with the\n"
           "  machine and the seconds of every timed call (after one warm-up).\n"
           "  --rows      matrix rows (default 768)\n"
           "  --cols      matrix columns (default 768)\n"
           "  --reps      timed calls (default 5)\n"
           "  --ortho     newton-schulz or gram-ns (default newton-schulz; gram-ns restarts before step 2)\n"
           "  --coeffs    coefficient set (default quintic)\n"
           "  --steps     iterations (default 5)\n"
           "  --bf16      1: bf16-emulated matmuls as trained, 0: fp32 (default 1)\n");
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    if (gm_help_requested(argc, argv)) return usage(), 0;
    int rows = 768, cols = 768, reps = 5;
    gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_find("quintic"), .steps = 5, .bf16 = 1,
                    .norm_src = GM_NS_NORM_OF_X, .gram_restarts = 1u << 2};
    for (int i = 1; i < argc;) {
        const char *key, *val;
        gm_arg_next(argc, argv, &i, &key, &val);
        if (!strcmp(key, "rows")) rows = (int)gm_arg_int(key, val, 1, 1 << 16);
        else if (!strcmp(key, "cols")) cols = (int)gm_arg_int(key, val, 1, 1 << 16);
        else if (!strcmp(key, "reps")) reps = (int)gm_arg_int(key, val, 1, 1000);
        else if (!strcmp(key, "steps")) cfg.steps = (int)gm_arg_int(key, val, 1, 100);
        else if (!strcmp(key, "bf16")) cfg.bf16 = (int)gm_arg_int(key, val, 0, 1);
        else if (!strcmp(key, "coeffs")) {
            if (!(cfg.coeffs = gm_ns_coeffs_find(val))) gm_die("--coeffs: %s", gm_error());
        } else if (!strcmp(key, "ortho")) {
            if (!strcmp(val, "newton-schulz")) cfg.method = GM_ORTHO_NS;
            else if (!strcmp(val, "gram-ns")) cfg.method = GM_ORTHO_GRAM_NS;
            else gm_die("--ortho: '%s' is not newton-schulz or gram-ns", val);
        } else
            gm_die("--%s: unknown flag (known: --rows, --cols, --reps, --ortho, --coeffs, --steps, --bf16)", key);
    }
    const size_t n = (size_t)rows * cols;
    float *G = malloc(n * sizeof *G), *X = malloc(n * sizeof *X);
    if (!G || !X) gm_die("ns_time: out of memory for %d x %d", rows, cols);
    for (size_t i = 0; i < n; i++) G[i] = gm_rng_normal(11, 0, i);
    gm_cpu_blas_single_thread();
    char *slug = gm_hardware_slug();
    printf("{\"machine\": \"%s\", \"rows\": %d, \"cols\": %d, \"ortho\": \"%s\", \"coeffs\": \"%s\", \"bf16\": %d, "
           "\"threads\": 1, \"seconds\": [",
           slug, rows, cols, cfg.method == GM_ORTHO_GRAM_NS ? "gram-ns" : "newton-schulz", cfg.coeffs->name, cfg.bf16);
    free(slug);
    for (int r = -1; r < reps; r++) {
        uint64_t t0 = gm_now_ns();
        int rc = cfg.method == GM_ORTHO_GRAM_NS ? gm_gram_ns_f32(&cfg, G, X, rows, cols, GM_MM_BLAS)
                                                 : gm_ns_f32(&cfg, G, X, rows, cols, GM_MM_BLAS);
        if (rc) gm_die_last();
        if (r >= 0) printf("%s%.6f", r ? ", " : "", gm_seconds_since(t0));
    }
    printf("]}\n");
    free(G), free(X);
    return 0;
}
