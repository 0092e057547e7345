// Per-kernel CPU timing of one training step: every backend kernel and optimizer call of a
// preset's step, timed alone at the preset's shapes on the model's own buffers (real activations
// and gradients from one training step), against this machine's ceilings measured in the same run
// (OpenBLAS sgemm 2048^3, a 256 MiB memcpy); then the whole step end to end (data, forward,
// backward, optimizer) with gm_model and the preset's optimizers, next to the sum of its kernels.
//
//   build/bench/kernels [--preset=softcap] [--scale=full] [--batch=B] [--seq=T] [--window=blocks]
//                       [--doc_len=700] [--steps=3] [--reps=30] [--flush=1] [--out=reports/bench]
//                       [--name=<file base>]
//   build/bench/kernels --compare A.csv B.csv      ratio B/A per kernel and of the step
//
// Writes <out>/<machine>-<preset>-<scale>.csv (one row per kernel, then step.* and ceiling.*
// rows) and .md; bench/kernels.gp draws the .png. Timings are never pass/fail: the machine may
// be shared, so the report carries the load average.
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/attn_mask.h"
#include "backend/cpu/cpu.h"
#include "base/args.h"
#include "base/build_info.h"
#include "base/error.h"
#include "base/io.h"
#include "base/rng.h"
#include "base/runtime.h"
#include "base/stats.h"
#include "base/timer.h"
#include "data/loader.h"
#include "data/shard.h"
#include "model/model.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "train/hardware.h"
#include "train/run_config.h"

enum { MIN_REPS = 5, MAX_REPS = 200, MAX_KERNELS = 64, MAX_SHAPES = 8, MAX_STEPS = 50, NGROUPS = 4 };
enum { SGEMM_N = 2048 };
#define MEMCPY_BYTES ((size_t)256 << 20)
#define FLUSH_BYTES ((size_t)64 << 20)  // twice this machine's 32 MiB L3: a call starts cold
#define KERNEL_BUDGET_S 0.25            // keep repeating a cheap kernel until this much time is spent
#define F ((double)sizeof(gm_real))     // bytes per element

// Which part of a step a kernel belongs to (colours the chart; forward and backward kernels both
// run inside gm_model_forward_backward, so the step times them together).
typedef enum { PH_DATA, PH_FWD, PH_BWD, PH_OPT } phase;
// The parts of a step timed end to end.
typedef enum { PART_DATA, PART_FB, PART_OPT, NPARTS } part;
static const char *const PART_NAMES[NPARTS] = {"data", "forward_backward", "optimizer"};
static part part_of(phase ph) { return ph == PH_DATA ? PART_DATA : ph == PH_OPT ? PART_OPT : PART_FB; }
// Optimizer groups in gm_group order (EMBED, HEAD, MATRIX, SCALAR), as the trainer splits them.
static const char *const GROUP_NAMES[NGROUPS] = {"embed", "head", "matrix", "scalar"};

typedef enum {
    K_EMBED_F, K_EMBED_B, K_MM_F, K_MM_B, K_NORM_F, K_NORM_B, K_ROT_F, K_ROT_B, K_ATT_F, K_ATT_B,
    K_ACT_F, K_ACT_B, K_LC_F, K_LC_B, K_XENT, K_FILL, K_ADAM, K_MUON, K_DATA
} op_kind;

// One timed call. Operand fields are read by run() per op (attention: x, y, w = q, k, v; o = out;
// aux = lse; dx, dy, dw = dq, dk, dv; d_o = dout). flops and bytes are per call; bytes count every
// element read plus every element written (a read-modify-write counts twice), once per pass.
typedef struct {
    char name[48], shape[48];
    phase ph;
    op_kind op;
    int calls;  // per training step
    double flops, bytes;
    int n1, n2, n3;  // dims, per op
    size_t n;        // elements (elementwise ops)
    double c1, c2;   // constants (lincomb coefficients, eps, softcap)
    gm_real *o, *x, *y, *w, *aux, *d_o, *dx, *dy, *dw, *pa, *pb, *dpa, *dpb;
    gm_adam *adam;
    gm_muon *muon;
    double med_ms, min_ms, max_ms;
} kernel;

typedef struct {
    gm_run_config rc;
    const gm_config *c;
    const gm_backend *be;
    gm_model m;
    int B, T, N, C, H, NH, HD, Vp, L, LA;
    gm_attn_mask mask;
    double attn_pairs;  // (q, k) pairs the mask admits, over the batch and heads
    int doc_len;        // mean synthetic document length
    gm_loader ld;
    int32_t *x, *y;  // (B, T) host batch of the last step
    gm_opt_view *views[NGROUPS];
    int nviews[NGROUPS], has_adam[NGROUPS], has_muon;
    gm_adam adam[NGROUPS];
    gm_muon muon;
    gm_muon shape_muon[MAX_SHAPES];
    gm_opt_view shape_view[MAX_SHAPES];
    int nshapes;
    kernel k[MAX_KERNELS];
    int nk, reps, flush;
    char *flush_buf;
} bench;

// ---- timing --------------------------------------------------------------------------------

static void flush_caches(bench *b) {
    if (b->flush) memset(b->flush_buf, b->flush_buf[FLUSH_BYTES - 1] + 1, FLUSH_BYTES);
}

static void run(bench *b, const kernel *k) {
    const gm_backend *be = b->be;
    switch (k->op) {
    case K_EMBED_F: be->embed_fwd(be, k->o, b->m.ids, k->w, b->N, b->C); break;
    case K_EMBED_B: be->embed_bwd(be, k->dw, b->m.ids, k->d_o, b->N, b->Vp, b->C); break;
    case K_MM_F: be->matmul_fwd(be, k->o, k->x, k->w, k->n1, k->n2, k->n3); break;
    case K_MM_B: be->matmul_bwd(be, k->dx, k->dw, k->d_o, k->x, k->w, k->n1, k->n2, k->n3); break;
    case K_NORM_F: be->rmsnorm_fwd(be, k->o, k->aux, k->x, k->n1, k->n2, k->c1); break;
    case K_NORM_B: be->rmsnorm_bwd(be, k->dx, k->d_o, k->x, k->aux, k->n1, k->n2); break;
    case K_ROT_F: be->rotary_fwd(be, k->o, k->x, b->m.cos_t, b->m.sin_t, b->B, b->T, b->NH, b->HD); break;
    case K_ROT_B: be->rotary_bwd(be, k->dx, k->d_o, b->m.cos_t, b->m.sin_t, b->B, b->T, b->NH, b->HD); break;
    case K_ATT_F:
        be->attn_fwd(be, k->o, k->aux, k->x, k->y, k->w, b->B, b->T, b->NH, b->HD, k->c1, b->mask);
        break;
    case K_ATT_B:
        be->attn_bwd(be, k->dx, k->dy, k->dw, k->d_o, k->x, k->y, k->w, k->o, k->aux, b->B, b->T, b->NH, b->HD,
                     k->c1, b->mask);
        break;
    case K_ACT_F: be->act_fwd(be, b->c->mlp_act, k->o, k->x, k->n); break;
    case K_ACT_B: be->act_bwd(be, b->c->mlp_act, k->dx, k->d_o, k->x, k->n); break;
    case K_LC_F: be->lincomb_fwd(be, k->o, k->c1, k->pa, k->x, k->c2, k->pb, k->y, k->n); break;
    case K_LC_B:
        be->lincomb_bwd(be, k->dx, k->dy, k->dpa, k->dpb, k->d_o, k->c1, k->pa, k->x, k->c2, k->pb, k->y, k->n);
        break;
    case K_XENT:
        be->xent_fwd_bwd(be, k->aux, k->dx, k->x, b->m.targets, k->n1, b->Vp, k->c1, k->dx ? 1.0 / b->N : 0);
        break;
    case K_FILL: be->fill(be, k->o, 0, k->n); break;
    case K_ADAM: gm_adam_step(k->adam, b->m.p, b->m.g, 1.0); break;
    case K_MUON:
        if (gm_muon_step(k->muon, b->m.p, b->m.g, 1.0, b->rc.steps / 2, NULL)) gm_die_last();
        break;
    case K_DATA: gm_loader_next(&b->ld, b->x, b->y); break;
    }
}

