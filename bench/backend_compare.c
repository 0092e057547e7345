// backend_compare: every kernel of the backend interface (GM_BACKEND_KERNELS in backend/backend.h)
// run on the CPU reference and on the backend named, fed the same inputs, and compared output by
// output: element count, max |b - ref|, max |b - ref| / max |ref|, the normwise ||b - ref|| / ||ref||,
// bitwise equality and the first non-finite value. Two shape sets: "small" (sizes that are multiples
// of 16..128) and "odd" (sizes that are not: N = 2 x 37 tokens, C = 40, OC = 72, V = 131, heads of 8
// and 12, attention blocks of 5 tokens so that a window of 1 or 2 blocks removes keys). With the
// cuda backend it also draws the Philox streams of base/rng.h on the GPU (backend/cuda/device.h).
// Shapes stay small (every call under ~5 M multiply-adds) so a functional GPU simulator runs it.
//
// Inputs are Philox normals (and integers) from --seed, one stream per tensor. Backward kernels
// add into their gradients, which start as the same random values on both sides; outputs a kernel
// writes start as NaN on both sides, so an element the backend under test fails to write shows as
// non-finite. Where a kernel reads what another computed (rmsnorm_bwd's rstd, attn_bwd's out and
// lse) both sides are fed the CPU's values, so each row measures one kernel.
//
//   build/bench/backend_compare [--backend=cpu|cuda|guarded] [--device=N] [--seed=N]
//                               [--shapes=small|odd|all] [--out=FILE]
//
// Prints a Markdown table (or writes it atomically to --out). Exit 0 when every call ran; exit 1
// with one line after the table when the backend under test reported errors (the rows say which:
// its sync's message in the last cell).
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/act_io.h"
#include "backend/attn_mask.h"
#include "backend/cuda/device.h"
#include "backend/select.h"
#include "base/args.h"
#include "base/diff.h"
#include "base/build_info.h"
#include "base/error.h"
#include "base/help.h"
#include "base/io.h"
#include "base/rng.h"
#include "optim/ns_coeffs.h"

static const char *const USAGE =
    "usage: backend_compare [--backend=cpu|cuda|guarded|cpu-bf16mm|cpu-bf16] [--ref=cpu|cpu-bf16mm|cpu-bf16]\n"
    "                       [--device=N] [--seed=N] [--shapes=small|odd|all] [--out=FILE]\n"
    "  Runs every kernel of the backend interface on the CPU reference and on the backend named, with\n"
    "  the same random inputs, and prints one Markdown row per (kernel, case, output): max abs error,\n"
    "  max abs error / max |ref|, normwise relative error, bitwise equality, first non-finite value.\n"
    "  --backend=NAME  the backend compared with the CPU reference (default cpu)\n"
    "  --ref=NAME      the reference (default cpu): cpu, cpu-bf16mm (the CPU with the CUDA matmul's bf16 operands)\n"
    "                  or cpu-bf16 (cpu-bf16mm with bf16-rounded activations and activation gradients)\n"
    "  --device=N      its CUDA device (default 0)\n"
    "  --seed=N        Philox seed of every input (default 1)\n"
    "  --shapes=SET    small, odd (sizes that are not multiples of 32, 128 or 256) or all (default all)\n"
    "  --out=FILE      write the table to FILE atomically (default: stdout)\n";

// A shape set: every kernel runs at these sizes.
typedef struct {
    const char *name;
    int B, T, C, OC, V;       // N = B T tokens, model width C, a second width OC, vocabulary V
    int nh[2], hd[2];         // two head configurations (heads, head dim) for rotary and attention
    int block;                // attention block in tokens; windows of 1 and 2 blocks
    int eot[5];               // EOT positions of batch row 0 (-1 terminated); later rows get random ones
    size_t long_n;            // a long vector: lincomb's fp64 sums over many terms
    size_t copy_trim;         // copy this many bytes short of whole elements
    int ns[4][2], svd[2][2];  // orthogonalize items (rows, cols); equal shapes share a batch on a GPU
} shape_set;

static const shape_set SETS[] = {
    {"small", 2, 64, 64, 128, 256, {2, 1}, {16, 64}, 16, {0, 9, 10, 41, -1}, 65536, 0,
     {{32, 96}, {32, 96}, {96, 32}, {32, 32}}, {{16, 32}, {32, 16}}},
    {"odd", 2, 37, 40, 72, 131, {5, 3}, {8, 12}, 5, {0, 6, 7, 23, -1}, 40009, 2,
     {{24, 96}, {24, 96}, {40, 72}, {72, 40}}, {{13, 29}, {29, 13}}},
};
enum { NSETS = sizeof SETS / sizeof SETS[0] };

// One tensor on both backends: p[0] on the CPU reference, p[1] on the backend under test. The
// empty twin (NONE) passes NULL to both, for a kernel's optional operands. An activation (act) is in
// each side's own element (gm_actval, be->act_size bytes), holding the same values on both: those
// the coarser of the two elements represents.
typedef struct {
    void *p[2];
    size_t n;  // elements
    int act;
} twin;
static const twin NONE = {{NULL, NULL}, 0, 0};
static gm_real *R(twin t, int s) {
    if (t.act) gm_die("backend_compare: an activation passed as gm_real memory (this program's bug)");
    return t.p[s];
}
static gm_actval *A(twin t, int s) {
    if (t.p[s] && !t.act) gm_die("backend_compare: gm_real memory passed as an activation (this program's bug)");
    return t.p[s];
}
static int32_t *I(twin t, int s) { return t.p[s]; }

