// See bf16act.h. A forwarder to cpu-bf16mm is generated for every kernel of GM_BACKEND_KERNELS;
// after the call it rounds the spans its kernel's ROUNDED_<kernel> entry names, evaluated over the
// kernel's own parameters. A kernel added to backend.h without an entry here does not compile.
#include "backend/bf16act/bf16act.h"

#include "backend/bf16mm/bf16mm.h"
#include "base/bf16.h"

// n values at p, rounded to bf16 in place (p NULL: an output the caller did not want).
typedef struct {
    gm_actval *p;
    size_t n;
} span;

static void round_span(span s) {
    if (!s.p) return;
    gm_real *v = gm_as_real(s.p);
    for (size_t i = 0; i < s.n; i++) v[i] = (gm_real)gm_round_bf16((float)v[i]);
}

// Each kernel's rounded outputs, as spans over its parameters (empty: nothing rounded).
#define HEADS ((size_t)B * T * NH * HD)  // a (B, T, NH, HD) head tensor
#define ROUNDED_copy
#define ROUNDED_fill
#define ROUNDED_embed_fwd {out, (size_t)N * C},
#define ROUNDED_embed_bwd                              // dtable: a parameter gradient
#define ROUNDED_matmul_fwd {out, (size_t)N * OC},
#define ROUNDED_matmul_bwd {dinp, (size_t)N * C},      // not dW
#define ROUNDED_rmsnorm_fwd {out, (size_t)N * C},      // not rstd
#define ROUNDED_rmsnorm_bwd {dinp, (size_t)N * C},
#define ROUNDED_rotary_fwd {out, HEADS},
#define ROUNDED_rotary_bwd {dinp, HEADS},
#define ROUNDED_qknorm_rotary_fwd {out, HEADS},        // not rstd
#define ROUNDED_qknorm_rotary_bwd {dinp, HEADS},
#define ROUNDED_attn_fwd {out, HEADS},                 // not lse
#define ROUNDED_attn_bwd {dq, HEADS}, {dk, HEADS}, {dv, HEADS},
#define ROUNDED_act_fwd {out, n},
#define ROUNDED_act_bwd {dinp, n},
#define ROUNDED_lincomb_fwd {out, n},
#define ROUNDED_lincomb_rmsnorm_fwd {sum, (size_t)N * C}, {out, (size_t)N * C}, // not rstd
// dx and dy may be one buffer (the x0 lambdas' gradient in block 0): their sum is rounded once, where a
// bf16 kernel that stores dx and then adds dy would round twice.
#define ROUNDED_lincomb_bwd {dx, n}, {y ? dy : NULL, n}, // not dpa, dpb; no dy is written without y
#define ROUNDED_xent_fwd_bwd {dlogits, (size_t)N * V}, // not losses
#define ROUNDED_adam_update
#define ROUNDED_momentum
#define ROUNDED_normuon
#define ROUNDED_muon_update
#define ROUNDED_orthogonalize

// The leading {NULL, 0} keeps the array non-empty for kernels that round nothing.
#define FORWARD(kernel, params, args)                                                         \
    static void bf16_##kernel(const gm_backend *be, GM_UNPACK params) {                       \
        (void)be;                                                                             \
        const gm_backend *mm = gm_backend_cpu_bf16mm();                                       \
        mm->kernel(mm, GM_UNPACK args);                                                       \
        const span rounded[] = {{NULL, 0}, ROUNDED_##kernel};                                 \
        for (size_t i = 0; i < sizeof rounded / sizeof *rounded; i++) round_span(rounded[i]); \
    }
GM_BACKEND_KERNELS(FORWARD)
#undef FORWARD

static gm_backend bf16;

const gm_backend *gm_backend_cpu_bf16(void) {
    if (!bf16.name) {
        bf16 = *gm_backend_cpu_bf16mm();
        bf16.name = "cpu-bf16";
#define FIELD(kernel, params, args) bf16.kernel = bf16_##kernel;
        GM_BACKEND_KERNELS(FIELD)
#undef FIELD
    }
    return &bf16;
}
