// The H100 step model (predict.h).
#include "backend/predict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"

enum { MAX_GEMMS = 64, MAX_OPS = 64 };

typedef struct {
    double M, N, K, ms;  // row-major C (M, N) = A (M, K) B (K, N)
    int f32_out;
} measured_gemm;

struct gm_rates {
    measured_gemm gemm[MAX_GEMMS];
    int n_gemm;
    double copy_gbs, attn_fwd_tflops, attn_bwd_tflops, ortho_tflops;
    double efficiency, floor_ms;
    struct {
        char op[32];
        double efficiency;
    } op_fit[MAX_OPS];  // a memory-bound op's own fraction of the copy bandwidth, where fitted
    int n_op_fit;
    char device[32];  // the device row's key, the GPU's short name (its value, the memory, is not kept)
};

static int bad(const char *path, int line, const char *what) { return gm_fail("%s:%d: %s", path, line, what); }

// One data line "kind,key,value,unit,source" into r; -1 + gm_fail on a fault.
static int parse_line(gm_rates *r, char *line, const char *path, int ln) {
    char *field[5];
    int n = 0;
    field[n++] = line;  // the source, last, may hold commas: only the first four separate
    for (char *c = line; *c && n < 5; c++)
        if (*c == ',') *c = '\0', field[n++] = c + 1;
    if (n < 5) return bad(path, ln, "expected kind,key,value,unit,source");
    char *end;
    const double v = strtod(field[2], &end);
    if (end == field[2] || *end || !(v > 0) || !isfinite(v)) return bad(path, ln, "the value is not a positive number");
    const char *kind = field[0], *unit = field[3];
    if (!strcmp(kind, "gemm")) {
        measured_gemm g;
        char out[8];
        if (sscanf(field[1], "%lfx%lfx%lf %7s", &g.M, &g.N, &g.K, out) != 4 || (strcmp(out, "bf16") && strcmp(out, "f32")))
            return bad(path, ln, "a gemm key is MxNxK bf16|f32");
        if (strcmp(unit, "ms")) return bad(path, ln, "a gemm's unit is ms");
        if (r->n_gemm == MAX_GEMMS) return bad(path, ln, "too many gemm rows");
        g.ms = v, g.f32_out = !strcmp(out, "f32");
        r->gemm[r->n_gemm++] = g;
        return 0;
    }
    if (!strcmp(kind, "device")) {
        if (r->device[0]) return bad(path, ln, "a second device row");
        if (!field[1][0] || strlen(field[1]) >= sizeof r->device || strpbrk(field[1], " \t"))
            return bad(path, ln, "a device key is the GPU's short name, one word under 32 characters");
        if (strcmp(unit, "MiB")) return bad(path, ln, "a device's unit is MiB (its memory)");
        strcpy(r->device, field[1]);
        return 0;
    }
    struct {
        const char *kind, *unit;
        double *into;
    } scalars[] = {{"copy", "GB/s", &r->copy_gbs},
                   {"attn_fwd", "TFLOP/s", &r->attn_fwd_tflops},
                   {"attn_bwd", "TFLOP/s", &r->attn_bwd_tflops},
                   {"orthogonalize", "TFLOP/s", &r->ortho_tflops}};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        if (!strcmp(kind, scalars[i].kind)) {
            if (strcmp(unit, scalars[i].unit)) return bad(path, ln, "wrong unit for this kind");
            *scalars[i].into = v;
            return 0;
        }
    return bad(path, ln, "unknown kind (device, gemm, copy, attn_fwd, attn_bwd, orthogonalize)");
}

gm_rates *gm_rates_load(const char *path) {
    char *text;
    size_t len;
    if (gm_read_all(path, &text, &len)) return NULL;
    gm_rates *r = calloc(1, sizeof *r);
    if (!r) return free(text), gm_fail("%s: out of memory", path), NULL;
    r->efficiency = 1;
    int ln = 0, header = 0, failed = 0;
    for (char *line = text, *next; line && *line && !failed; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        ln++;
        if (line[0] == '#' || line[0] == '\0') continue;
        if (!header) {
            header = 1;
            if (strcmp(line, "kind,key,value,unit,source")) failed = bad(path, ln, "the header is not kind,key,value,unit,source");
            continue;
        }
        failed = parse_line(r, line, path, ln);
    }
    free(text);
    if (!failed &&
        !(r->device[0] && r->n_gemm && r->copy_gbs && r->attn_fwd_tflops && r->attn_bwd_tflops && r->ortho_tflops))
        failed = gm_fail("%s: needs device, gemm, copy, attn_fwd, attn_bwd and orthogonalize rows", path);
    if (failed) return free(r), NULL;
    return r;
}