typedef struct {
    const gm_backend *be[2];  // [0] the CPU reference, [1] the backend under test
    uint64_t seed, stream;    // stream: the next Philox stream (one per input tensor)
    char cs[160];             // the current case, for its rows
    char err[400];            // what the backend under test reported for the last call ("" when fine)
    int failed;               // errors it reported
    char *text;               // the report so far
    size_t len, cap;
    void **dev;               // the current case's memory: pairs (reference, tested) of backend
    void **host;              //   allocations, and host buffers; freed by release()
    size_t ndev, nhost, capdev, caphost;
} bc;

// Append to the report.
static void say(bc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(bc *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (c->len + (size_t)n + 1 > c->cap) {
        c->cap = 2 * (c->len + (size_t)n + 1);
        if (!(c->text = realloc(c->text, c->cap))) gm_die("backend_compare: out of memory");
    }
    va_start(ap, fmt);
    vsnprintf(c->text + c->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    c->len += (size_t)n;
}

// Name the case the next rows belong to.
static void begin(bc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void begin(bc *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->cs, sizeof c->cs, fmt, ap);
    va_end(ap);
}

static void track(void ***list, size_t *n, size_t *cap, void *p) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        if (!(*list = realloc(*list, *cap * sizeof **list))) gm_die("backend_compare: out of memory");
    }
    (*list)[(*n)++] = p;
}

static void *host_new(bc *c, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) gm_die("backend_compare: out of memory");
    track(&c->host, &c->nhost, &c->caphost, p);
    return p;
}

// A twin of n elements of `size` bytes holding a copy of `host` on both sides.
static twin twin_new(bc *c, const void *host, size_t n, size_t size) {
    twin t = {{NULL, NULL}, n, 0};
    for (int s = 0; s < 2; s++) {
        const gm_backend *be = c->be[s];
        if (!(t.p[s] = be->alloc(be, n * size))) gm_die("%s: %s", be->name, gm_error());
        track(&c->dev, &c->ndev, &c->capdev, t.p[s]);
        be->upload(be, t.p[s], host, n * size);
    }
    return t;
}

// scale * normal draws; |x| when `positive` (second moments).
static gm_real *host_normals(bc *c, size_t n, double scale, int positive) {
    gm_real *h = host_new(c, n * sizeof *h);
    const uint64_t st = c->stream++;
    for (size_t i = 0; i < n; i++) {
        const double x = scale * gm_rng_normal(c->seed, st, i);
        h[i] = (gm_real)(positive ? fabs(x) : x);
    }
    return h;
}
static twin randn_abs(bc *c, size_t n, double scale, int positive) {
    return twin_new(c, host_normals(c, n, scale, positive), n, sizeof(gm_real));
}
static twin randn(bc *c, size_t n, double scale) { return randn_abs(c, n, scale, 0); }

// An activation twin of the n values at host: the backend under test's element first, and what it
// holds (read back) to the reference, so both sides start from the same values.
static twin act_new(bc *c, gm_real *host, size_t n) {
    twin t = {{NULL, NULL}, n, 1};
    for (int s = 0; s < 2; s++) {  // allocated in release()'s order: reference, tested
        const gm_backend *be = c->be[s];
        if (!(t.p[s] = be->alloc(be, n * be->act_size))) gm_die("%s: %s", be->name, gm_error());
        track(&c->dev, &c->ndev, &c->capdev, t.p[s]);
    }
    for (int k = 0; k < 2; k++) {  // filled tested first
        const int s = 1 - k;
        const gm_backend *be = c->be[s];
        if (gm_act_upload(be, t.p[s], host, n) || (s == 1 && gm_act_download(be, host, t.p[s], n)))
            gm_die("%s: %s", be->name, gm_error());
    }
    return t;
}
static twin randn_act(bc *c, size_t n, double scale) { return act_new(c, host_normals(c, n, scale, 0), n); }

static twin randint(bc *c, size_t n, int V) {
    int32_t *h = host_new(c, n * sizeof *h);
    const uint64_t st = c->stream++;
    for (size_t i = 0; i < n; i++) h[i] = (int32_t)(gm_rng_u32(c->seed, st, i) % (uint32_t)V);
    return twin_new(c, h, n, sizeof *h);
}

