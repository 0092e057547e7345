// Sharded Muon under mpirun for verify/test_muon_sharded.c: 7 matrices (a count no W in 2..4
// divides) of mixed shapes, the same gradients on every rank, 5 Muon steps with bf16-emulated
// Newton-Schulz as the records run it. Rank 0 writes the final parameters to argv[1].
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "base/io.h"
#include "dist/comm.h"
#include "optim/muon.h"

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    if (argc != 2) gm_die("usage: muon_shard OUT.bin");
    gm_comm c;
    if (gm_comm_open(&c, "auto", &argc, &argv, 60)) gm_die_last();
    static const int shape[7][2] = {{48, 16}, {16, 48}, {32, 32}, {96, 32}, {17, 5}, {5, 17}, {64, 16}};
    gm_opt_view views[7];
    size_t total = 0;
    for (int i = 0; i < 7; i++) {
        gm_opt_view v = {"m", total, shape[i][0], shape[i][1]};
        views[i] = v;
        total += (size_t)shape[i][0] * shape[i][1];
    }
    gm_real *p = malloc(total * sizeof *p), *g = malloc(total * sizeof *g);
    if (!p || !g) gm_die("out of memory");
    for (size_t j = 0; j < total; j++) p[j] = (gm_real)(0.02 * sin(0.37 * (double)j));
    gm_muon_hparams hp = {.lr = 0.05, .momentum = 0.95, .momentum_from = 0.85, .momentum_warmup = 3, .nesterov = 1,
                          .form = GM_MOMENTUM_EMA, .scale = GM_MUON_SCALE_ASPECT,
                          .ortho = {.method = GM_ORTHO_NS, .steps = 5, .bf16 = 1, .norm_src = GM_NS_NORM_OF_X}};
    hp.ortho.coeffs = gm_ns_coeffs_find("quintic");
    gm_muon m;
    if (!hp.ortho.coeffs || gm_muon_init(&m, gm_backend_cpu(), &hp, views, 7, &c)) gm_die_last();
    for (int s = 0; s < 5; s++) {
        for (size_t j = 0; j < total; j++) g[j] = (gm_real)(cos(0.11 * (double)j + 0.5 * s) + 0.1 * sin(0.013 * (double)j * (s + 1)));
        if (gm_muon_step(&m, p, g, 1.0, s, &c)) gm_die_last();
    }
    if (c.rank == 0 && gm_write_file_atomic(argv[1], p, total * sizeof *p)) gm_die_last();
    gm_muon_free(&m);
    free(p), free(g);
    gm_comm_close(&c);
    return 0;
}
