// See bf16act.h. A forwarder to cpu-bf16mm is generated for every kernel of GM_BACKEND_KERNELS;
// after the call it rounds the spans its kernel's ROUNDED_<kernel> entry names, evaluated over the
// kernel's own parameters. A kernel added to backend.h without an entry here does not compile.
#include "backend/bf16act/bf16act.h"

#include "backend/bf16mm/bf16mm.h"
#include "base/bf16.h"

// n values at p, rounded to bf16 in place (p NULL: an output the caller did not want); with cols > 0,
// rows of cols values ld apart (a view into a wider tensor: what lies between is not the kernel's).
typedef struct {
    gm_actval *p;
    size_t n, cols, ld;
} span;

static void round_span(span s) {
    if (!s.p) return;
    gm_real *v = gm_as_real(s.p);
    const size_t cols = s.cols ? s.cols : s.n, ld = s.cols ? s.ld : s.n;
    for (size_t r = 0; cols && r < s.n / cols; r++)
        for (size_t i = 0; i < cols; i++) v[r * ld + i] = (gm_real)gm_round_bf16((float)v[r * ld + i]);
}

// Each kernel's rounded outputs, as spans over its parameters (empty: nothing rounded).
#define HEADS ((size_t)B * T * NH * HD)  // a (B, T, NH, HD) head tensor
#define HEADS_VIEW(p) {p, HEADS, (size_t)NH * HD, (size_t)ld}  // one with token stride ld
#define ROUNDED_copy
#define ROUNDED_fill
#define ROUNDED_embed_fwd {out, (size_t)N * C, 0, 0},
#define ROUNDED_embed_bwd                              // dtable: a parameter gradient
#define ROUNDED_matmul_fwd {out, (size_t)N * OC, 0, 0},
#define ROUNDED_matmul_bwd {dinp, (size_t)N * C, 0, 0},      // not dW
#define ROUNDED_rmsnorm_fwd {out, (size_t)N * C, 0, 0},      // not rstd
#define ROUNDED_rmsnorm_bwd {dinp, (size_t)N * C, 0, 0},
#define ROUNDED_rotary_fwd {out, HEADS, 0, 0},
#define ROUNDED_rotary_bwd HEADS_VIEW(dinp),
#define ROUNDED_qknorm_rotary_fwd {out, HEADS, 0, 0},        // not rstd
#define ROUNDED_qknorm_rotary_bwd HEADS_VIEW(dinp),
#define ROUNDED_attn_fwd {out, HEADS, 0, 0},                 // not lse
#define ROUNDED_attn_bwd {dq, HEADS, 0, 0}, {dk, HEADS, 0, 0}, {dv, HEADS, 0, 0},
#define ROUNDED_act_fwd {out, n, 0, 0},
#define ROUNDED_act_bwd {dinp, n, 0, 0},
#define ROUNDED_lincomb_fwd {out, n, 0, 0},
#define ROUNDED_lincomb_rmsnorm_fwd {sum, (size_t)N * C, 0, 0}, {out, (size_t)N * C, 0, 0}, // not rstd
// dx and dy may be one buffer (the x0 lambdas' gradient in block 0): their sum is rounded once, where a
// bf16 kernel that stores dx and then adds dy would round twice.
#define ROUNDED_lincomb_bwd {dx, n, (size_t)x_cols, (size_t)x_ld}, {y ? dy : NULL, n, 0, 0}, // not dpa, dpb; no dy without y
#define ROUNDED_xent_fwd_bwd {dlogits, (size_t)N * V, 0, 0}, // not losses
#define ROUNDED_adam_update
#define ROUNDED_momentum
#define ROUNDED_normuon
#define ROUNDED_muon_update
#define ROUNDED_orthogonalize

// The leading {NULL, 0, 0, 0} keeps the array non-empty for kernels that round nothing.
#define FORWARD(kernel, params, args)                                                         \
    static void bf16_##kernel(const gm_backend *be, GM_UNPACK params) {                       \
        (void)be;                                                                             \
        const gm_backend *mm = gm_backend_cpu_bf16mm();                                       \
        mm->kernel(mm, GM_UNPACK args);                                                       \
        const span rounded[] = {{NULL, 0, 0, 0}, ROUNDED_##kernel};                                 \
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