void gm_rates_free(gm_rates *r) { free(r); }
void gm_rates_fit(gm_rates *r, double memory_efficiency, double floor_ms) {
    r->efficiency = memory_efficiency, r->floor_ms = floor_ms;
}
int gm_rates_fit_op(gm_rates *r, const char *op, double memory_efficiency) {
    if (!(memory_efficiency > 0) || !isfinite(memory_efficiency) || strlen(op) >= sizeof r->op_fit[0].op)
        return gm_fail("step model: op '%s': efficiency %g cannot be fitted", op, memory_efficiency);
    int i = 0;
    while (i < r->n_op_fit && strcmp(r->op_fit[i].op, op)) i++;
    if (i == MAX_OPS) return gm_fail("step model: more than %d ops fitted", MAX_OPS);
    if (i == r->n_op_fit) strcpy(r->op_fit[r->n_op_fit++].op, op);
    r->op_fit[i].efficiency = memory_efficiency;
    return 0;
}
double gm_predict_op_efficiency(const gm_rates *r, const char *op) {
    for (int i = 0; i < r->n_op_fit; i++)
        if (!strcmp(r->op_fit[i].op, op)) return r->op_fit[i].efficiency;
    return r->efficiency;
}
double gm_rates_copy_gbs(const gm_rates *r) { return r->copy_gbs; }
const char *gm_rates_device(const gm_rates *r) { return r->device; }
double gm_predict_fit_efficiency(const gm_rates *r) { return r->efficiency; }
double gm_predict_fit_floor(const gm_rates *r) { return r->floor_ms; }

const char *gm_predict_category(const char *op) {
    if (!strncmp(op, "matmul_", 7)) return "matmul";
    if (!strncmp(op, "attn_", 5)) return "attention";
    if (!strcmp(op, "orthogonalize")) return "orthogonalize";
    return "memory";
}

// The GEMM s (column-major, gm_gemm_shape) at the nearest measured shape of that output type, in
// log distance over (M, N, K), its time scaled by the FLOP ratio.
static double gemm_ms(const gm_rates *r, gm_gemm_shape s, int f32_out) {
    const double M = s.n, N = s.m, K = s.k;  // column-major C (m, n) is row-major C^T (n, m)
    double best = INFINITY, ms = 0;
    for (int i = 0; i < r->n_gemm; i++) {
        const measured_gemm *g = &r->gemm[i];
        if (g->f32_out != f32_out) continue;
        const double d = fabs(log(M / g->M)) + fabs(log(N / g->N)) + fabs(log(K / g->K));
        if (d < best) best = d, ms = g->ms * (M * N * K) / (g->M * g->N * g->K);
    }
    return ms;
}

static double memory_ms(const gm_rates *r, double bytes, double efficiency) {
    return bytes / (r->copy_gbs * efficiency * 1e6);
}

// The CUDA matmul (cuda/matmul.cu): the weight, fp32, converted to a bf16 copy on every call (4 bytes
// read, 2 written an element, 2 read by the GEMM: 6 counted beside the GEMM's own time); an
// activation operand converted the same way only where activations are stored fp32 (act_bytes 4;
// bf16 activations go to the GEMM as they are); outputs in the activation's type (out, dinp) or fp32
// (dW); those added into (dW; dinp when added into) read too (beta = 1).
static double matmul_ms(const gm_rates *r, const char *op, const gm_kernel_cost *c) {
    double ms = 0, bytes = 0;
    const double E = c->act_bytes > 0 ? c->act_bytes : 4;
    const int act_bf16 = E == 2, convert_act = !act_bf16;
    // Forward (m, n, k) = (OC, N, C): A = W (m x k), B = inp (n x k), out m x n. Backward: dinp's GEMM
    // (C, N, OC) has A = W (m x k), dout (n x k), dinp (m x n); dW's (C, OC, N, transb) has A = inp
    // (m x k), dout (n x k, the operand both share, converted once), dW (m x n, fp32).
    for (int g = 0; g < c->n_gemm; g++) {
        const gm_gemm_shape s = c->gemm[g];
        const int is_dW = !strcmp(op, "matmul_bwd") && s.transb;
        ms += gemm_ms(r, s, is_dW || !act_bf16);
        const double mk = (double)s.m * s.k, nk = (double)s.n * s.k, mn = (double)s.m * s.n;
        if (!strcmp(op, "matmul_fwd")) bytes += 6.0 * mk + 6.0 * convert_act * nk;
        else bytes += (is_dW ? 6.0 * convert_act : 6.0) * mk + s.reads_c * (is_dW ? 4.0 : E) * mn;
    }
    if (strcmp(op, "matmul_fwd") && c->n_gemm) bytes += 6.0 * convert_act * c->gemm[0].n * c->gemm[0].k;
    return ms + memory_ms(r, bytes, r->efficiency);
}

double gm_predict_ms(const gm_rates *r, const char *op, const gm_kernel_cost *c) {
    const char *cat = gm_predict_category(op);
    double ms;
    if (!strcmp(cat, "matmul")) ms = matmul_ms(r, op, c);
    else if (!strcmp(cat, "attention"))
        ms = c->flops / ((!strcmp(op, "attn_fwd") ? r->attn_fwd_tflops : r->attn_bwd_tflops) * 1e9);
    else if (!strcmp(cat, "orthogonalize")) ms = c->flops / (r->ortho_tflops * 1e9);
    else ms = memory_ms(r, c->bytes, gm_predict_op_efficiency(r, op));
    return ms > r->floor_ms ? ms : r->floor_ms;
}