static gm_real *host_values(bc *c, size_t n, double v) {
    gm_real *h = host_new(c, n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (gm_real)v;
    return h;
}
static twin values(bc *c, size_t n, double v) { return twin_new(c, host_values(c, n, v), n, sizeof(gm_real)); }
// An output the kernel writes: NaN until it does.
static twin nans(bc *c, size_t n) { return values(c, n, NAN); }
static twin nans_act(bc *c, size_t n) { return act_new(c, host_values(c, n, NAN), n); }

// An activation gradient's buffer for a backward kernel writing it as `w` says: NaN where it is set
// (a kernel that read it would spread NaN), a random prior where it is added into.
static const gm_grad_write WRITES[2] = {GM_GRAD_SET, GM_GRAD_ADD};
static twin grad_out(bc *c, size_t n, gm_grad_write w) {
    return w == GM_GRAD_SET ? nans_act(c, n) : randn_act(c, n, 1);
}
// The row name of such an output: "dx=" set, "dx+=" added into.
static const char *grad_name(char *buf, size_t len, const char *name, gm_grad_write w) {
    snprintf(buf, len, "%s%s", name, w == GM_GRAD_SET ? "=" : "+=");
    return buf;
}

// What the reference computed into t, in a new twin on both sides: an input computed by another
// kernel, fed identically to the kernel compared.
static twin from_ref(bc *c, twin t) {
    gm_real *h = host_new(c, t.n * sizeof *h);
    if (!t.act) return c->be[0]->download(c->be[0], h, t.p[0], t.n * sizeof *h), twin_new(c, h, t.n, sizeof *h);
    if (gm_act_download(c->be[0], h, t.p[0], t.n)) gm_die("%s: %s", c->be[0]->name, gm_error());
    return act_new(c, h, t.n);
}

static void release(bc *c) {
    for (size_t i = 0; i < c->ndev; i++) c->be[i % 2]->free(c->be[i % 2], c->dev[i]);
    for (size_t i = 0; i < c->nhost; i++) free(c->host[i]);
    c->ndev = c->nhost = 0;
}

// Wait for the backend under test. An error it reports is a finding: kept (the first of a call)
// for the call's rows.
static void check_tested(bc *c) {
    if (!c->be[1]->sync(c->be[1])) return;
    if (!c->err[0]) {
        snprintf(c->err, sizeof c->err, "%s", gm_error());
        for (char *p = c->err; *p; p++)
            if (*p == '|' || *p == '\n') *p = '/';  // keep the table's cells
    }
    c->failed++;
}

// Wait for side s of a call. The reference failing is this program's bug. Each side is waited for
// before the other starts, so an error lands on the side that made it even where the two share
// one error record (the guarded backend is the CPU backend's kernels).
static void ran(bc *c, int s) {
    if (s) {
        check_tested(c);
        return;
    }
    if (c->be[0]->sync(c->be[0])) gm_die("%s (reference) failed on %s: %s", c->be[0]->name, c->cs, gm_error());
    c->err[0] = '\0';
}

// One kernel call on both backends: the statement runs with s = 0 (the reference) and s = 1 (the
// backend under test), `be` being that backend and R(t, s) / I(t, s) its copy of each twin.
#define CALL(c, ...)                                \
    do {                                            \
        for (int s = 0; s < 2; s++) {               \
            const gm_backend *be = (c)->be[s];      \
            __VA_ARGS__;                            \
            ran(c, s);                              \
        }                                           \
    } while (0)

// A row: ref and got as doubles (exact for gm_real, float and uint32), `same` whether their bits
// are equal. An element whose two values differ and either is non-finite counts as an infinite error.
static void stats_row(bc *c, const char *kernel, const char *out, const double *ref, const double *got, size_t n,
                      int same) {
    const gm_diff st = gm_diff_of(ref, got, n);
    const long bad = st.first_nonfinite;
    char note[520] = "-";
    if (c->err[0]) snprintf(note, sizeof note, "error: %s", c->err);
    else if (bad >= 0) snprintf(note, sizeof note, "at %ld: ref %.9g, got %.9g", bad, ref[bad], got[bad]);
    say(c, "| %s | %s | %s | %zu | %.3g | %.3g | %.3g | %s | %s |\n", kernel, c->cs, out, n, st.max_abs, st.rel, st.normwise,
        same ? "yes" : "no", note);
}

// The header of a table of stats_row rows, whose first column is `what`.
static void table_header(bc *c, const char *what) {
    say(c, "| %s | case | output | elements | max abs err | max abs err / max abs ref | normwise rel err | bitwise | "
           "first non-finite |\n|---|---|---|---:|---:|---:|---:|---|---|\n", what);
}

// The row of one output twin.
static void row(bc *c, const char *kernel, const char *out, twin t) {
    gm_real *a = host_new(c, t.n * sizeof *a), *b = host_new(c, t.n * sizeof *b);
    for (size_t i = 0; i < t.n; i++) b[i] = (gm_real)NAN;  // what a failed download leaves
    if (t.act) {
        if (gm_act_download(c->be[0], a, t.p[0], t.n)) gm_die("%s: %s", c->be[0]->name, gm_error());
        if (gm_act_download(c->be[1], b, t.p[1], t.n)) gm_die("%s: %s", c->be[1]->name, gm_error());
    } else {
        c->be[0]->download(c->be[0], a, t.p[0], t.n * sizeof *a);
        c->be[1]->download(c->be[1], b, t.p[1], t.n * sizeof *b);
    }
    check_tested(c);  // a download records its failure for the next sync: this one
    double *x = host_new(c, t.n * sizeof *x), *y = host_new(c, t.n * sizeof *y);
    for (size_t i = 0; i < t.n; i++) x[i] = a[i], y[i] = b[i];
    stats_row(c, kernel, out, x, y, t.n, !memcmp(a, b, t.n * sizeof *a));
}

// ---- the kernels, one function per group, each at one shape set ----

static int N_of(const shape_set *sh) { return sh->B * sh->T; }

static void k_memory(bc *c, const shape_set *sh) {
    const size_t n = (size_t)N_of(sh) * sh->C, E = sizeof(gm_real), bytes = n * E - sh->copy_trim;
    begin(c, "%s: disjoint, %zu bytes", sh->name, bytes);
    twin src = randn(c, n, 1), dst = randn(c, n, 1);
    CALL(c, be->copy(be, R(dst, s), R(src, s), bytes));
    row(c, "copy", "dst", dst);
    // memmove semantics: overlapping ranges in both directions.
    for (int dir = 0; dir < 2; dir++) {
        const int k = 7;
        begin(c, "%s: overlapping, dst = src %c %d elements, %zu bytes", sh->name, dir ? '-' : '+', k, bytes - k * E);
        twin buf = randn(c, n, 1);
        CALL(c, be->copy(be, R(buf, s) + (dir ? 0 : k), R(buf, s) + (dir ? k : 0), bytes - k * E));
        row(c, "copy", "buf", buf);
    }
    const double fills[] = {0, 0.37};
    for (int f = 0; f < 2; f++) {
        begin(c, "%s: %g into elements [3, %zu) of %zu", sh->name, fills[f], n - 2, n);
        twin p = randn(c, n, 1);
        CALL(c, be->fill(be, R(p, s) + 3, (gm_real)fills[f], n - 5));
        row(c, "fill", "p", p);
    }
}

static void k_embed(bc *c, const shape_set *sh) {
    const int N = N_of(sh), C = sh->C, V = sh->V;
    begin(c, "%s: N=%d V=%d C=%d", sh->name, N, V, C);
    twin table = randn(c, (size_t)V * C, 1), ids = randint(c, N, V), out = nans_act(c, (size_t)N * C);
    CALL(c, be->embed_fwd(be, A(out, s), I(ids, s), R(table, s), N, C));
    row(c, "embed_fwd", "out", out);
    twin dout = randn_act(c, (size_t)N * C, 1), dtable = randn(c, (size_t)V * C, 1);
    CALL(c, be->embed_bwd(be, R(dtable, s), I(ids, s), A(dout, s), N, V, C));
    row(c, "embed_bwd", "dtable", dtable);
}

static void k_matmul(bc *c, const shape_set *sh) {
    const int N = N_of(sh), C = sh->C;
    const int ocs[2] = {sh->OC, sh->V};  // a layer, and the head onto the vocabulary
    for (int o = 0; o < 2; o++) {
        const int OC = ocs[o];
        begin(c, "%s: N=%d C=%d OC=%d", sh->name, N, C, OC);
        twin inp = randn_act(c, (size_t)N * C, 1), W = randn(c, (size_t)OC * C, 1 / sqrt(C)), out = nans_act(c, (size_t)N * OC);
        CALL(c, be->matmul_fwd(be, A(out, s), A(inp, s), R(W, s), N, C, OC, 1, NULL));
        row(c, "matmul_fwd", "out", out);
        twin res = randn_act(c, (size_t)N * OC, 1), out_res = nans_act(c, (size_t)N * OC);
        CALL(c, be->matmul_fwd(be, A(out_res, s), A(inp, s), R(W, s), N, C, OC, 0.5, A(res, s)));
        row(c, "matmul_fwd", "out = 0.5 acc + res", out_res);
        twin dout = randn_act(c, (size_t)N * OC, 1);
        // Both gradients, then each alone (a backend may take another path when one is not wanted),
        // dinp set and added into.
        for (int want = 3; want >= 1; want--)
            for (int wi = 0; wi < (want & 2 ? 2 : 1); wi++) {
                const gm_grad_write w = WRITES[wi];
                char name[16];
                begin(c, "%s: N=%d C=%d OC=%d, %s", sh->name, N, C, OC,
                      want == 3 ? "dinp and dW" : want == 2 ? "dinp only" : "dW only");
                twin dinp = want & 2 ? grad_out(c, (size_t)N * C, w) : NONE;
                twin dW = want & 1 ? randn(c, (size_t)OC * C, 1) : NONE;
                CALL(c, be->matmul_bwd(be, A(dinp, s), w, R(dW, s), A(dout, s), A(inp, s), R(W, s), N, C, OC));
                if (want & 2) row(c, "matmul_bwd", grad_name(name, sizeof name, "dinp", w), dinp);
                if (want & 1) row(c, "matmul_bwd", "dW", dW);
            }
    }
}

static void k_rmsnorm(bc *c, const shape_set *sh) {
    const int N = N_of(sh);
    const int rows[2] = {N, N * sh->nh[0]}, cols[2] = {sh->C, sh->hd[0]};  // tokens; (token, head) pairs: QK-norm
    for (int i = 0; i < 2; i++) {
        const int n = rows[i], C = cols[i];
        const double eps = 1e-6;
        begin(c, "%s: %d rows of %d%s", sh->name, n, C, i ? " (QK-norm)" : "");
        twin inp = randn_act(c, (size_t)n * C, 2), out = nans_act(c, (size_t)n * C), rstd = nans(c, n);
        CALL(c, be->rmsnorm_fwd(be, A(out, s), R(rstd, s), A(inp, s), n, C, eps));
        row(c, "rmsnorm_fwd", "out", out);
        row(c, "rmsnorm_fwd", "rstd", rstd);
        twin r = from_ref(c, rstd), dout = randn_act(c, (size_t)n * C, 1);
        for (int wi = 0; wi < 2; wi++) {
            char name[16];
            twin dinp = grad_out(c, (size_t)n * C, WRITES[wi]);
            CALL(c, be->rmsnorm_bwd(be, A(dinp, s), WRITES[wi], A(dout, s), A(inp, s), R(r, s), n, C));
            row(c, "rmsnorm_bwd", grad_name(name, sizeof name, "dinp", WRITES[wi]), dinp);
        }
        // A residual mix with learnable coefficients, and a plain add, each fused with the norm.
        for (int learnable = 1; learnable >= 0; learnable--) {
            begin(c, "%s: %d rows of %d%s, %s", sh->name, n, C, i ? " (QK-norm)" : "",
                  learnable ? "learnable mix then norm" : "add then norm");
            twin pa = learnable ? values(c, 1, 0.8125) : NONE, pb = learnable ? values(c, 1, -1.3) : NONE;
            twin y = randn_act(c, (size_t)n * C, 1), sum = nans_act(c, (size_t)n * C), normed = nans_act(c, (size_t)n * C);
            twin rs = nans(c, n);
            CALL(c, be->lincomb_rmsnorm_fwd(be, A(sum, s), A(normed, s), R(rs, s), 0.75, R(pa, s), A(inp, s), -1.25,
                                            R(pb, s), A(y, s), n, C, eps));
            row(c, "lincomb_rmsnorm_fwd", "sum", sum);
            row(c, "lincomb_rmsnorm_fwd", "out", normed);
            row(c, "lincomb_rmsnorm_fwd", "rstd", rs);
        }
    }
}

static void k_rotary(bc *c, const shape_set *sh) {
    const int B = sh->B, T = sh->T;
    for (int h = 0; h < 2; h++) {
        const int NH = sh->nh[h], HD = sh->hd[h], half = HD / 2;
        const size_t n = (size_t)B * T * NH * HD;
        gm_real *cs = host_new(c, sizeof(gm_real) * T * half), *sn = host_new(c, sizeof(gm_real) * T * half);
        for (int t = 0; t < T; t++)
            for (int i = 0; i < half; i++) {
                const double angle = t * pow(10000.0, -2.0 * i / HD);
                cs[t * half + i] = (gm_real)cos(angle), sn[t * half + i] = (gm_real)sin(angle);
            }
        twin cos_t = twin_new(c, cs, (size_t)T * half, sizeof *cs);
        twin sin_t = twin_new(c, sn, (size_t)T * half, sizeof *sn);
        begin(c, "%s: B=%d T=%d NH=%d HD=%d", sh->name, B, T, NH, HD);
        twin inp = randn_act(c, n, 1), out = nans_act(c, n);
        CALL(c, be->rotary_fwd(be, A(out, s), A(inp, s), R(cos_t, s), R(sin_t, s), B, T, NH, HD, NH * HD));
        row(c, "rotary_fwd", "out", out);
        twin dout = randn_act(c, n, 1);
        for (int wi = 0; wi < 2; wi++) {
            char name[16];
            twin dinp = grad_out(c, n, WRITES[wi]);
            CALL(c, be->rotary_bwd(be, A(dinp, s), WRITES[wi], A(dout, s), R(cos_t, s), R(sin_t, s), B, T, NH, HD, NH * HD));
            row(c, "rotary_bwd", grad_name(name, sizeof name, "dinp", WRITES[wi]), dinp);
        }
        // QK-norm then rotary, fused; the backward reads the reference's rstd on both sides.
        twin qk = nans_act(c, n), rstd = nans(c, (size_t)B * T * NH);
        CALL(c, be->qknorm_rotary_fwd(be, A(qk, s), R(rstd, s), A(inp, s), R(cos_t, s), R(sin_t, s), B, T, NH, HD, NH * HD,
                                      1e-6));
        row(c, "qknorm_rotary_fwd", "out", qk);
        row(c, "qknorm_rotary_fwd", "rstd", rstd);
        twin r = from_ref(c, rstd);
        for (int wi = 0; wi < 2; wi++) {
            char name[16];
            twin dinp = grad_out(c, n, WRITES[wi]);
            CALL(c, be->qknorm_rotary_bwd(be, A(dinp, s), WRITES[wi], A(dout, s), A(inp, s), R(r, s), R(cos_t, s),
                                          R(sin_t, s), B, T, NH, HD, NH * HD));
            row(c, "qknorm_rotary_bwd", grad_name(name, sizeof name, "dinp", WRITES[wi]), dinp);
        }
    }
}

// Document ids (B, T) as the model makes them (gm_doc_ids over EOT tokens, id 1): batch row 0
// has the set's EOT positions, the other rows one EOT in 9 tokens on average.
static twin docs(bc *c, const shape_set *sh) {
    const int B = sh->B, T = sh->T;
    int32_t *ids = host_new(c, sizeof(int32_t) * B * T), *doc = host_new(c, sizeof(int32_t) * B * T);
    const uint64_t st = c->stream++;
    for (int t = 0; t < B * T; t++) ids[t] = t >= T && gm_rng_u32(c->seed, st, (uint64_t)t) % 9 == 0 ? 1 : 2;
    for (int i = 0; sh->eot[i] >= 0; i++) ids[sh->eot[i]] = 1;
    gm_doc_ids(doc, ids, B, T, 1);
    return twin_new(c, doc, (size_t)B * T, sizeof *doc);
}

static void k_attention(bc *c, const shape_set *sh) {
    const int B = sh->B, T = sh->T;
    twin doc = docs(c, sh);
    const struct {
        const char *name;
        int docs, window;
    } masks[] = {{"causal", 0, 0}, {"documents", 1, 0}, {"window 1 block", 0, 1}, {"window 2 blocks", 0, 2},
                 {"documents + window 2 blocks", 1, 2}};
    for (int h = 0; h < 2; h++)
        for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
            const int NH = sh->nh[h], HD = sh->hd[h];
            const size_t n = (size_t)B * T * NH * HD, nl = (size_t)B * NH * T;
            const double scale = 1 / sqrt(HD);
            begin(c, "%s: %s, B=%d T=%d NH=%d HD=%d block=%d", sh->name, masks[m].name, B, T, NH, HD, sh->block);
            twin q = randn_act(c, n, 1), k = randn_act(c, n, 1), v = randn_act(c, n, 1), out = nans_act(c, n), lse = nans(c, nl);
            gm_attn_mask mk[2];
            for (int s = 0; s < 2; s++)
                mk[s] = (gm_attn_mask){masks[m].docs ? I(doc, s) : NULL, sh->block, masks[m].window};
            CALL(c, be->attn_fwd(be, A(out, s), R(lse, s), A(q, s), A(k, s), A(v, s), B, T, NH, HD, scale, mk[s]));
            row(c, "attn_fwd", "out", out);
            row(c, "attn_fwd", "lse", lse);
            twin o = from_ref(c, out), l = from_ref(c, lse), dout = randn_act(c, n, 1);
            for (int wi = 0; wi < 2; wi++) {
                const gm_grad_write w = WRITES[wi];
                char name[16];
                twin dq = grad_out(c, n, w), dk = grad_out(c, n, w), dv = grad_out(c, n, w);
                CALL(c, be->attn_bwd(be, A(dq, s), A(dk, s), A(dv, s), w, A(dout, s), A(q, s), A(k, s), A(v, s),
                                     A(o, s), R(l, s), B, T, NH, HD, scale, mk[s]));
                row(c, "attn_bwd", grad_name(name, sizeof name, "dq", w), dq);
                row(c, "attn_bwd", grad_name(name, sizeof name, "dk", w), dk);
                row(c, "attn_bwd", grad_name(name, sizeof name, "dv", w), dv);
            }
        }
}

