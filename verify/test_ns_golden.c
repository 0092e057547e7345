// Newton-Schulz's default path does not change: the outputs of gm_ns_f32 (bf16 emulated, both
// normalizer sources, as every Muon preset trains; and plain fp32) and gm_ns_f64 at the model's
// shapes (tiny and full scale, Gaussian and real gradient inputs) hash to the digests recorded in
// refdata/ns_golden.txt by the code before the NS speed work (issue 13). Any change of
// arithmetic order in the default path (another BLAS routine, a fused pass, a different
// transpose) shows up here as a changed digest, so the repro curves stay bit for bit.
//
// The bits depend on the BLAS kernels too: the file records the OpenBLAS core it was made on
// (openblas_get_corename()). On another core the test says so and compares 32 recorded entries
// of each output within a rounding bound instead: 2 sqrt(max(rows, cols)) u amp, the bound
// test_ns_naive uses between two accumulation orders, with u the unit roundoff of the case (fp64
// 2^-53, fp32 2^-24, bf16-emulated 2^-8) and amp the largest first-order sensitivity th_ns_predict
// gives for the input's singular values. The bf16 bound is loose (it only catches a wrong result,
// not a changed rounding); bitwise identity is checked only on the recorded core.
//
// GM_NS_GOLDEN_RECORD=1 rewrites the file from the current code (and fails, so a recording run is
// never mistaken for a passing one).
#include <cblas.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/linalg.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/matfile.h"
#include "helpers.h"
#include "optim/ns_coeffs.h"
#include "ortho_fixtures.h"

#define NSAMPLES 32
#define GOLDEN "refdata/ns_golden.txt"

// Inputs: Gaussian at the tiny (d 128) and full (d 768) model shapes, plus two real dumps.
static const struct {
    int rows, cols;
    const char *matfile;  // NULL: Gaussian, seed from the shape
} inputs[] = {
    {128, 128, NULL},  {384, 128, NULL},  {128, 512, NULL},   {512, 128, NULL},   {768, 768, NULL},
    {768, 3072, NULL}, {3072, 768, NULL}, {2304, 768, NULL},  {33, 77, NULL},     {77, 33, NULL},
    {0, 0, "h.5.mlp.c_fc.grad.bin"},      {0, 0, "h.5.mlp.c_proj.momentum.bin"},
};
#define NINPUTS ((int)(sizeof inputs / sizeof inputs[0]))

// Configurations: what the presets train with (quintic, 5 steps, bf16, norm of G or of bf16(G)),
// then plain fp32 and fp64.
static const struct {
    const char *name;
    int f64, bf16;
    gm_ns_norm_src norm;
} configs[] = {
    {"f32-bf16-normx", 0, 1, GM_NS_NORM_OF_X},
    {"f32-bf16-normg", 0, 1, GM_NS_NORM_OF_G},
    {"f32", 0, 0, GM_NS_NORM_OF_X},
    {"f64", 1, 0, GM_NS_NORM_OF_X},
};
#define NCONFIGS ((int)(sizeof configs / sizeof configs[0]))

typedef struct {
    char label[128];
    uint64_t digest;
    double sample[NSAMPLES];
} golden_row;

static size_t sample_at(int j, size_t n) { return (size_t)((uint64_t)j * 2654435761u % n); }

// One input as float (rows, cols); the fp64 runs use exactly these values.
static float *load_input(int ii, int *rows, int *cols, char *name, size_t name_len) {
    if (inputs[ii].matfile) {
        char rel[256];
        snprintf(rel, sizeof rel, "refdata/matrices/%s", inputs[ii].matfile);
        gm_matrix m;
        cr_assert_eq(gm_matfile_read(th_root_path(rel), &m), 0, "%s", gm_error());
        *rows = m.rows, *cols = m.cols;
        snprintf(name, name_len, "%s", inputs[ii].matfile);
        return m.data;  // the caller frees it
    }
    *rows = inputs[ii].rows, *cols = inputs[ii].cols;
    float *G = malloc((size_t)*rows * *cols * sizeof(float));
    cr_assert(G);
    th_gauss_f32(G, *rows, *cols, 7000 + *rows * 31 + *cols);
    snprintf(name, name_len, "gauss-%dx%d", *rows, *cols);
    return G;
}