// One warm-up call, then at least MIN_REPS timed calls (each after a cache flush, so it starts as
// cold as inside a step), more for cheap kernels until KERNEL_BUDGET_S of kernel time.
static void time_kernel(bench *b, kernel *k) {
    double t[MAX_REPS], spent = 0;
    int n = 0;
    run(b, k);
    while (n < b->reps && (n < MIN_REPS || spent < KERNEL_BUDGET_S)) {
        flush_caches(b);
        uint64_t t0 = gm_now_ns();
        run(b, k);
        t[n] = gm_seconds_since(t0) * 1e3;
        spent += t[n++] * 1e-3;
    }
    k->med_ms = gm_median(t, n);
    k->min_ms = t[0], k->max_ms = t[n - 1];
}

// ---- ceilings ------------------------------------------------------------------------------

// OpenBLAS sgemm C (n, n) = A B at n = 2048: 2 n^3 flops; median of 5 after a warm-up, GFLOP/s.
static double sgemm_gflops(void) {
    const int n = SGEMM_N;
    float *A = malloc(sizeof(float) * n * n), *B = malloc(sizeof(float) * n * n), *C = malloc(sizeof(float) * n * n);
    if (!A || !B || !C) gm_die("kernels: out of memory for the sgemm ceiling");
    for (size_t i = 0; i < (size_t)n * n; i++) A[i] = gm_rng_normal(1, 1, i), B[i] = gm_rng_normal(1, 2, i);
    double t[5];
    for (int r = -1; r < 5; r++) {
        uint64_t t0 = gm_now_ns();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
        if (r >= 0) t[r] = gm_seconds_since(t0);
    }
    free(A), free(B), free(C);
    return 2.0 * n * n * (double)n / gm_median(t, 5) * 1e-9;
}

// A 256 MiB copy split over the OpenMP threads (one thread alone does not saturate memory):
// bytes moved = 2 x 256 MiB (read + write, the kernels' convention); median of 5, GB/s.
static double memcpy_gbs(void) {
    char *src = malloc(MEMCPY_BYTES), *dst = malloc(MEMCPY_BYTES);
    if (!src || !dst) gm_die("kernels: out of memory for the memcpy ceiling");
    memset(src, 1, MEMCPY_BYTES), memset(dst, 2, MEMCPY_BYTES);
    double t[5];
    for (int r = -1; r < 5; r++) {
        uint64_t t0 = gm_now_ns();
#pragma omp parallel
        {
            size_t nt = (size_t)omp_get_num_threads(), i = (size_t)omp_get_thread_num();
            size_t chunk = MEMCPY_BYTES / nt, at = i * chunk;
            memcpy(dst + at, src + at, i + 1 == nt ? MEMCPY_BYTES - at : chunk);
        }
        if (r >= 0) t[r] = gm_seconds_since(t0);
    }
    free(src), free(dst);
    return 2.0 * (double)MEMCPY_BYTES / gm_median(t, 5) * 1e-9;
}

// ---- set-up: model, data, optimizers --------------------------------------------------------

// A shard of the llm.c format with documents like FineWeb's: an EOT opens each document, lengths
// exponential with mean doc_len, other tokens uniform. Written in a temporary folder, mapped by
// the loader and unlinked at once (the mapping outlives the name).
static void open_synthetic_data(bench *b, int doc_len) {
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/gm_kernels_XXXXXX", tmp);
    if (!mkdtemp(dir)) gm_die("kernels: cannot create a temporary folder under %s", tmp);
    snprintf(path, sizeof path, "%s/train_000.bin", dir);
    size_t count = 16 * (size_t)b->N + 1;  // 16 distinct batches, then the loader wraps
    uint16_t *tok = malloc(count * sizeof *tok);
    if (!tok) gm_die("kernels: out of memory for the synthetic shard");
    size_t next_doc = 0;
    for (size_t i = 0; i < count; i++) {
        if (i == next_doc) {
            tok[i] = (uint16_t)b->c->eot;
            next_doc += 1 + (size_t)(-log(1.0 - gm_rng_uniform(7, 1, i)) * (doc_len - 1));
            continue;
        }
        uint32_t t = gm_rng_u32(7, 2, i) % (uint32_t)(b->c->vocab - 1);
        tok[i] = (uint16_t)(t >= (uint32_t)b->c->eot ? t + 1 : t);
    }
    int rc = gm_shard_write(path, tok, count);
    free(tok);
    if (rc || gm_loader_open(&b->ld, path, b->B, b->T, 0, 1, b->c->vocab)) gm_die_last();
    unlink(path), rmdir(dir);
}

// Split the parameter table into the preset's optimizer groups, as the trainer does (embed, head,
// scalar: Adam; matrices: Muon, or Adam for the adamw preset), and one single-matrix Muon per
// distinct matrix shape for the per-shape rows.
static void build_optimizers(bench *b) {
    const gm_table *tab = &b->m.params;
    const gm_run_config *rc = &b->rc;
    for (int g = 0; g < NGROUPS; g++)
        if (!(b->views[g] = calloc((size_t)tab->n + 1, sizeof(gm_opt_view)))) gm_die("kernels: out of memory");
    for (int i = 0; i < tab->n; i++) {
        const gm_view *v = &tab->v[i];
        int g = (int)v->group - 1;
        if (g < 0 || g >= NGROUPS) gm_die("kernels: parameter %s has no optimizer group", v->name);
        b->views[g][b->nviews[g]++] = (gm_opt_view){v->name, v->offset, (int)v->shape[0], (int)v->shape[1]};
    }
    const double lrs[NGROUPS] = {rc->lr_embed, rc->lr_head, rc->lr_matrix, rc->lr_scalar};
    for (int g = 0; g < NGROUPS; g++) {
        if (!b->nviews[g]) continue;
        if (g == GM_GROUP_MATRIX - 1 && rc->matrix_opt == GM_MATRIX_MUON) {
            if (gm_muon_init(&b->muon, b->be, &rc->muon, b->views[g], b->nviews[g], NULL)) gm_die_last();
            b->has_muon = 1;
            for (int i = 0; i < b->nviews[g]; i++) {
                const gm_opt_view *v = &b->views[g][i];
                int s = 0;
                while (s < b->nshapes && (b->shape_view[s].rows != v->rows || b->shape_view[s].cols != v->cols)) s++;
                if (s == b->nshapes) {
                    if (s == MAX_SHAPES) gm_die("kernels: more than %d matrix shapes", MAX_SHAPES);
                    b->shape_view[b->nshapes++] = *v;
                }
            }
            for (int s = 0; s < b->nshapes; s++)
                if (gm_muon_init(&b->shape_muon[s], b->be, &rc->muon, &b->shape_view[s], 1, NULL)) gm_die_last();
        } else {
            gm_adam_hparams hp = rc->adam;
            hp.lr = lrs[g];
            if (gm_adam_init(&b->adam[g], b->be, &hp, b->views[g], b->nviews[g])) gm_die_last();
            b->has_adam[g] = 1;
        }
    }
}