static void k_act(bc *c, const shape_set *sh) {
    const size_t n = (size_t)N_of(sh) * sh->OC;
    const gm_act acts[2] = {GM_ACT_GELU, GM_ACT_RELU2};
    for (int a = 0; a < 2; a++) {
        begin(c, "%s: %s, n=%zu", sh->name, acts[a] == GM_ACT_GELU ? "gelu" : "relu2", n);
        twin inp = randn_act(c, n, 2), out = nans_act(c, n);
        CALL(c, be->act_fwd(be, acts[a], A(out, s), A(inp, s), n));
        row(c, "act_fwd", "out", out);
        twin dout = randn_act(c, n, 1);
        for (int wi = 0; wi < 2; wi++) {
            char name[16];
            twin dinp = grad_out(c, n, WRITES[wi]);
            CALL(c, be->act_bwd(be, acts[a], A(dinp, s), WRITES[wi], A(dout, s), A(inp, s), n));
            row(c, "act_bwd", grad_name(name, sizeof name, "dinp", WRITES[wi]), dinp);
        }
    }
}

static void k_lincomb(bc *c, const shape_set *sh) {
    const size_t lens[2] = {(size_t)N_of(sh) * sh->C, sh->long_n};
    // Which operands are present: learnable scalars a and b, the second term y.
    const struct {
        const char *name;
        int pa, pb, y;
    } forms[] = {{"learnable a and b", 1, 1, 1}, {"constants only", 0, 0, 1}, {"learnable a, no y", 1, 0, 0}};
    const double ca = 0.75, cb = -1.25;
    for (int l = 0; l < 2; l++)
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            const size_t n = lens[l];
            begin(c, "%s: %s, n=%zu", sh->name, forms[f].name, n);
            twin pa = forms[f].pa ? values(c, 1, 0.8125) : NONE, pb = forms[f].pb ? values(c, 1, -1.3) : NONE;
            twin x = randn_act(c, n, 1), y = forms[f].y ? randn_act(c, n, 1) : NONE, out = nans_act(c, n);
            CALL(c, be->lincomb_fwd(be, A(out, s), ca, R(pa, s), A(x, s), cb, R(pb, s), A(y, s), n, 1, 1));
            row(c, "lincomb_fwd", "out", out);
            // Every gradient that exists: the scalars' where they are learnable; dx set, dy added
            // into, then the other way round.
            twin dout = randn_act(c, n, 1);
            for (int wi = 0; wi < 2; wi++) {
                const gm_grad_write wx = WRITES[wi], wy = WRITES[1 - wi];
                char name[16];
                twin dx = grad_out(c, n, wx), dy = forms[f].y ? grad_out(c, n, wy) : NONE;
                twin dpa = forms[f].pa ? randn(c, 1, 1) : NONE, dpb = forms[f].pb ? randn(c, 1, 1) : NONE;
                CALL(c, be->lincomb_bwd(be, A(dx, s), wx, A(dy, s), wy, R(dpa, s), R(dpb, s), A(dout, s), ca, R(pa, s),
                                        A(x, s), cb, R(pb, s), A(y, s), n, 1, 1));
                row(c, "lincomb_bwd", grad_name(name, sizeof name, "dx", wx), dx);
                if (forms[f].y) row(c, "lincomb_bwd", grad_name(name, sizeof name, "dy", wy), dy);
                if (forms[f].pa) row(c, "lincomb_bwd", "dpa", dpa);
                if (forms[f].pb) row(c, "lincomb_bwd", "dpb", dpb);
            }
        }
}

