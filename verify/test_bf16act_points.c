// The cpu-bf16 backend (backend/bf16act) rounds exactly the activation and activation-gradient
// outputs of issue 30's list: on the same inputs, every kernel of the interface, with SET and ADD
// gradient writes, gives gm_round_bf16 of cpu-bf16mm's value in each listed output and cpu-bf16mm's
// value bit for bit in every other buffer it was handed (parameters, their gradients, optimizer
// states, rstd/lse/losses, and its inputs). The list below is keyed by kernel name and must cover
// GM_BACKEND_KERNELS, so a kernel added to backend.h fails here until it is decided.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bf16act/bf16act.h"
#include "backend/bf16mm/bf16mm.h"
#include "base/bf16.h"
#include "base/error.h"
#include "base/rng.h"
#include "optim/ns_coeffs.h"

// Shapes chosen so that every activation-sized tensor has S values: N*C = N*OC = N*V =
// B*T*NH*HD = S, so a rounded output is its whole buffer.
enum { B = 2, T = 8, NH = 2, HD = 4, N = B * T, C = NH * HD, OC = C, V = 8, S = N * C };
// The buffers a kernel is handed (each S values): three outputs, inputs, a parameter and its
// gradient, statistics, optimizer states.
enum { OUT, OUT2, OUT3, X, Y, W, DOUT, P, G, STAT, M, VV, NBUF };

typedef struct {
    gm_real *b[NBUF];
    int32_t ids[N], doc[N];
} arena;

typedef struct {
    const char *kernel;
    void (*run)(const gm_backend *be, arena *a, gm_grad_write w);
    unsigned rounded;  // bit k: buffer k is an output rounded to bf16
} point;

#define R(k) (1u << (k))