// Runs every (input, config) pair; fills rows[] (NINPUTS * NCONFIGS) and bound[] (fallback tolerance).
static void compute_all(golden_row *rows, double *bound) {
    const gm_ns_coeffs *q = gm_ns_coeffs_find("quintic");
    cr_assert(q);
    for (int ii = 0; ii < NINPUTS; ii++) {
        int m, n;
        char name[96];
        float *Gf = load_input(ii, &m, &n, name, sizeof name);
        const size_t mn = (size_t)m * n;
        const int k = m < n ? m : n;
        double *G = malloc(mn * 8), *X = malloc(mn * 8), *s = malloc(k * 8), *pred = malloc(k * 8), *amp = malloc(k * 8);
        float *Xf = malloc(mn * 4);
        cr_assert(G && X && s && pred && amp && Xf);
        th_to_f64(Gf, G, (int)mn);
        cr_assert_eq(gm_singular_values_f64(G, m, n, s), 0, "%s", gm_error());
        th_ns_predict(q, 5, s, k, pred, amp);
        for (int ci = 0; ci < NCONFIGS; ci++) {
            golden_row *r = &rows[ii * NCONFIGS + ci];
            gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = q, .steps = 5, .bf16 = configs[ci].bf16,
                            .norm_src = configs[ci].norm};
            snprintf(r->label, sizeof r->label, "%s/%s", name, configs[ci].name);
            if (configs[ci].f64) {
                cr_assert_eq(gm_ns_f64(&cfg, G, X, m, n, GM_MM_BLAS), 0, "%s", gm_error());
                r->digest = gm_hash_bytes(GM_HASH_INIT, X, mn * sizeof(double));
                for (int j = 0; j < NSAMPLES; j++) r->sample[j] = X[sample_at(j, mn)];
            } else {
                cr_assert_eq(gm_ns_f32(&cfg, Gf, Xf, m, n, GM_MM_BLAS), 0, "%s", gm_error());
                r->digest = gm_hash_bytes(GM_HASH_INIT, Xf, mn * sizeof(float));
                for (int j = 0; j < NSAMPLES; j++) r->sample[j] = Xf[sample_at(j, mn)];
            }
            const double u = configs[ci].f64 ? 0x1p-53 : configs[ci].bf16 ? 0x1p-8 : 0x1p-24;
            bound[ii * NCONFIGS + ci] = 2 * sqrt((double)(m > n ? m : n)) * u * th_max(amp, k);
        }
        free(Gf), free(G), free(X), free(s), free(pred), free(amp), free(Xf);
    }
}

static void record(const char *core, const golden_row *rows) {
    const char *path = th_root_path(GOLDEN);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fprintf(f, "# Newton-Schulz golden outputs (verify/test_ns_golden.c): quintic, 5 steps, BLAS path.\n");
    fprintf(f, "# label digest(FNV-1a of the output bytes) then %d entries of the output\n", NSAMPLES);
    fprintf(f, "core %s\n", core);
    for (int i = 0; i < NINPUTS * NCONFIGS; i++) {
        fprintf(f, "%s %016llx", rows[i].label, (unsigned long long)rows[i].digest);
        for (int j = 0; j < NSAMPLES; j++) fprintf(f, " %.17g", rows[i].sample[j]);
        fprintf(f, "\n");
    }
    cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

// Reads the golden file: its core name and one row per label.
static int load(char *core, size_t core_len, golden_row *rows, int max) {
    const char *path = th_root_path(GOLDEN);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing (GM_NS_GOLDEN_RECORD=1 records it)", path);
    char line[8192];
    int n = 0;
    core[0] = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (!strncmp(line, "core ", 5)) {
            line[strcspn(line, "\n")] = 0;
            cr_assert_lt(strlen(line + 5), core_len, "%s: core name too long", path);
            memcpy(core, line + 5, strlen(line + 5) + 1);
            continue;
        }
        cr_assert_lt(n, max, "%s: more rows than cases", path);
        golden_row *r = &rows[n++];
        char *p = line, *end;
        int used;
        unsigned long long d;
        cr_assert_eq(sscanf(p, "%127s %llx%n", r->label, &d, &used), 2, "%s: bad line '%s'", path, line);
        r->digest = d;
        p += used;
        for (int j = 0; j < NSAMPLES; j++, p = end) {
            r->sample[j] = strtod(p, &end);
            cr_assert_neq(p, end, "%s: %s has fewer than %d entries", path, r->label, NSAMPLES);
        }
    }
    fclose(f);
    cr_assert_neq(core[0], 0, "%s: no 'core' line", path);
    return n;
}

Test(ns_golden, default_path_outputs_are_bitwise_unchanged, .timeout = 600) {
    gm_cpu_blas_single_thread();
    const char *core = openblas_get_corename();
    golden_row now[NINPUTS * NCONFIGS], old[NINPUTS * NCONFIGS];
    double bound[NINPUTS * NCONFIGS];
    compute_all(now, bound);
    if (getenv("GM_NS_GOLDEN_RECORD")) {
        record(core, now);
        cr_assert_fail("recorded %s on OpenBLAS core %s; unset GM_NS_GOLDEN_RECORD to test against it", GOLDEN, core);
        return;
    }
    char old_core[64];
    int n = load(old_core, sizeof old_core, old, NINPUTS * NCONFIGS);
    cr_assert_eq(n, NINPUTS * NCONFIGS, "%s has %d rows, the test has %d cases", GOLDEN, n, NINPUTS * NCONFIGS);
    const int same_core = strcmp(old_core, core) == 0;
    if (!same_core)
        cr_log_info("ns_golden: digests were recorded on OpenBLAS core %s, this is %s: comparing %d entries per "
                    "output within the rounding bound instead of bitwise",
                    old_core, core, NSAMPLES);
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(old[i].label, now[i].label, "%s row %d", GOLDEN, i);
        double worst = 0;
        for (int j = 0; j < NSAMPLES; j++) worst = fmax(worst, fabs(old[i].sample[j] - now[i].sample[j]));
        if (same_core)
            cr_expect_eq(old[i].digest, now[i].digest, "%s: output changed (digest %016llx, recorded %016llx; entries "
                         "differ by up to %.3g)", now[i].label, (unsigned long long)now[i].digest,
                         (unsigned long long)old[i].digest, worst);
        else
            cr_expect_leq(worst, bound[i], "%s: entries differ from the recorded ones by %.3g > bound %.3g",
                          now[i].label, worst, bound[i]);
    }
}