static void k_xent(bc *c, const shape_set *sh) {
    const int N = N_of(sh), V = sh->V;
    const size_t nv = (size_t)N * V;
    enum { SEPARATE, IN_PLACE, LOSS_ONLY };
    const struct {
        double cap;
        int grad;
    } forms[] = {{0, SEPARATE}, {15, SEPARATE}, {15, IN_PLACE}, {0, LOSS_ONLY}};
    const char *grads[] = {"dlogits", "dlogits = logits (in place)", "no dlogits"};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        begin(c, "%s: N=%d V=%d, cap %g, %s", sh->name, N, V, forms[f].cap, grads[forms[f].grad]);
        twin logits = randn_act(c, nv, 8), targets = randint(c, N, V), losses = nans(c, N);
        twin dlogits = forms[f].grad == SEPARATE ? nans_act(c, nv) : forms[f].grad == IN_PLACE ? logits : NONE;
        CALL(c, be->xent_fwd_bwd(be, R(losses, s), A(dlogits, s), A(logits, s), I(targets, s), N, V, forms[f].cap,
                                 1.0 / N));
        row(c, "xent_fwd_bwd", "losses", losses);
        if (forms[f].grad != LOSS_ONLY) row(c, "xent_fwd_bwd", "dlogits", dlogits);
    }
}