static void run_copy(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->copy(be, a->b[OUT], a->b[X], sizeof(gm_real) * S);
}
static void run_fill(const gm_backend *be, arena *a, gm_grad_write w) { (void)w, be->fill(be, a->b[OUT], (gm_real)0.3, S); }
static void run_embed_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->embed_fwd(be, gm_as_act(a->b[OUT]), a->ids, a->b[P], N, C);
}
static void run_embed_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->embed_bwd(be, a->b[G], a->ids, gm_as_act(a->b[DOUT]), N, V, C);
}
static void run_matmul_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->matmul_fwd(be, gm_as_act(a->b[OUT]), gm_as_act(a->b[X]), a->b[W], N, C, OC, 1, NULL);
}
static void run_matmul_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    be->matmul_bwd(be, gm_as_act(a->b[OUT]), w, a->b[G], gm_as_act(a->b[DOUT]), gm_as_act(a->b[X]), a->b[W], N, C, OC);
}
static void run_rmsnorm_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->rmsnorm_fwd(be, gm_as_act(a->b[OUT]), a->b[STAT], gm_as_act(a->b[X]), N, C, 1e-6);
}
static void run_rmsnorm_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    be->rmsnorm_bwd(be, gm_as_act(a->b[OUT]), w, gm_as_act(a->b[DOUT]), gm_as_act(a->b[X]), a->b[STAT], N, C);
}
static void run_rotary_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->rotary_fwd(be, gm_as_act(a->b[OUT]), gm_as_act(a->b[X]), a->b[M], a->b[VV], B, T, NH, HD, NH * HD);
}
static void run_rotary_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    be->rotary_bwd(be, gm_as_act(a->b[OUT]), w, gm_as_act(a->b[DOUT]), a->b[M], a->b[VV], B, T, NH, HD, NH * HD);
}
static void run_qknorm_rotary_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->qknorm_rotary_fwd(be, gm_as_act(a->b[OUT]), a->b[STAT], gm_as_act(a->b[X]), a->b[M], a->b[VV], B, T, NH, HD, NH * HD, 1e-6);
}
static void run_qknorm_rotary_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    be->qknorm_rotary_bwd(be, gm_as_act(a->b[OUT]), w, gm_as_act(a->b[DOUT]), gm_as_act(a->b[X]), a->b[STAT], a->b[M], a->b[VV], B, T, NH, HD, NH * HD);
}
static gm_attn_mask mask_of(const arena *a) { return (gm_attn_mask){.doc = a->doc, .block = 2, .window_blocks = 3}; }
static void run_attn_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->attn_fwd(be, gm_as_act(a->b[OUT]), a->b[STAT], gm_as_act(a->b[X]), gm_as_act(a->b[Y]), gm_as_act(a->b[W]), B, T, NH, HD, 0.5, mask_of(a));
}
static void run_attn_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    be->attn_bwd(be, gm_as_act(a->b[OUT]), gm_as_act(a->b[OUT2]), gm_as_act(a->b[OUT3]), w, gm_as_act(a->b[DOUT]), gm_as_act(a->b[X]), gm_as_act(a->b[Y]), gm_as_act(a->b[W]), gm_as_act(a->b[P]), a->b[STAT],
                 B, T, NH, HD, 0.5, mask_of(a));
}
static void run_act_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->act_fwd(be, GM_ACT_GELU, gm_as_act(a->b[OUT]), gm_as_act(a->b[X]), S);
}
static void run_act_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    be->act_bwd(be, GM_ACT_RELU2, gm_as_act(a->b[OUT]), w, gm_as_act(a->b[DOUT]), gm_as_act(a->b[X]), S);
}
static void run_lincomb_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->lincomb_fwd(be, gm_as_act(a->b[OUT]), 0.7, a->b[P], gm_as_act(a->b[X]), 0.3, a->b[P] + 1, gm_as_act(a->b[Y]), S, 1, 1);
}
static void run_lincomb_rmsnorm_fwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->lincomb_rmsnorm_fwd(be, gm_as_act(a->b[OUT]), gm_as_act(a->b[OUT2]), a->b[STAT], 0.7, a->b[P], gm_as_act(a->b[X]), 0.3, a->b[P] + 1,
                                     gm_as_act(a->b[Y]), N, C, 1e-6);
}
static void run_lincomb_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    be->lincomb_bwd(be, gm_as_act(a->b[OUT]), w, gm_as_act(a->b[OUT2]), w, a->b[G], a->b[G] + 1, gm_as_act(a->b[DOUT]), 0.7, a->b[P], gm_as_act(a->b[X]), 0.3,
                    a->b[P] + 1, gm_as_act(a->b[Y]), S, 1, 1);
}
static void run_xent_fwd_bwd(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->xent_fwd_bwd(be, a->b[STAT], gm_as_act(a->b[OUT]), gm_as_act(a->b[X]), a->ids, N, V, 3.0, 1.0 / N);
}
static void run_adam_update(const gm_backend *be, arena *a, gm_grad_write w) {
    const gm_adam_span span = {0, 0, S};
    const gm_adam_args args = {.step_size = 0.01, .bc2_sqrt = 0.3, .eps = 1e-8, .beta1 = 0.9, .beta2 = 0.95,
                               .decay = 0.999, .apply_decay = 1};
    (void)w, be->adam_update(be, a->b[P], a->b[G], a->b[M], a->b[VV], 1, &span, &args);
}
static void run_momentum(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->momentum(be, a->b[M], a->b[OUT], a->b[G], S, 0.95, 0.7, 1);
}
static void run_normuon(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->normuon(be, a->b[OUT], a->b[VV], N, C, 1, 0.95);
}
static void run_muon_update(const gm_backend *be, arena *a, gm_grad_write w) {
    (void)w, be->muon_update(be, a->b[P], a->b[G], S, 0.02, 0.1, 1);
}
static void run_orthogonalize(const gm_backend *be, arena *a, gm_grad_write w) {
    const gm_ortho cfg = {.method = GM_ORTHO_NS, .coeffs = gm_ns_coeffs_find("quintic"), .steps = 5};
    const gm_ortho_item item = {"t", a->b[OUT], a->b[X], N, C, 0.5};
    (void)w, be->orthogonalize(be, &cfg, 1, &item);
}