// ---- the step, end to end -------------------------------------------------------------------

// One training step; t[part] gets each part's seconds. The gradient reset belongs to the
// forward/backward (it is the first write of the gradients it produces).
static void step(bench *b, double t[NPARTS]) {
    uint64_t t0 = gm_now_ns();
    gm_loader_next(&b->ld, b->x, b->y);
    uint64_t t1 = gm_now_ns();
    gm_model_zero_grad(&b->m);
    if (isnan(gm_model_forward_backward(&b->m, b->x, b->y, b->B, b->T, 1.0)))
        gm_die("kernels: forward/backward: %s", gm_error());
    uint64_t t2 = gm_now_ns();
    for (int g = 0; g < NGROUPS; g++)
        if (b->has_adam[g]) gm_adam_step(&b->adam[g], b->m.p, b->m.g, 1.0);
    if (b->has_muon && gm_muon_step(&b->muon, b->m.p, b->m.g, 1.0, b->rc.steps / 2, NULL)) gm_die_last();
    if (b->be->sync(b->be)) gm_die("kernels: optimizer: %s", gm_error());
    uint64_t t3 = gm_now_ns();
    t[PART_DATA] = (double)(t1 - t0) * 1e-9, t[PART_FB] = (double)(t2 - t1) * 1e-9, t[PART_OPT] = (double)(t3 - t2) * 1e-9;
}

// ---- the kernel list ------------------------------------------------------------------------

static gm_real *buf_of(const gm_table *t, gm_real *base, const char *name, const char *what) {
    int i = gm_table_find(t, name);
    if (i < 0) gm_die("kernels: %s %s is not in the model's table", what, name);
    if (!base) gm_die("kernels: %s %s has no buffer (no backward ran)", what, name);
    return base + t->v[i].offset;
}
// An activation by name: kept (h.<l>.<tensor>), scratch (shared by the layers) or the head chunk.
static gm_real *act_of(const bench *b, const char *name) {
    const gm_model *m = &b->m;
    const gm_table *t[3] = {&m->acts, &m->scratch, &m->head};
    gm_real *base[3] = {m->a, m->s, m->h};
    for (int i = 0; i < 3; i++)
        if (gm_table_find(t[i], name) >= 0) return buf_of(t[i], base[i], name, "activation");
    gm_die("kernels: activation %s is not in the model's tables", name);
}
#define A(name) act_of(b, name)
#define DA(name) buf_of(&b->m.dacts, b->m.da, name, "activation gradient")
#define P(name) buf_of(&b->m.params, b->m.p, name, "parameter")
#define G(name) buf_of(&b->m.params, b->m.g, name, "parameter gradient")

static kernel *add(bench *b, phase ph, op_kind op, int calls, const char *name, double flops, double bytes,
                   const char *shape_fmt, ...) __attribute__((format(printf, 8, 9)));