static void k_adam(bc *c, const shape_set *sh) {
    // Three tensors of a group: a matrix, a vector, a short one; the parameters 3 elements apart
    // (elements outside every span stay untouched), the moments packed.
    const size_t sizes[3] = {(size_t)sh->C * sh->OC, (size_t)sh->OC, 37};
    gm_adam_span spans[3];
    size_t np = 3, ns = 0;
    for (int i = 0; i < 3; i++) spans[i] = (gm_adam_span){np, ns, sizes[i]}, np += sizes[i] + 3, ns += sizes[i];
    const double lr = 0.01, b1 = 0.9, b2 = 0.95;
    const int t = 3;
    for (int mode = 0; mode < 3; mode++) {
        const gm_adam_args a = {.step_size = lr / (1 - pow(b1, t)), .bc2_sqrt = sqrt(1 - pow(b2, t)), .eps = 1e-8,
                                .beta1 = b1, .beta2 = b2, .decay = 1 - lr * 0.1, .apply_decay = mode == 1,
                                .normalize_grad = mode == 2};
        begin(c, "%s: 3 tensors (%zu, %zu, %zu), %s", sh->name, sizes[0], sizes[1], sizes[2],
              mode == 0 ? "Adam" : mode == 1 ? "AdamW decay" : "normalize_grad");
        twin p = randn(c, np, 0.05), g = randn(c, np, 0.01), m = randn(c, ns, 0.003), v = randn_abs(c, ns, 1e-4, 1);
        CALL(c, be->adam_update(be, R(p, s), R(g, s), R(m, s), R(v, s), 3, spans, &a));
        row(c, "adam_update", "p", p);
        row(c, "adam_update", "m", m);
        row(c, "adam_update", "v", v);
    }
}