// Issue 30's list: the activation and activation-gradient outputs, and nothing else.
static const point points[] = {
    {"copy", run_copy, 0},
    {"fill", run_fill, 0},
    {"embed_fwd", run_embed_fwd, R(OUT)},
    {"embed_bwd", run_embed_bwd, 0},  // dtable: a parameter gradient
    {"matmul_fwd", run_matmul_fwd, R(OUT)},
    {"matmul_bwd", run_matmul_bwd, R(OUT)},  // dinp; not dW
    {"rmsnorm_fwd", run_rmsnorm_fwd, R(OUT)},  // not rstd
    {"rmsnorm_bwd", run_rmsnorm_bwd, R(OUT)},
    {"rotary_fwd", run_rotary_fwd, R(OUT)},
    {"rotary_bwd", run_rotary_bwd, R(OUT)},
    {"qknorm_rotary_fwd", run_qknorm_rotary_fwd, R(OUT)},  // not rstd
    {"qknorm_rotary_bwd", run_qknorm_rotary_bwd, R(OUT)},
    {"attn_fwd", run_attn_fwd, R(OUT)},  // not lse
    {"attn_bwd", run_attn_bwd, R(OUT) | R(OUT2) | R(OUT3)},
    {"act_fwd", run_act_fwd, R(OUT)},
    {"act_bwd", run_act_bwd, R(OUT)},
    {"lincomb_fwd", run_lincomb_fwd, R(OUT)},
    {"lincomb_rmsnorm_fwd", run_lincomb_rmsnorm_fwd, R(OUT) | R(OUT2)},  // the sum and its norm; not rstd
    {"lincomb_bwd", run_lincomb_bwd, R(OUT) | R(OUT2)},  // not dpa, dpb
    {"xent_fwd_bwd", run_xent_fwd_bwd, R(OUT)},  // not losses
    {"adam_update", run_adam_update, 0},
    {"momentum", run_momentum, 0},
    {"normuon", run_normuon, 0},
    {"muon_update", run_muon_update, 0},
    {"orthogonalize", run_orthogonalize, 0},
};
enum { NPOINTS = sizeof points / sizeof *points };

// The same fresh inputs for both backends: unrounded normals (positive where a kernel needs it:
// Adam's v, NorMuon's v2, the rotary tables' range), token ids below V, two documents per row.
static void arena_init(arena *a) {
    for (int k = 0; k < NBUF; k++) {
        a->b[k] = malloc(sizeof(gm_real) * S);
        cr_assert(a->b[k]);
        for (int i = 0; i < S; i++) {
            const double x = gm_rng_normal(5, (uint64_t)k, (uint64_t)i);
            a->b[k][i] = (gm_real)(k == VV ? fabs(x) : k == M ? cos(x) : x);
        }
    }
    for (int i = 0; i < N; i++) a->ids[i] = (int32_t)(gm_rng_u32(6, 0, (uint64_t)i) % V), a->doc[i] = (i % T) >= T / 2;
}

static void arena_free(arena *a) {
    for (int k = 0; k < NBUF; k++) free(a->b[k]);
}

static int same_bits(gm_real x, gm_real y) { return !memcmp(&x, &y, sizeof x); }

Test(bf16act, rounds_exactly_the_activation_outputs) {
    const gm_backend *mm = gm_backend_cpu_bf16mm(), *act = gm_backend_cpu_bf16();
    cr_assert_str_eq(act->name, "cpu-bf16");
    // every kernel of the interface has exactly one entry
#define NAME(name, params, args) #name,
    static const char *const kernels[] = {GM_BACKEND_KERNELS(NAME)};
#undef NAME
    const int nkernels = sizeof kernels / sizeof *kernels;
    cr_assert_eq(nkernels, NPOINTS, "the list has %d entries, backend.h %d kernels", NPOINTS, nkernels);
    for (int k = 0; k < nkernels; k++) {
        int found = 0;
        for (int p = 0; p < NPOINTS; p++) found += !strcmp(points[p].kernel, kernels[k]);
        cr_assert_eq(found, 1, "kernel %s: %d entries in the list of rounding points (1 wanted)", kernels[k], found);
    }
    for (int p = 0; p < NPOINTS; p++)
        for (int w = GM_GRAD_SET; w <= GM_GRAD_ADD; w++) {
            arena ref, got;
            arena_init(&ref), arena_init(&got);
            points[p].run(mm, &ref, (gm_grad_write)w);
            points[p].run(act, &got, (gm_grad_write)w);
            cr_assert_eq(mm->sync(mm), 0, "%s", gm_error());
            cr_assert_eq(act->sync(act), 0, "%s", gm_error());
            for (int k = 0; k < NBUF; k++) {
                const int rounded = (points[p].rounded >> k) & 1;
                int changed = 0;  // values the rounding changed: the check is not vacuous
                for (int i = 0; i < S; i++) {
                    const gm_real r = ref.b[k][i], want = rounded ? (gm_real)gm_round_bf16((float)r) : r;
                    changed += !same_bits(want, r);
                    cr_assert(same_bits(got.b[k][i], want), "%s (%s): buffer %d [%d] is %.9g, want %.9g (%s of cpu-bf16mm's)",
                              points[p].kernel, w ? "add" : "set", k, i, (double)got.b[k][i], (double)want,
                              rounded ? "bf16" : "the bits");
                }
                cr_assert(!rounded || changed, "%s: cpu-bf16mm's output %d is bf16 already: the inputs test nothing",
                          points[p].kernel, k);
            }
            arena_free(&ref), arena_free(&got);
        }
}