static kernel *add(bench *b, phase ph, op_kind op, int calls, const char *name, double flops, double bytes,
                   const char *shape_fmt, ...) {
    if (b->nk == MAX_KERNELS) gm_die("kernels: more than %d kernels", MAX_KERNELS);
    kernel *k = &b->k[b->nk++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    va_list ap;
    va_start(ap, shape_fmt);
    vsnprintf(k->shape, sizeof k->shape, shape_fmt, ap);
    va_end(ap);
    if (strchr(k->name, ',') || strchr(k->shape, ',')) gm_die("kernels: '%s' / '%s' would break the CSV", k->name, k->shape);
    k->ph = ph, k->op = op, k->calls = calls, k->flops = flops, k->bytes = bytes;
    return k;
}

// Linear layer (rows, in) -> (rows, out) with W (out, in); dinp and dout name the gradients of
// inp and out. fwd: 2 rows in out flops; reads inp, W, writes out. bwd: dinp += dout W and
// dW += dout^T inp, 4 rows in out flops; reads dout, inp, W and read-modify-writes dinp, dW.
static void add_matmul(bench *b, const char *role, int calls, int rows, const char *inp, const char *dinp,
                       const char *wname, const char *out, const char *dout, int in, int outd) {
    char name[48];
    const double n = rows, ni = in, no = outd;  // (I is complex.h's, via cblas.h)
    snprintf(name, sizeof name, "matmul.%s.fwd", role);
    kernel *k = add(b, PH_FWD, K_MM_F, calls, name, 2 * n * ni * no, F * (n * ni + no * ni + n * no), "%dx%d @ %dx%d^T",
                    rows, in, outd, in);
    k->o = A(out), k->x = A(inp), k->w = P(wname), k->n1 = rows, k->n2 = in, k->n3 = outd;
    snprintf(name, sizeof name, "matmul.%s.bwd", role);
    k = add(b, PH_BWD, K_MM_B, calls, name, 4 * n * ni * no, F * (3 * n * ni + 3 * no * ni + n * no), "%dx%d @ %dx%d^T",
            rows, in, outd, in);
    k->dx = DA(dinp), k->dw = G(wname), k->x = A(inp), k->w = P(wname);
    k->d_o = dout ? DA(dout) : A(out);  // NULL: the gradient overwrote the output in place (logits)
    k->n1 = rows, k->n2 = in, k->n3 = outd;
}

// RMSNorm over rows of `cols`: fwd ~3 flops per element (square-accumulate, scale), reads x,
// writes out and rstd; bwd ~6 (dot of dout and x, then the two-term gradient), reads dout, x,
// rstd and read-modify-writes dinp. fwd_calls count the backward's recomputations too.
static void add_rmsnorm(bench *b, const char *role, int fwd_calls, int bwd_calls, const char *inp, const char *dinp,
                        const char *out, const char *dout, const char *rstd, int rows, int cols) {
    char name[48];
    const double n = (double)rows * cols;
    snprintf(name, sizeof name, "rmsnorm.%s.fwd", role);
    kernel *k = add(b, PH_FWD, K_NORM_F, fwd_calls, name, 3 * n, F * (2 * n + rows), "%dx%d", rows, cols);
    k->o = A(out), k->aux = A(rstd), k->x = A(inp), k->n1 = rows, k->n2 = cols, k->c1 = b->c->norm_eps;
    snprintf(name, sizeof name, "rmsnorm.%s.bwd", role);
    k = add(b, PH_BWD, K_NORM_B, bwd_calls, name, 6 * n, F * (4 * n + rows), "%dx%d", rows, cols);
    k->dx = DA(dinp), k->d_o = DA(dout), k->x = A(inp), k->aux = A(rstd), k->n1 = rows, k->n2 = cols;
}

// out = ca a x + cb b y over n elements: ~3 flops per element, reads x, y, writes out. bwd: dx, dy
// read-modify-written from dout (5 passes); with learnable a, b also the two dot products
// sum(dout x), sum(dout y), reading x and y again (7 passes, ~7 flops per element).
static void add_lincomb(bench *b, const char *role, int fwd_calls, int bwd_calls, int learnable) {
    char name[48];
    const size_t n = (size_t)b->N * b->C;
    const double dn = (double)n;
    // Operands: the residual add res_mlp = res_attn + mo of layer 0 (its output's gradient lives
    // with the U-net skip sources' or in the alternating stream buffer), or layer 0's x0 mix
    // mix = l0 x0 + l1 x0 (layer 0's stream is x0 itself).
    const char *x0 = b->c->embed_norm ? "x0" : "emb";
    const char *d_res = gm_table_find(&b->m.dacts, "d.h.0.res_mlp") >= 0 ? "d.h.0.res_mlp" : "d.stream.0";
    const char *o = learnable ? "h.0.mix" : "h.0.res_mlp", *x = learnable ? x0 : "h.0.res_attn";
    const char *y = learnable ? x0 : "mo";
    snprintf(name, sizeof name, "lincomb.%s.fwd", role);
    kernel *k = add(b, PH_FWD, K_LC_F, fwd_calls, name, 3 * dn, F * 3 * dn, "%zu", n);
    k->o = A(o), k->x = A(x), k->y = A(y), k->c1 = k->c2 = 1, k->n = n;
    if (learnable) k->pa = P("h.0.lambdas"), k->pb = k->pa + 1;
    snprintf(name, sizeof name, "lincomb.%s.bwd", role);
    kernel *kb = add(b, PH_BWD, K_LC_B, bwd_calls, name, (learnable ? 7 : 3) * dn, F * (learnable ? 7 : 5) * dn, "%zu", n);
    kb->dx = DA(learnable ? "d.x0" : "d.xa"), kb->dy = DA(learnable ? "d.x0" : "d.mo");
    kb->d_o = DA(learnable ? "d.xm" : d_res), kb->x = k->x, kb->y = k->y, kb->c1 = kb->c2 = 1, kb->n = n;
    if (learnable) kb->pa = k->pa, kb->pb = k->pb, kb->dpa = G("h.0.lambdas"), kb->dpb = kb->dpa + 1;
}

// Newton-Schulz flops of one (rows, cols) block as newton_schulz.inc computes it, X (m, n) with
// m <= n, per iteration: A = X X^T by SYRK (m^2 n multiply-adds: m^2 n flops counted as executed,
// half of a GEMM), B = b A + c A A (2 m^3), X' = a X + B X (2 m^2 n).
static double ns_flops(int rows, int cols, int steps) {
    double m = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
    return steps * (3 * m * m * n + 2 * m * m * m);
}

static void build_kernels(bench *b) {
    const gm_config *c = b->c;
    const int N = b->N, C = b->C, H = b->H, Vp = b->Vp, L = b->L, LA = b->LA, NH = b->NH, HD = b->HD;
    const double NC = (double)N * C, NHd = (double)N * H;
    const int nemb = 1 + c->n_value_embeds;
    kernel *k;

    k = add(b, PH_DATA, K_DATA, 1, "data.next_batch", 0, 2.0 * (N + 1) * 2 + 2.0 * N * 4, "%dx%d", b->B, b->T);

    // Embedding gather (N, C) of the token table and of each value-embedding table: reads the
    // rows and ids, writes out. Backward: scatter-add, reading dout and read-modify-writing rows.
    const char *table = b->m.params.v[b->m.pix.embed].name;  // "lm_head" when tied
    k = add(b, PH_FWD, K_EMBED_F, nemb, "embed.fwd", 0, F * 2 * NC + 4.0 * N, "%dx%d from %dx%d", N, C, Vp, C);
    k->o = A("emb"), k->w = P(table);
    k = add(b, PH_BWD, K_EMBED_B, nemb, "embed.bwd", NC, F * 3 * NC + 4.0 * N, "%dx%d into %dx%d", N, C, Vp, C);
    k->dw = G(table), k->d_o = DA(c->embed_norm ? "d.emb" : "d.x0");

    // Norms: the embedding norm, ln1 of each attention layer, ln2 of every layer, the final
    // norm (all (N, C)), and the QK-norm of q and k per head ((N NH, HD)). The backward
    // recomputes ln1, ln2 and the QK-norm instead of keeping their outputs.
    add_rmsnorm(b, "NxC", (c->embed_norm ? 1 : 0) + 2 * (LA + L) + 1, (c->embed_norm ? 1 : 0) + LA + L + 1,
                "h.0.res_attn", "d.xa", "ln2", "d.ln2", "h.0.ln2.rstd", N, C);
    if (c->qk_norm) add_rmsnorm(b, "qk", 4 * LA, 2 * LA, "h.0.q", "d.q", "qn", "d.qn", "h.0.qn.rstd", N * NH, HD);

    const char *wq = gm_table_find(&b->m.params, "h.0.attn.c_q") >= 0 ? "h.0.attn.c_q" : "h.0.attn.c_attn";
    add_matmul(b, "qkv", 3 * LA, N, "ln1", "d.ln1", wq, "h.0.q", "d.q", C, C);
    add_matmul(b, "attn_proj", LA, N, "h.0.att", "d.att", "h.0.attn.c_proj", "ao", "d.ao", C, C);
    add_matmul(b, "mlp_fc", L, N, "ln2", "d.ln2", "h.0.mlp.c_fc", "h.0.fc", "d.fc", C, H);
    add_matmul(b, "mlp_proj", L, N, "act", "d.act", "h.0.mlp.c_proj", "mo", "d.mo", H, C);
    // The head runs on chunks of head_rows rows; its gradient overwrites the chunk's logits.
    const int rows = N < b->m.head_rows ? N : b->m.head_rows, chunks = (N + rows - 1) / rows;
    add_matmul(b, "lm_head", chunks, rows, "lnf", "d.lnf", "lm_head", "logits", NULL, C, Vp);

    // Rotary on q and k: 6 flops per pair (3 per element); reads x and the (T, HD/2) cos/sin
    // tables, writes out (backward: read-modify-writes dinp). Recomputed by the backward.
    const char *qs = c->qk_norm ? "qn" : "h.0.q", *dqs = c->qk_norm ? "d.qn" : "d.q";
    const double tab = 2.0 * b->T * (HD / 2);
    k = add(b, PH_FWD, K_ROT_F, 4 * LA, "rotary.fwd", 3 * NC, F * (2 * NC + tab), "%dx%dx%dx%d", b->B, b->T, NH, HD);
    k->o = A("qr"), k->x = A(qs);
    k = add(b, PH_BWD, K_ROT_B, 2 * LA, "rotary.bwd", 3 * NC, F * (3 * NC + tab), "%dx%dx%dx%d", b->B, b->T, NH, HD);
    k->dx = DA(dqs), k->d_o = DA("d.qr");

    // Attention over the P (q, k) pairs the mask admits (counted, not assumed): fwd QK^T and PV,
    // 4 HD flops per pair; bwd recomputes QK^T and forms dV, dP, dQ, dK, 10 HD per pair (softmax
    // exponentials not counted). Bytes as if K/V stayed in cache: fwd reads q, k, v, writes out
    // and lse; bwd reads q, k, v, out, dout, lse and read-modify-writes dq, dk, dv.
    const int vmix = gm_table_find(&b->m.scratch, "vmix") >= 0;
    const double lse = (double)N * NH;
    char ashape[48];
    snprintf(ashape, sizeof ashape, "%dx%dx%dx%d w%d", b->B, b->T, NH, HD, b->mask.window_blocks);
    k = add(b, PH_FWD, K_ATT_F, LA, "attention.fwd", 4.0 * HD * b->attn_pairs, F * (4 * NC + lse), "%s", ashape);
    k->o = A("h.0.att"), k->aux = A("h.0.lse"), k->x = A("qr"), k->y = A("kr"), k->w = A(vmix ? "vmix" : "h.0.v");
    k->c1 = 1.0 / sqrt(HD);
    const kernel *fwd = k;
    k = add(b, PH_BWD, K_ATT_B, LA, "attention.bwd", 10.0 * HD * b->attn_pairs, F * (11 * NC + lse), "%s", ashape);
    k->o = fwd->o, k->aux = fwd->aux, k->x = fwd->x, k->y = fwd->y, k->w = fwd->w, k->c1 = fwd->c1;
    k->dx = DA("d.qr"), k->dy = DA("d.kr"), k->dw = DA(vmix ? "d.vmix" : "d.v"), k->d_o = DA("d.att");

    // MLP activation over (N, H): ReLU^2 ~2 flops per element (GELU more), reads x writes out;
    // bwd ~3, reads dout and x, read-modify-writes dinp. Recomputed by the backward.
    k = add(b, PH_FWD, K_ACT_F, 2 * L, "activation.fwd", 2 * NHd, F * 2 * NHd, "%dx%d", N, H);
    k->o = A("act"), k->x = A("h.0.fc"), k->n = (size_t)N * H;
    k = add(b, PH_BWD, K_ACT_B, L, "activation.bwd", 3 * NHd, F * 4 * NHd, "%dx%d", N, H);
    k->dx = DA("d.fc"), k->d_o = DA("d.act"), k->x = A("h.0.fc"), k->n = (size_t)N * H;

    // Residual adds (constant coefficients): after attention and after the MLP. Learnable
    // scalars: U-net skips (decoder half), x0 mixing (every layer), value mixing (attention
    // layers when value embeddings exist, recomputed by the backward); timed on the x0 mix, two
    // learnable coefficients.
    add_lincomb(b, "residual", LA + L, LA + L, 0);
    int learnable = (c->unet_skips ? L - L / 2 : 0) + (c->x0_lambdas ? L : 0) + (vmix ? LA : 0);
    if (learnable && !c->x0_lambdas) gm_die("kernels: learnable lincombs without x0 lambdas are not timed yet");
    if (learnable) add_lincomb(b, "scalars", learnable + (vmix ? LA : 0), learnable, 1);

    // Softcap + cross-entropy over each chunk's (rows, Vp) logits with their gradient in the same
    // pass, in place: max, tanh cap, exp-sum, ~8 flops per logit (transcendentals as one); reads
    // the logits, writes dlogits.
    const double NV = (double)rows * Vp;
    k = add(b, PH_BWD, K_XENT, chunks, "softcap_xent.fwd_bwd", 8 * NV, F * 2 * NV, "%dx%d cap %g", rows, Vp, c->softcap);
    k->x = A("logits"), k->aux = A("losses"), k->dx = A("logits"), k->c1 = c->softcap, k->n1 = rows;

    // Gradient buffers reset each step: the parameter gradients (zero_grad), every activation
    // gradient (before the head), the per-layer ones before each block and the alternating
    // stream gradient where a block's input is no U-net skip source; writes only.
    const gm_model *m = &b->m;
    int stream_fills = 0;
    for (int l = 1; l < L; l++) stream_fills += !(c->unet_skips && l - 1 < L / 2);
    k = add(b, PH_BWD, K_FILL, 1, "zero.param_grads", 0, F * (double)m->params.total, "%zu", m->params.total);
    k->o = m->g, k->n = m->params.total;
    k = add(b, PH_BWD, K_FILL, 1, "zero.act_grads", 0, F * (double)m->dacts.total, "%zu", m->dacts.total);
    k->o = m->da, k->n = m->dacts.total;
    k = add(b, PH_BWD, K_FILL, L, "zero.layer_grads", 0, F * (double)m->gix.layer_numel, "%zu", m->gix.layer_numel);
    k->o = m->da, k->n = m->gix.layer_numel;
    if (stream_fills) {
        k = add(b, PH_BWD, K_FILL, stream_fills, "zero.stream_grad", 0, F * NC, "%dx%d", N, C);
        k->o = DA(gm_table_find(&m->dacts, "d.stream.0") >= 0 ? "d.stream.0" : "d.stream.1"), k->n = (size_t)N * C;
    }

    // Adam per group: ~13 flops per element (two moment updates, bias-corrected step with sqrt and
    // divide); reads g, read-modify-writes p, m, v.
    for (int g = 0; g < NGROUPS; g++) {
        if (!b->has_adam[g]) continue;
        char name[48];
        double n = (double)b->adam[g].state_numel;
        snprintf(name, sizeof name, "adam.%s", GROUP_NAMES[g]);
        k = add(b, PH_OPT, K_ADAM, 1, name, 13 * n, F * 7 * n, "%d tensors %.0f elements", b->nviews[g], n);
        k->adam = &b->adam[g];
    }
    // Muon per matrix shape: momentum and nesterov (~6 flops per element), Newton-Schulz (above;
    // bf16 rounding as the preset runs it, counted as fp32 work), scale and update (~3). Bytes:
    // every pass over the (rows, cols) matrix and the (m, m) Gram matrices, about
    // steps (8 m n + 10 m^2) per block plus 15 rows cols for the elementwise passes.
    const gm_ortho *o = &b->rc.muon.ortho;
    for (int s = 0; s < b->nshapes; s++) {
        const gm_opt_view *v = &b->shape_view[s];
        int count = 0;
        for (int i = 0; i < b->nviews[GM_GROUP_MATRIX - 1]; i++)
            count += b->views[GM_GROUP_MATRIX - 1][i].rows == v->rows && b->views[GM_GROUP_MATRIX - 1][i].cols == v->cols;
        int nb = b->rc.muon.split_qkv && v->rows == 3 * v->cols ? 3 : 1, br = v->rows / nb;
        double m = br < v->cols ? br : v->cols, n = br < v->cols ? v->cols : br, rc = (double)v->rows * v->cols;
        char name[48];
        snprintf(name, sizeof name, "muon.%dx%d", v->rows, v->cols);
        k = add(b, PH_OPT, K_MUON, count, name, nb * ns_flops(br, v->cols, o->steps) + 9 * rc,
                F * (nb * o->steps * (8 * m * n + 10 * m * m) + 15 * rc), "%dx%d NS%d%s", v->rows, v->cols, o->steps,
                o->bf16 ? " bf16" : "");
        k->muon = &b->shape_muon[s];
    }
}

// ---- reports --------------------------------------------------------------------------------

typedef struct {
    double sgemm, memcpy;  // ceilings used (the better of the two measurements)
    double sgemm_at[2], memcpy_at[2], load[2];
    double part_ms[NPARTS], part_min[NPARTS], part_max[NPARTS];
    double step_ms, step_min, step_max;
    int steps;
} results;

static double gflops_of(const kernel *k) { return k->med_ms > 0 ? k->flops / (k->med_ms * 1e6) : 0; }
static double gbs_of(const kernel *k) { return k->med_ms > 0 ? k->bytes / (k->med_ms * 1e6) : 0; }
// Roofline: what the machine could reach at this kernel's arithmetic intensity (flops per byte),
// min(sgemm, intensity x memcpy bandwidth); the kernel's fraction of that is how far from its
// own ceiling it runs.
static double roofline_frac(const kernel *k, const results *r) {
    double ceiling_gflops = k->bytes > 0 ? fmin(r->sgemm, k->flops / k->bytes * r->memcpy) : r->sgemm;
    if (k->flops <= 0) return r->memcpy > 0 ? gbs_of(k) / r->memcpy : 0;  // pure data movement
    return gflops_of(k) / ceiling_gflops;
}
static double total_ms(const kernel *k) { return k->calls * k->med_ms; }

static void write_or_die(gm_atomic_file *af, int rc) {
    if (rc) {
        gm_atomic_abort(af);
        gm_die_last();
    }
}
#define OUT(af, ...) write_or_die(af, gm_atomic_printf(af, __VA_ARGS__))

static void csv_row(gm_atomic_file *f, const results *r, const char *name, const char *shape, int calls, double med,
                    double mn, double mx, double flops, double bytes, double total) {
    double gf = med > 0 ? flops / (med * 1e6) : 0, gb = med > 0 ? bytes / (med * 1e6) : 0;
    OUT(f, "%s,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g,%.4g,%.6g\n", name, shape, calls, med, mn, mx, flops, bytes,
        gf, gb, gf / r->sgemm, gb / r->memcpy, total);
}

static double part_flops(const bench *b, part pt) {
    double f = 0;
    for (int i = 0; i < b->nk; i++)
        if (part_of(b->k[i].ph) == pt) f += b->k[i].calls * b->k[i].flops;
    return f;
}
static double part_bytes(const bench *b, part pt) {
    double f = 0;
    for (int i = 0; i < b->nk; i++)
        if (part_of(b->k[i].ph) == pt) f += b->k[i].calls * b->k[i].bytes;
    return f;
}
static double part_kernel_ms(const bench *b, part pt) {
    double t = 0;
    for (int i = 0; i < b->nk; i++)
        if (part_of(b->k[i].ph) == pt) t += total_ms(&b->k[i]);
    return t;
}

static void write_csv(const bench *b, const results *r, const char *path) {
    gm_atomic_file f;
    if (gm_atomic_open(&f, path)) gm_die_last();
    OUT(&f, "name,shape,calls,median_ms,min_ms,max_ms,flops,bytes,gflops,gbs,frac_sgemm,frac_memcpy,total_ms_per_step\n");
    for (int i = 0; i < b->nk; i++) {
        const kernel *k = &b->k[i];
        csv_row(&f, r, k->name, k->shape, k->calls, k->med_ms, k->min_ms, k->max_ms, k->flops, k->bytes, total_ms(k));
    }
    // The step as measured end to end: flops and bytes are its kernels' per-step sums.
    for (int p = 0; p < NPARTS; p++) {
        char name[48];
        snprintf(name, sizeof name, "step.%s", PART_NAMES[p]);
        csv_row(&f, r, name, "measured", 1, r->part_ms[p], r->part_min[p], r->part_max[p], part_flops(b, (part)p),
                part_bytes(b, (part)p), r->part_ms[p]);
    }
    double all_f = 0, all_b = 0;
    for (int p = 0; p < NPARTS; p++) all_f += part_flops(b, (part)p), all_b += part_bytes(b, (part)p);
    csv_row(&f, r, "step.total", "measured", 1, r->step_ms, r->step_min, r->step_max, all_f, all_b, r->step_ms);
    // Ceilings: calls 0, so they add nothing to a step; their ratios in --compare show the machine.
    const double n = SGEMM_N, sg_ms = 2 * n * n * n / (r->sgemm * 1e6), mc_ms = 2.0 * MEMCPY_BYTES / (r->memcpy * 1e6);
    csv_row(&f, r, "ceiling.sgemm", "2048x2048x2048", 0, sg_ms, sg_ms, sg_ms, 2 * n * n * n, F * 3 * n * n, 0);
    csv_row(&f, r, "ceiling.memcpy", "256MiB", 0, mc_ms, mc_ms, mc_ms, 0, 2.0 * MEMCPY_BYTES, 0);
    write_or_die(&f, gm_atomic_commit(&f));
}

static int by_total_desc(const void *a, const void *b) {
    double x = total_ms(*(const kernel *const *)a), y = total_ms(*(const kernel *const *)b);
    return (x < y) - (x > y);
}

static void write_md(const bench *b, const results *r, const char *path, const char *png, const char *cmdline) {
    gm_atomic_file f;
    if (gm_atomic_open(&f, path)) gm_die_last();
    const gm_config *c = b->c;
    char *hw = gm_cpu_model(), *slug = gm_hardware_slug();
    OUT(&f, "# Per-kernel CPU timings: %s / %s, B = %d, T = %d\n\n", c->name, c->scale, b->B, b->T);
    OUT(&f, "- Machine: %s, slug `%s`; OpenMP %d threads, OpenBLAS %d threads, backend `%s`.\n", hw, slug,
        omp_get_max_threads(), openblas_get_num_threads(), b->be->name);
    OUT(&f, "- Commit: `%s`. Command: `%s`.\n", gm_build_commit, cmdline);
    OUT(&f, "- Load average (1 min): %.2f at start, %.2f at end, on %ld hardware threads. Anything above ~0 means "
            "other work shared the CPU and every time below is inflated by it; compare runs only at similar load.\n",
        r->load[0], r->load[1], sysconf(_SC_NPROCESSORS_ONLN));
    OUT(&f, "- Shapes: N = B T = %d tokens, d_model %d, MLP %d, %d heads x %d, padded vocab %d, %d layers (%d with "
            "attention). Attention mask: %s, window %d blocks of %d; synthetic documents (EOT-opened, exponential "
            "lengths of mean %d tokens) leave %.0f of the %.0f causal (q, k) pairs per head.\n",
        b->N, b->C, b->H, b->NH, b->HD, b->Vp, b->L, b->LA, c->doc_mask ? "documents + causal" : "causal",
        b->mask.window_blocks, b->mask.block, b->doc_len, b->attn_pairs / b->NH, (double)b->B * b->T * (b->T + 1) / 2.0);
    OUT(&f, "- Method: each kernel alone on the model's own buffers after one training step (real activations and "
            "gradients), layer 0's operands; one warm-up call, then the median of at least %d calls (more for cheap "
            "kernels, up to %d), %s. FLOPs and bytes per call are the formulas in bench/kernels.c (bytes: every "
            "element read plus every element written). The end-to-end step is gm_model forward/backward and the "
            "preset's optimizers, median of %d steps after one warm-up.\n\n",
        MIN_REPS, b->reps, b->flush ? "each after a 64 MiB cache flush, so it starts as cold as inside a step"
                                    : "caches warm (no flush)",
        r->steps);

    OUT(&f, "## Ceilings measured in this run\n\n| ceiling | at start | at end | used |\n|---|---|---|---|\n");
    OUT(&f, "| OpenBLAS sgemm 2048^3 | %.1f GFLOP/s | %.1f GFLOP/s | %.1f GFLOP/s |\n", r->sgemm_at[0], r->sgemm_at[1],
        r->sgemm);
    OUT(&f, "| memcpy 256 MiB, all threads (read + write bytes) | %.1f GB/s | %.1f GB/s | %.1f GB/s |\n\n",
        r->memcpy_at[0], r->memcpy_at[1], r->memcpy);

    OUT(&f, "## The step end to end\n\n");
    OUT(&f, "| part | measured ms (median) | min | max | sum of its kernels alone, ms | kernels / measured |\n");
    OUT(&f, "|---|---|---|---|---|---|\n");
    double sum_parts = 0, sum_kernels = 0;
    for (int p = 0; p < NPARTS; p++) {
        double kms = part_kernel_ms(b, (part)p);
        sum_parts += r->part_ms[p], sum_kernels += kms;
        OUT(&f, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", PART_NAMES[p], r->part_ms[p], r->part_min[p],
            r->part_max[p], kms, kms / r->part_ms[p]);
    }
    OUT(&f, "| **sum of the parts** | %.2f | | | %.2f | %.2f |\n", sum_parts, sum_kernels, sum_kernels / sum_parts);
    OUT(&f, "| **whole step (median)** | %.2f | %.2f | %.2f | | |\n\n", r->step_ms, r->step_min, r->step_max);
    OUT(&f, "The parts are timed inside the same steps as the whole; their medians sum to %.1f%% of the median "
            "step. %.0f tokens/s.\n\n",
        100 * sum_parts / r->step_ms, b->N / (r->step_ms * 1e-3));
    if (b->has_muon) {
        double muon_ms = 0;
        for (int i = 0; i < b->nk; i++)
            if (b->k[i].op == K_MUON) muon_ms += total_ms(&b->k[i]);
        OUT(&f, "Optimizer: Muon over %d matrices (Newton-Schulz %d steps%s) takes %.1f ms per step from its "
                "per-shape rows, %.1f ms per matrix on average; the Adam groups are the rest.\n\n",
            b->muon.n, b->rc.muon.ortho.steps, b->rc.muon.ortho.bf16 ? ", bf16 emulated" : "", muon_ms,
            muon_ms / b->muon.n);
    }

    const double fb_ms = r->part_ms[PART_FB], fb_flops = part_flops(b, PART_FB), fb_rate = fb_flops / (fb_ms * 1e6);
    OUT(&f, "**Forward + backward: %.1f GFLOP per step in %.1f ms = %.1f GFLOP/s, %.2f of the measured sgemm rate** "
            "(the CPU target is 0.5).\n\n",
        fb_flops * 1e-9, fb_ms, fb_rate, fb_rate / r->sgemm);

    const kernel *sorted[MAX_KERNELS];
    for (int i = 0; i < b->nk; i++) sorted[i] = &b->k[i];
    qsort(sorted, (size_t)b->nk, sizeof sorted[0], by_total_desc);
    OUT(&f, "Slowest forward/backward kernels (time per step; fraction of their roofline ceiling = min(sgemm, "
            "intensity x memcpy)):\n\n");
    for (int i = 0, shown = 0; i < b->nk && shown < 3; i++) {
        const kernel *k = sorted[i];
        if (k->ph != PH_FWD && k->ph != PH_BWD) continue;
        OUT(&f, "%d. `%s` (%s): %.1f ms per step (%.0f%% of forward+backward), %.1f GFLOP/s, %.1f GB/s, %.2f of "
                "its ceiling.\n",
            ++shown, k->name, k->shape, total_ms(k), 100 * total_ms(k) / fb_ms, gflops_of(k), gbs_of(k),
            roofline_frac(k, r));
    }
    OUT(&f, "\n## Kernels, sorted by time per step\n\n![time per step per kernel](%s)\n\n", png);
    OUT(&f, "| kernel | shape | calls | median ms | min | max | GFLOP/s | GB/s | of sgemm | of memcpy | of roofline | "
            "ms per step | of step |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < b->nk; i++) {
        const kernel *k = sorted[i];
        OUT(&f, "| %s | %s | %d | %.4g | %.4g | %.4g | %.1f | %.1f | %.3f | %.3f | %.2f | %.4g | %.1f%% |\n", k->name,
            k->shape, k->calls, k->med_ms, k->min_ms, k->max_ms, gflops_of(k), gbs_of(k), gflops_of(k) / r->sgemm,
            gbs_of(k) / r->memcpy, roofline_frac(k, r), total_ms(k), 100 * total_ms(k) / r->step_ms);
    }
    write_or_die(&f, gm_atomic_commit(&f));
    free(hw), free(slug);
}

// ---- --compare A.csv B.csv ------------------------------------------------------------------

typedef struct {
    char name[48];
    double med, total;
} csv_entry;

static int read_csv(const char *path, csv_entry *e, int cap) {
    FILE *f = fopen(path, "r");
    if (!f) gm_die("%s: cannot open", path);
    char line[1024];
    if (!fgets(line, sizeof line, f) || strncmp(line, "name,shape,calls,median_ms", 26) != 0)
        gm_die("%s: not a kernels CSV (header should start name,shape,calls,median_ms)", path);
    int n = 0, ln = 1;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (n == cap) gm_die("%s: more than %d rows", path, cap);
        char *field[13];
        int nf = 0;
        for (char *s = strtok(line, ",\n"); s && nf < 13; s = strtok(NULL, ",\n")) field[nf++] = s;
        if (nf != 13) gm_die("%s:%d: %d fields, expected 13", path, ln, nf);
        snprintf(e[n].name, sizeof e[n].name, "%s", field[0]);
        e[n].med = atof(field[3]), e[n].total = atof(field[12]);
        n++;
    }
    fclose(f);
    return n;
}