static void k_momentum(bc *c, const shape_set *sh) {
    const size_t n = (size_t)sh->C * sh->OC;
    const double mu = 0.95;
    // buf only; u = buf; u = Nesterov's gmul*g + mu*buf (with gmul = 1 - mu, the EMA form).
    for (int form = 0; form < 3; form++) {
        const double gmul = form == 2 ? 1 - mu : 1;
        begin(c, "%s: n=%zu, mu %g, gmul %g, %s", sh->name, n, mu, gmul,
              form == 0 ? "no u" : form == 1 ? "u = buf" : "u nesterov");
        twin buf = randn(c, n, 0.1), g = randn(c, n, 1), u = form ? nans(c, n) : NONE;
        CALL(c, be->momentum(be, R(buf, s), R(u, s), R(g, s), n, mu, gmul, form == 2));
        row(c, "momentum", "buf", buf);
        if (form) row(c, "momentum", "u", u);
    }
}

static void k_orthogonalize(bc *c, const shape_set *sh) {
    const gm_ns_coeffs *quintic = gm_ns_coeffs_find("quintic");
    if (!quintic) gm_die_last();
    const gm_ortho cfgs[3] = {
        {.method = GM_ORTHO_NS, .coeffs = quintic, .steps = 5, .bf16 = 1, .norm_src = GM_NS_NORM_OF_X},
        {.method = GM_ORTHO_NS, .coeffs = quintic, .steps = 5, .bf16 = 0, .norm_src = GM_NS_NORM_OF_X},
        {.method = GM_ORTHO_SVD},
    };
    const char *names[3] = {"newton-schulz quintic x5 bf16", "newton-schulz quintic x5 fp32", "svd"};
    for (int k = 0; k < 3; k++) {
        const int count = k == 2 ? 2 : 4;
        const int(*shapes)[2] = k == 2 ? sh->svd : sh->ns;
        twin out[4];
        gm_ortho_item items[2][4];
        char item_names[4][32];
        begin(c, "%s: %s", sh->name, names[k]);
        for (int i = 0; i < count; i++) {
            const int r = shapes[i][0], q = shapes[i][1];
            snprintf(item_names[i], sizeof item_names[i], "out[%d] %dx%d", i, r, q);
            twin G = randn(c, (size_t)r * q, 0.02);
            out[i] = nans(c, (size_t)r * q);
            const double scale = sqrt(fmax(1.0, (double)r / q));  // Muon's: sqrt(max(1, rows / cols))
            for (int s = 0; s < 2; s++)
                items[s][i] = (gm_ortho_item){item_names[i], R(out[i], s), R(G, s), r, q, scale};
        }
        CALL(c, be->orthogonalize(be, &cfgs[k], count, items[s]));
        for (int i = 0; i < count; i++) row(c, "orthogonalize", item_names[i], out[i]);
    }
}

// The GPU's Philox draws against base/rng.h's, across a 2^32 boundary of the block counter.
static void rng_section(bc *c, int cuda) {
    say(c, "\n## GPU Philox (backend/cuda/device.h) against base/rng.h\n\n");
    if (!cuda) {
        say(c, "skipped: not the cuda backend\n");
        return;
    }
    const size_t n = 4099;
    const uint64_t stream = 7, first = ((uint64_t)1 << 34) - 6;
    begin(c, "seed %llu, stream %llu, elements 2^34-6 + [0, %zu)", (unsigned long long)c->seed,
          (unsigned long long)stream, n);
    table_header(c, "draw");
    uint32_t *gu = host_new(c, n * sizeof *gu), *hu = host_new(c, n * sizeof *hu);
    float *gn = host_new(c, n * sizeof *gn), *hn = host_new(c, n * sizeof *hn);
    double *x = host_new(c, n * sizeof *x), *y = host_new(c, n * sizeof *y);
    for (int kind = 0; kind < 2; kind++) {
        const int rc = kind ? gm_cuda_rng_normal(c->seed, stream, first, gn, n)
                            : gm_cuda_rng_u32(c->seed, stream, first, gu, n);
        c->err[0] = '\0';
        if (rc) snprintf(c->err, sizeof c->err, "%s", gm_error()), c->failed++;
        for (size_t i = 0; i < n; i++) {
            hu[i] = gm_rng_u32(c->seed, stream, first + i), hn[i] = gm_rng_normal(c->seed, stream, first + i);
            x[i] = kind ? hn[i] : hu[i], y[i] = kind ? gn[i] : gu[i];
            if (rc) y[i] = NAN;
        }
        const int same = !rc && (kind ? !memcmp(gn, hn, n * sizeof *gn) : !memcmp(gu, hu, n * sizeof *gu));
        stats_row(c, kind ? "gm_cuda_rng_normal" : "gm_cuda_rng_u32", kind ? "float" : "uint32", x, y, n, same);
    }
    release(c);
}

