// See bf16mm.h. Not thread-safe (one host thread drives a backend, as for every backend here).
#include "backend/bf16mm/bf16mm.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/bf16.h"
#include "base/error.h"

enum { OPERAND_A, OPERAND_B, OPERAND_C, NOPERANDS };
static gm_real *buf[NOPERANDS];
static size_t cap[NOPERANDS];

// A bf16-rounded copy of src (n values) in buffer `slot`; NULL (gm_fail) when out of memory.
static const gm_real *rounded(int slot, const gm_real *src, size_t n) {
    if (cap[slot] < n) {
        gm_real *p = realloc(buf[slot], sizeof *p * n);
        if (!p) return gm_fail("cpu-bf16mm backend: out of host memory for %zu values", n), NULL;
        buf[slot] = p, cap[slot] = n;
    }
    for (size_t i = 0; i < n; i++) buf[slot][i] = (gm_real)gm_round_bf16((float)src[i]);
    return buf[slot];
}

// The residual is no GEMM operand: added in fp32 to the product as it is.
static void matmul_fwd(const gm_backend *be, gm_actval *out, const gm_actval *inp, const gm_real *W, int N, int C,
                       int OC, double scale, const gm_actval *res) {
    (void)be;
    const gm_backend *cpu = gm_backend_cpu();
    if (N <= 0 || C <= 0 || OC <= 0) return cpu->matmul_fwd(cpu, out, inp, W, N, C, OC, scale, res);
    const gm_real *w = rounded(OPERAND_A, W, (size_t)OC * C), *x = rounded(OPERAND_B, gm_as_real(inp), (size_t)N * C);
    if (w && x) cpu->matmul_fwd(cpu, out, gm_as_act(x), w, N, C, OC, scale, res);
}

static void matmul_bwd(const gm_backend *be, gm_actval *dinp, gm_grad_write dinp_write, gm_real *dW,
                       const gm_actval *dout, const gm_actval *inp, const gm_real *W, int N, int C, int OC) {
    (void)be;
    const gm_backend *cpu = gm_backend_cpu();
    if (N <= 0 || C <= 0 || OC <= 0) return cpu->matmul_bwd(cpu, dinp, dinp_write, dW, dout, inp, W, N, C, OC);
    const gm_real *d = rounded(OPERAND_A, gm_as_real(dout), (size_t)N * OC);
    const gm_real *w = dinp ? rounded(OPERAND_B, W, (size_t)OC * C) : W;
    const gm_real *x = dW ? rounded(OPERAND_C, gm_as_real(inp), (size_t)N * C) : gm_as_real(inp);
    if (d && w && x) cpu->matmul_bwd(cpu, dinp, dinp_write, dW, gm_as_act(d), gm_as_act(x), w, N, C, OC);
}

static gm_backend bf16mm;

const gm_backend *gm_backend_cpu_bf16mm(void) {
    if (!bf16mm.name) {
        bf16mm = *gm_backend_cpu();
        bf16mm.name = "cpu-bf16mm";
        bf16mm.matmul_fwd = matmul_fwd;
        bf16mm.matmul_bwd = matmul_bwd;
    }
    return &bf16mm;
}