static void compare(const char *pa, const char *pb) {
    enum { CAP = 256 };
    static csv_entry a[CAP], b[CAP];
    int na = read_csv(pa, a, CAP), nb = read_csv(pb, b, CAP);
    printf("A = %s\nB = %s\n\n%-26s %12s %12s %8s %14s %14s %8s\n", pa, pb, "kernel", "A median ms", "B median ms",
           "B/A", "A ms/step", "B ms/step", "B/A");
    for (int i = 0; i < na; i++) {
        int j = 0;
        while (j < nb && strcmp(a[i].name, b[j].name)) j++;
        if (j == nb) {
            printf("%-26s %12.4g %12s (only in A)\n", a[i].name, a[i].med, "-");
            continue;
        }
        printf("%-26s %12.4g %12.4g %8.3f %14.4g %14.4g %8.3f\n", a[i].name, a[i].med, b[j].med, b[j].med / a[i].med,
               a[i].total, b[j].total, a[i].total > 0 ? b[j].total / a[i].total : NAN);
    }
    for (int j = 0; j < nb; j++) {
        int i = 0;
        while (i < na && strcmp(a[i].name, b[j].name)) i++;
        if (i == na) printf("%-26s %12s %12.4g (only in B)\n", b[j].name, "-", b[j].med);
    }
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (!strcmp(a[i].name, "step.total") && !strcmp(b[j].name, "step.total"))
                printf("\nstep: B/A = %.3f (%.4g ms -> %.4g ms); below 1 means B is faster\n", b[j].med / a[i].med,
                       a[i].med, b[j].med);
}