// NorMuon (record #43): a tall (per row), a square and a wide (per column) update, twice each so
// the second call starts from a non-zero state.
static void k_normuon(bc *c, const shape_set *sh) {
    const int dims[3][2] = {{sh->OC, sh->C}, {sh->C, sh->C}, {sh->C, sh->OC}};
    for (int d = 0; d < 3; d++) {
        const int rows = dims[d][0], cols = dims[d][1], by_row = rows > cols, lines = by_row ? rows : cols;
        begin(c, "%s: %dx%d per %s, beta2 0.95, two calls", sh->name, rows, cols, by_row ? "row" : "column");
        twin V = randn(c, (size_t)rows * cols, 1 / sqrt(cols)), v2 = randn_abs(c, (size_t)lines, 0.01, 1);
        CALL(c, be->normuon(be, R(V, s), R(v2, s), rows, cols, by_row, 0.95));
        CALL(c, be->normuon(be, R(V, s), R(v2, s), rows, cols, by_row, 0.95));
        row(c, "normuon", "V", V);
        row(c, "normuon", "v2", v2);
    }
}

// p - lr (u + wd mask p), plain and cautious.
static void k_muon_update(bc *c, const shape_set *sh) {
    const size_t n = (size_t)sh->C * sh->OC;
    for (int cautious = 0; cautious < 2; cautious++) {
        begin(c, "%s: n=%zu, lr 0.05, wd 0.06%s", sh->name, n, cautious ? ", cautious" : "");
        twin p = randn(c, n, 0.1), u = randn(c, n, 1);
        CALL(c, be->muon_update(be, R(p, s), R(u, s), n, 0.05, 0.06, cautious));
        row(c, "muon_update", "p", p);
    }
}

typedef void (*group)(bc *c, const shape_set *sh);
static const group GROUPS[] = {k_memory, k_embed,  k_matmul, k_rmsnorm, k_rotary,   k_attention,
                               k_act,    k_lincomb, k_xent,  k_adam,    k_momentum, k_orthogonalize,
                               k_normuon, k_muon_update};

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    const char *backend = "cpu", *ref = "cpu", *shapes = "all", *out = NULL;
    int device = 0;
    unsigned long long seed = 1;
    if (gm_help_requested(argc, argv)) return fputs(USAGE, stdout), 0;
    for (int i = 1; i < argc;) {
        const char *key, *value;
        gm_arg_next(argc, argv, &i, &key, &value);
        if (!strcmp(key, "backend")) backend = value;
        else if (!strcmp(key, "ref")) {
            if (strcmp(value, "cpu") && strcmp(value, "cpu-bf16mm") && strcmp(value, "cpu-bf16"))
                gm_die("--ref: '%s' is not cpu, cpu-bf16mm or cpu-bf16", value);
            ref = value;
        }
        else if (!strcmp(key, "device")) device = (int)gm_arg_int(key, value, 0, 1023);
        else if (!strcmp(key, "seed")) {
            if (gm_parse_u64(key, value, &seed)) gm_die_last();
        } else if (!strcmp(key, "shapes")) {
            if (strcmp(value, "small") && strcmp(value, "odd") && strcmp(value, "all"))
                gm_die("--shapes: '%s' is not small, odd or all", value);
            shapes = value;
        } else if (!strcmp(key, "out")) {
            if (!*value) gm_die("--out: empty path");
            out = value;
        } else
            gm_die("--%s: unknown flag (backend_compare --help lists them)", key);
    }
    bc c = {.seed = seed};
    c.be[0] = gm_backend_open(ref, 0);
    if (!(c.be[1] = gm_backend_open(backend, device))) gm_die_last();
    const int cuda = !strcmp(backend, "cuda");

    say(&c, "# Backend comparison: %s against %s\n\n", c.be[1]->name, c.be[0]->name);
    say(&c, "- Backend under test: `%s`", c.be[1]->name);
    if (cuda) say(&c, " (device %d)", device);
    say(&c, "; reference: `%s`. Commit: `%s`. Seed: %llu. Shapes: %s.\n", c.be[0]->name, gm_build_commit, seed, shapes);
    say(&c, "- Inputs: Philox normals from the seed, the same on both sides. Each activation gradient of a backward "
            "kernel is written both ways: set (`dx=`, over NaN, which a kernel that read it would spread) and added "
            "into (`dx+=`, over the same random values); parameter gradients add into random values; written "
            "outputs start as NaN, so an element left unwritten shows as non-finite. rmsnorm_bwd and attn_bwd read "
            "the reference's forward results on both sides.\n");
    say(&c, "- Errors of the backend under test against the reference: max |got - ref|; that over max |ref|; "
            "||got - ref|| / ||ref||; bitwise: every element's bits equal.\n\n");
    table_header(&c, "kernel");
    for (size_t g = 0; g < sizeof GROUPS / sizeof GROUPS[0]; g++)
        for (int k = 0; k < NSETS; k++)
            if (!strcmp(shapes, "all") || !strcmp(shapes, SETS[k].name)) {
                GROUPS[g](&c, &SETS[k]);
                release(&c);
            }
    rng_section(&c, cuda);

    if (out) {
        if (gm_write_file_atomic(out, c.text, c.len)) gm_die_last();
    } else {
        fwrite(c.text, 1, c.len, stdout);
        fflush(stdout);
    }
    free(c.text), free(c.dev), free(c.host);
    if (c.failed) gm_die("%s reported %d errors (the rows' last cell says which)", c.be[1]->name, c.failed);
    return 0;
}
