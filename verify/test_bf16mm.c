// The cpu-bf16mm backend (backend/bf16mm): its matmuls are the CPU's on bf16-rounded operands, bit
// for bit, and it really rounds (on unrounded operands it differs from the CPU); its other kernels
// are the CPU's own.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bf16mm/bf16mm.h"
#include "backend/cpu/cpu.h"
#include "base/bf16.h"
#include "base/rng.h"

enum { N = 37, C = 40, OC = 29 };

static gm_real *randn(size_t n, uint64_t stream, int round) {
    gm_real *x = malloc(sizeof *x * n);
    cr_assert(x);
    for (size_t i = 0; i < n; i++) {
        x[i] = (gm_real)gm_rng_normal(11, stream, i);
        if (round) x[i] = (gm_real)gm_round_bf16((float)x[i]);
    }
    return x;
}

// fwd and bwd of `be` on (inp, W, dout) into fresh buffers; dinp and dW start from the same values.
static void run(const gm_backend *be, const gm_real *inp, const gm_real *W, const gm_real *dout, gm_real *out,
                gm_real *dinp, gm_real *dW) {
    gm_real *seed_dinp = randn((size_t)N * C, 7, 0), *seed_dW = randn((size_t)OC * C, 8, 0);
    memcpy(dinp, seed_dinp, sizeof *dinp * N * C), memcpy(dW, seed_dW, sizeof *dW * OC * C);
    be->matmul_fwd(be, gm_as_act(out), gm_as_act(inp), W, N, C, OC, 1, NULL);
    be->matmul_bwd(be, gm_as_act(dinp), GM_GRAD_ADD, dW, gm_as_act(dout), gm_as_act(inp), W, N, C, OC);
    free(seed_dinp), free(seed_dW);
}

Test(bf16mm, matmul_is_the_cpu_one_on_rounded_operands) {
    const gm_backend *cpu = gm_backend_cpu(), *b = gm_backend_cpu_bf16mm();
    cr_assert_str_eq(b->name, "cpu-bf16mm");
    cr_assert(b->attn_fwd == cpu->attn_fwd && b->adam_update == cpu->adam_update && b->orthogonalize == cpu->orthogonalize);
    gm_real *x = randn((size_t)N * C, 1, 0), *w = randn((size_t)OC * C, 2, 0), *d = randn((size_t)N * OC, 3, 0);
    gm_real *xr = randn((size_t)N * C, 1, 1), *wr = randn((size_t)OC * C, 2, 1), *dr = randn((size_t)N * OC, 3, 1);
    gm_real out[2][N * OC], dinp[2][N * C], dW[2][OC * C];
    run(b, x, w, d, out[0], dinp[0], dW[0]);
    run(cpu, xr, wr, dr, out[1], dinp[1], dW[1]);
    cr_assert(!memcmp(out[0], out[1], sizeof out[0]), "forward: not the CPU's product of the rounded operands");
    cr_assert(!memcmp(dinp[0], dinp[1], sizeof dinp[0]), "dinp: not the CPU's product of the rounded operands");
    cr_assert(!memcmp(dW[0], dW[1], sizeof dW[0]), "dW: not the CPU's product of the rounded operands");
    run(cpu, x, w, d, out[1], dinp[1], dW[1]);  // unrounded: must differ
    cr_assert(memcmp(out[0], out[1], sizeof out[0]) && memcmp(dinp[0], dinp[1], sizeof dinp[0]) &&
                  memcmp(dW[0], dW[1], sizeof dW[0]),
              "cpu-bf16mm gives the unrounded CPU results: it does not round");
    free(x), free(w), free(d), free(xr), free(wr), free(dr);
}