// ---- main -----------------------------------------------------------------------------------

static void median_of(double *t, int n, double *med, double *mn, double *mx) {
    *med = gm_median(t, n);
    *mn = t[0], *mx = t[n - 1];
}

int main(int argc, char **argv) {
    gm_runtime_init(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "--compare")) {
        if (argc != 4) gm_die("--compare: give two CSV files, A then B (prints B/A)");
        compare(argv[2], argv[3]);
        return 0;
    }
    const char *preset = "softcap", *scale = "full", *out = "reports/bench", *name = NULL;
    int batch = 0, seq = 0, window = -1, doc_len = 700, steps = 3, reps = 30, flush = 1;
    for (int i = 1; i < argc;) {
        const char *key, *val;
        gm_arg_next(argc, argv, &i, &key, &val);
        if (!strcmp(key, "preset")) preset = val;
        else if (!strcmp(key, "scale")) scale = val;
        else if (!strcmp(key, "batch")) batch = (int)gm_arg_int(key, val, 1, 1 << 16);
        else if (!strcmp(key, "seq")) seq = (int)gm_arg_int(key, val, 1, 1 << 20);
        else if (!strcmp(key, "window")) window = (int)gm_arg_int(key, val, 0, 1 << 20);
        else if (!strcmp(key, "doc_len")) doc_len = (int)gm_arg_int(key, val, 1, 1 << 24);
        else if (!strcmp(key, "steps")) steps = (int)gm_arg_int(key, val, 1, MAX_STEPS);
        else if (!strcmp(key, "reps")) reps = (int)gm_arg_int(key, val, MIN_REPS, MAX_REPS);
        else if (!strcmp(key, "flush")) flush = (int)gm_arg_int(key, val, 0, 1);
        else if (!strcmp(key, "out")) out = val;
        else if (!strcmp(key, "name")) name = val;
        else
            gm_die("--%s: unknown flag (known: --preset, --scale, --batch, --seq, --window, --doc_len, --steps, --reps, "
                   "--flush, --out, --name; or --compare A.csv B.csv)",
                   key);
    }
    char cmdline[1024] = "";
    for (int i = 0; i < argc; i++) {
        strncat(cmdline, i ? " " : "", sizeof cmdline - strlen(cmdline) - 1);
        strncat(cmdline, argv[i], sizeof cmdline - strlen(cmdline) - 1);
    }

    static bench bs;
    bench *b = &bs;
    results r = {0};
    r.steps = steps;
    b->reps = reps, b->flush = flush;
    if (gm_run_config_preset(&b->rc, preset, scale)) gm_die_last();
    // Full shapes at a small batch (the record's 64K-token sequence would take many minutes a step
    // on a CPU): B = 1, T = 1024 unless given; tiny and test keep their own batch.
    gm_config *mc = &b->rc.model;
    if (!strcmp(scale, "full")) mc->batch = 1, mc->seq_len = 1024;
    if (batch) mc->batch = batch;
    if (seq) mc->seq_len = seq;
    if (gm_run_config_finish(&b->rc)) gm_die_last();
    b->c = mc;
    b->be = gm_backend_cpu();
    b->B = mc->batch, b->T = mc->seq_len, b->N = b->B * b->T, b->C = mc->d_model, b->H = mc->d_mlp;
    b->NH = mc->n_head, b->HD = mc->head_dim, b->Vp = mc->vocab_padded, b->L = mc->n_layer;
    for (int l = 0; l < b->L; l++) b->LA += gm_config_has_attn(mc, l);
    if (!(b->x = malloc(sizeof(int32_t) * b->N)) || !(b->y = malloc(sizeof(int32_t) * b->N)))
        gm_die("kernels: out of memory");
    if (flush && !(b->flush_buf = calloc(1, FLUSH_BYTES))) gm_die("kernels: out of memory for the cache flush");

    char *slug = gm_hardware_slug(), base[1024], csv[1200], md[1200], png[1200];
    snprintf(base, sizeof base, "%s/%s", out, name ? name : "");
    if (!name) snprintf(base, sizeof base, "%s/%s-%s-%s", out, slug, preset, scale);
    snprintf(csv, sizeof csv, "%s.csv", base), snprintf(md, sizeof md, "%s.md", base), snprintf(png, sizeof png, "%s.png", base);
    if (gm_mkdir_p(out)) gm_die_last();

    r.load[0] = gm_load_average();
    fprintf(stderr, "kernels: %s %s B=%d T=%d on %s (load %.2f); ceilings...\n", preset, scale, b->B, b->T, slug, r.load[0]);
    r.sgemm_at[0] = sgemm_gflops(), r.memcpy_at[0] = memcpy_gbs();

    // Model at the record's initialisation, data, optimizers; the window at mid-schedule (the
    // records grow it during training) unless given.
    if (gm_model_create(&b->m, mc, b->be) || gm_model_init(&b->m, b->rc.seed, GM_INIT_RECORD)) gm_die_last();
    b->mask.window_blocks = window >= 0 ? window : gm_config_window_blocks(mc, 1, 2);
    gm_model_set_window(&b->m, b->mask.window_blocks);
    b->doc_len = doc_len;
    open_synthetic_data(b, doc_len);
    build_optimizers(b);

    // End to end: one warm-up step (allocates activations and gradients), then `steps` steps.
    double t[NPARTS], parts[NPARTS][MAX_STEPS], whole[MAX_STEPS];
    fprintf(stderr, "kernels: end-to-end steps (1 warm-up + %d)...\n", steps);
    step(b, t);
    for (int s = 0; s < steps; s++) {
        step(b, t);
        whole[s] = 0;
        for (int p = 0; p < NPARTS; p++) parts[p][s] = t[p] * 1e3, whole[s] += t[p] * 1e3;
        fprintf(stderr, "  step %d: %.0f ms (forward+backward %.0f, optimizer %.0f)\n", s, whole[s],
                t[PART_FB] * 1e3, t[PART_OPT] * 1e3);
    }
    for (int p = 0; p < NPARTS; p++) median_of(parts[p], steps, &r.part_ms[p], &r.part_min[p], &r.part_max[p]);
    median_of(whole, steps, &r.step_ms, &r.step_min, &r.step_max);

    // The mask of the last batch (still in the model's buffers), its admitted pairs counted.
    b->mask.doc = mc->doc_mask ? b->m.doc : NULL;
    b->mask.block = mc->attn_block > 0 ? mc->attn_block : 128;
    int32_t *doc = malloc(sizeof(int32_t) * b->N);
    if (!doc) gm_die("kernels: out of memory");
    gm_doc_ids(doc, b->x, b->B, b->T, mc->eot);
    gm_attn_mask host = b->mask;
    host.doc = mc->doc_mask ? doc : NULL;
    for (int bb = 0; bb < b->B; bb++)
        for (int q = 0; q < b->T; q++)
            for (int k = 0; k <= q; k++)
                b->attn_pairs += gm_attn_allowed(&host, q, k, doc[bb * b->T + q], doc[bb * b->T + k]);
    b->attn_pairs *= b->NH;
    free(doc);

    build_kernels(b);
    for (int i = 0; i < b->nk; i++) {
        time_kernel(b, &b->k[i]);
        fprintf(stderr, "  %-26s %-28s x%-3d %10.4f ms\n", b->k[i].name, b->k[i].shape, b->k[i].calls, b->k[i].med_ms);
    }
    r.sgemm_at[1] = sgemm_gflops(), r.memcpy_at[1] = memcpy_gbs();
    r.load[1] = gm_load_average();
    r.sgemm = fmax(r.sgemm_at[0], r.sgemm_at[1]), r.memcpy = fmax(r.memcpy_at[0], r.memcpy_at[1]);

    const char *png_name = strrchr(png, '/') ? strrchr(png, '/') + 1 : png;
    write_csv(b, &r, csv);
    write_md(b, &r, md, png_name, cmdline);
    printf("%s\n", csv);  // bench/run.sh feeds this to gnuplot

    for (int g = 0; g < NGROUPS; g++) {
        if (b->has_adam[g]) gm_adam_free(&b->adam[g]);
        free(b->views[g]);
    }
    if (b->has_muon) gm_muon_free(&b->muon);
    for (int s = 0; s < b->nshapes; s++) gm_muon_free(&b->shape_muon[s]);
    gm_loader_close(&b->ld);
    gm_model_free(&b->m);
    free(b->x), free(b->y), free(b->flush_buf), free(slug);
    return 0;
}
