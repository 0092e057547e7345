// cuDNN's fused attention (its attention engines, reached through the graph API) for the one
// mask it expresses exactly: plain causal, one document, no window (adamw, muon-v1, muon-v2,
// untied). The records' sliding window admits whole 128-token *blocks* and the document mask is
// per token, neither of which cuDNN's token-level band reproduces, so those presets keep
// attention_mma.cu. Tried with the offline plans below (cuDNN 9.19, an H100's properties): the
// token band col + 128 W > row (cuDNN's own sliding window) is taken by the same engines, but adding
// the exact block rule ((col - col mod 128) + 128 W > row - row mod 128, pointwise MOD/SUB/ADD) or
// the documents (ids (B, 1, T, 1) == (B, 1, 1, T)) leaves the heuristics offering no engine at all.
//
// The graph is the composition cuDNN's runtime-fusion engines recognise as scaled dot-product
// attention (the shape NVIDIA's cudnn-frontend builds for its SDPA node on cuDNN 9), written here
// with the backend API in C so that nothing but libcudnn is needed:
//   forward   S = Q K^T (fp32) ; S *= scale ; S = causal ? S : -inf (row index >= column index) ;
//             M = rowmax S ; E = exp(S - M) ; L = rowsum E ; lse = M + log L ; P = E / L (bf16) ;
//             O = P V
//   backward  D = rowsum(dO * O) (fp32, our D scratch) ; S as above ; P = exp(S - lse) ;
//             dV = P^T dO ; dP = dO V^T ; dS = (dP - D) * P * scale ; dK = dS^T Q ; dQ = dS K
// dQ is written by the graph's last matmul directly (no fp32 dQ accumulator in the workspace): the
// form cudnn-frontend builds when asked for a deterministic backward on Hopper (its accumulator is
// summed across key blocks in no fixed order), which this project needs (bitwise-repeatable steps);
// the GPU tests check it by running every backward twice.
//
// Tensors keep the backend's layout: q/k/v/out (B, T, NH, HD) are cuDNN's (b, h, s, d) with
// strides (T NH HD, HD, NH HD, 1); lse (B, NH, T) is its Stats (b, h, s, 1), natural log, as our
// kernels write it. Activations must be bf16 (cuDNN's attention takes fp16/bf16 only).
//
// cuDNN is loaded at run time (dlopen) on the first plain-causal attention, not linked: where it is
// absent (or GM_CUDNN_LIB=none), where this build had no cudnn.h, under GM_CUDA_LIBS=ref, or where
// its heuristics offer no engine for the graph, the backend's automatic choice says so once on
// stderr and runs our kernels; asking for cuDNN explicitly (GM_CUDA_ATTN_CUDNN) fails
// with the same reason instead. GM_CUDNN_LIB names the library file when it is not on the
// loader's path.
//
// Plans are built once per (direction, B, T, NH, HD) and kept (GM_CUDNN_PLANS, oldest replaced).
// Without a GPU, gm_cuda_attn_cudnn_plan_offline builds the same plans for a GPU described by
// cuDNN's device-properties JSON (cuDNN 9.8 and later), which is how verify/test_cudnn_graph.c
// checks, on a CPU, that cuDNN's engines take these graphs.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/attention.cuh"
#include "backend/cuda/attention.h"

#if GM_HAVE_CUDNN_H
#include <cudnn.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUDNN_SONAME "libcudnn.so." STR(CUDNN_MAJOR)

// The cuDNN functions used here, with the types of cudnn.h.
#define CUDNN_FUNCS(X)                 \
    X(cudnnGetVersion)                 \
    X(cudnnGetErrorString)             \
    X(cudnnGetLastErrorString)         \
    X(cudnnCreate)                     \
    X(cudnnSetStream)                  \
    X(cudnnBackendCreateDescriptor)    \
    X(cudnnBackendDestroyDescriptor)   \
    X(cudnnBackendSetAttribute)        \
    X(cudnnBackendGetAttribute)        \
    X(cudnnBackendFinalize)            \
    X(cudnnBackendExecute)
#define CUDNN_PTR(name) decltype(&::name) name##_fn;
static struct {
    CUDNN_FUNCS(CUDNN_PTR)
} dnn;
#undef CUDNN_PTR

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

// Load cuDNN once per process: 0, or -1 with the reason in why (the same reason every later call).
static int cudnn_load(char *why, size_t len) {
    static int state;  // 0: not tried, 1: loaded, -1: failed
    static char reason[400];
    if (state == 0) {
        const char *file = getenv("GM_CUDNN_LIB");
        if (!file || !*file) file = CUDNN_SONAME;
        void *h = NULL;
        if (!strcmp(file, "none")) snprintf(reason, sizeof reason, "GM_CUDNN_LIB=none");
        else if (!(h = dlopen(file, RTLD_NOW | RTLD_LOCAL)))
            snprintf(reason, sizeof reason, "cannot load cuDNN (%s); install it or set GM_CUDNN_LIB to its %s",
                     dlerror(), CUDNN_SONAME);
        state = h ? 1 : -1;
#define CUDNN_SYM(name)                                                                                 \
    if (state == 1 && !(dnn.name##_fn = (decltype(dnn.name##_fn))dlsym(h, #name))) {                    \
        snprintf(reason, sizeof reason, "no symbol " #name " in %s (cuDNN 9 or later is needed)", file); \
        state = -1;                                                                                     \
    }
        CUDNN_FUNCS(CUDNN_SYM)
#undef CUDNN_SYM
        if (state == 1 && dnn.cudnnGetVersion_fn() / 10000 != CUDNN_MAJOR) {
            snprintf(reason, sizeof reason, "%s is cuDNN %zu, this build was compiled against cuDNN %d", file,
                     dnn.cudnnGetVersion_fn(), CUDNN_MAJOR);
            state = -1;
        }
        if (state == -1 && h) dlclose(h);
    }
    if (state == 1) return 0;
    say(why, len, "%s", reason);
    return -1;
}

// ---- a graph under construction: every descriptor it makes, destroyed together ----

enum { MAX_DESC = 192, MAX_OPS = 32 };

// Unique ids of the tensors the variant pack names: the caller's memory, and the by-value scalars
// (scale, -inf, 1: read from host memory at the call). Virtual tensors get theirs from VIRTUAL_UID up.
enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_DO, UID_DQ, UID_DK, UID_DV, UID_DSUM, UID_SCALE, UID_NEGINF,
       UID_ONE, VIRTUAL_UID = 100 };

typedef struct {
    cudnnBackendDescriptor_t desc[MAX_DESC];
    int ndesc;
    cudnnBackendDescriptor_t ops[MAX_OPS];
    int nops;
    int64_t next_uid;
    cudnnStatus_t status;  // the first failure (CUDNN_STATUS_SUCCESS: none yet)
    char what[600];        // where it happened
    int ours;              // what is our own account (cuDNN's last message is not added to it)
} graph;

static void graph_free(graph *g) {
    for (int i = g->ndesc - 1; i >= 0; i--) dnn.cudnnBackendDestroyDescriptor_fn(g->desc[i]);
    g->ndesc = g->nops = 0;
}

static int failed(const graph *g) { return g->status != CUDNN_STATUS_SUCCESS; }

static void fail(graph *g, cudnnStatus_t st, const char *what) {
    if (failed(g)) return;
    g->status = st;
    snprintf(g->what, sizeof g->what, "%s", what);
}
// A failure this file finds itself (no cuDNN call failed: its last message would mislead).
static void fail_ours(graph *g, cudnnStatus_t st, const char *what) {
    if (failed(g)) return;
    fail(g, st, what);
    g->ours = 1;
}

static cudnnBackendDescriptor_t make(graph *g, cudnnBackendDescriptorType_t type, const char *what) {
    if (failed(g)) return NULL;
    if (g->ndesc == MAX_DESC) {
        fail_ours(g, CUDNN_STATUS_INTERNAL_ERROR, "too many descriptors (MAX_DESC)");
        return NULL;
    }
    cudnnBackendDescriptor_t d = NULL;
    const cudnnStatus_t st = dnn.cudnnBackendCreateDescriptor_fn(type, &d);
    if (st != CUDNN_STATUS_SUCCESS) {
        fail(g, st, what);
        return NULL;
    }
    return g->desc[g->ndesc++] = d;
}

static void set(graph *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                cudnnBackendAttributeType_t type, int64_t count, const void *values, const char *what) {
    if (failed(g)) return;
    const cudnnStatus_t st = dnn.cudnnBackendSetAttribute_fn(d, name, type, count, values);
    if (st != CUDNN_STATUS_SUCCESS) fail(g, st, what);
}

static void finalize(graph *g, cudnnBackendDescriptor_t d, const char *what) {
    if (failed(g)) return;
    const cudnnStatus_t st = dnn.cudnnBackendFinalize_fn(d);
    if (st != CUDNN_STATUS_SUCCESS) fail(g, st, what);
}

static void set_desc(graph *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                     cudnnBackendDescriptor_t value, const char *what) {
    set(g, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value, what);
}

// A 4-d tensor. uid 0: virtual (an intermediate the engine keeps on chip), its uid made here.
typedef enum { REAL = 0, VIRTUAL = 1, BY_VALUE = 2 } tensor_kind;
static cudnnBackendDescriptor_t tensor(graph *g, tensor_kind kind, int64_t uid, cudnnDataType_t type, int64_t d0,
                                       int64_t d1, int64_t d2, int64_t d3, int64_t s0, int64_t s1, int64_t s2,
                                       int64_t s3, const char *what) {
    cudnnBackendDescriptor_t t = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
    const int64_t dims[4] = {d0, d1, d2, d3}, strides[4] = {s0, s1, s2, s3}, align = 16;
    const int64_t id = kind == VIRTUAL ? g->next_uid++ : uid;
    const bool is_virtual = kind == VIRTUAL, by_value = kind == BY_VALUE;
    set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what);
    set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, what);
    set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, what);
    set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, what);
    set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, what);
    set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, what);
    if (by_value) set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, what);
    finalize(g, t, what);
    return t;
}

static void add_op(graph *g, cudnnBackendDescriptor_t op, const char *what) {
    finalize(g, op, what);
    if (failed(g)) return;
    if (g->nops == MAX_OPS) return fail_ours(g, CUDNN_STATUS_INTERNAL_ERROR, "too many operations (MAX_OPS)");
    g->ops[g->nops++] = op;
}

// y = mode(x[, b[, t]]) elementwise, computed in `prec`; axis >= 0 for GEN_INDEX (the index along it).
static void pointwise(graph *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, int64_t axis,
                      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                      cudnnBackendDescriptor_t y, const char *what) {
    cudnnBackendDescriptor_t pw = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what);
    set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what);
    set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, what);
    if (axis >= 0) set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, what);
    finalize(g, pw, what);
    cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, what);
    if (b) set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, what);
    if (t) set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, what);
    add_op(g, op, what);
}

// y = x reduced over the dimensions where y has extent 1 (here the keys: (b, h, s, 1)).
static void reduction(graph *g, cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y,
                      const char *what) {
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t r = make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, what);
    set(g, r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how, what);
    set(g, r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fp32, what);
    finalize(g, r, what);
    cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, what);
    add_op(g, op, what);
}

// c = a b over the last two dimensions, batched over the first two, fp32 accumulation.
static void matmul(graph *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c,
                   const char *what) {
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t mm = make(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, what);
    set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fp32, what);
    finalize(g, mm, what);
    cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, what);
    add_op(g, op, what);
}

// y = x seen with y's dimensions and strides (a transpose of the last two, for the engine).
static void reshape(graph *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y, const char *what) {
    cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x, what);
    set_desc(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y, what);
    add_op(g, op, what);
}

// ---- the two graphs ----

typedef struct {
    int64_t B, T, NH, HD;
} shape;

// (B, T, NH, HD) activations as (b, h, s, d); transposed: (b, h, d, s), the same memory.
static cudnnBackendDescriptor_t bshd(graph *g, tensor_kind kind, int64_t uid, const shape *s, cudnnDataType_t type,
                                     int transposed, const char *what) {
    const int64_t sb = s->T * s->NH * s->HD, sh = s->HD, ss = s->NH * s->HD;
    return transposed ? tensor(g, kind, uid, type, s->B, s->NH, s->HD, s->T, sb, sh, 1, ss, what)
                      : tensor(g, kind, uid, type, s->B, s->NH, s->T, s->HD, sb, sh, ss, 1, what);
}
// A score-shaped (b, h, s, s) intermediate, row-major per head; transposed: the same as (b, h, sk, sq).
static cudnnBackendDescriptor_t scores(graph *g, const shape *s, cudnnDataType_t type, int transposed,
                                       const char *what) {
    const int64_t T = s->T;
    return tensor(g, VIRTUAL, 0, type, s->B, s->NH, T, T, s->NH * T * T, T * T, transposed ? 1 : T,
                  transposed ? T : 1, what);
}
// A per-row (b, h, s, 1) fp32 vector: lse, the row max and sum, D.
static cudnnBackendDescriptor_t rowvec(graph *g, tensor_kind kind, int64_t uid, const shape *s, const char *what) {
    return tensor(g, kind, uid, CUDNN_DATA_FLOAT, s->B, s->NH, s->T, 1, s->NH * s->T, s->T, 1, 1, what);
}
static cudnnBackendDescriptor_t scalar(graph *g, int64_t uid, const char *what) {
    return tensor(g, BY_VALUE, uid, CUDNN_DATA_FLOAT, 1, 1, 1, 1, 1, 1, 1, 1, what);
}

// x where the query (row) index is >= the key (column) index, else -inf: the causal mask.
static cudnnBackendDescriptor_t causal(graph *g, const shape *s, cudnnBackendDescriptor_t x,
                                       cudnnBackendDescriptor_t neginf) {
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32, boolean = CUDNN_DATA_BOOLEAN;
    cudnnBackendDescriptor_t row = scores(g, s, i32, 0, "causal mask: row index");
    cudnnBackendDescriptor_t col = scores(g, s, i32, 0, "causal mask: column index");
    cudnnBackendDescriptor_t keep = scores(g, s, boolean, 0, "causal mask: row >= column");
    cudnnBackendDescriptor_t y = scores(g, s, fp32, 0, "causal mask: masked scores");
    pointwise(g, CUDNN_POINTWISE_GEN_INDEX, fp32, 2, x, NULL, NULL, row, "causal mask: row index");
    pointwise(g, CUDNN_POINTWISE_GEN_INDEX, fp32, 3, x, NULL, NULL, col, "causal mask: column index");
    pointwise(g, CUDNN_POINTWISE_CMP_GE, boolean, -1, row, col, NULL, keep, "causal mask: row >= column");
    pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, fp32, -1, x, neginf, keep, y, "causal mask: select");
    return y;
}

// S = (Q K^T) * scale, causally masked: both graphs start so.
static cudnnBackendDescriptor_t masked_scores(graph *g, const shape *s, cudnnBackendDescriptor_t q,
                                              cudnnBackendDescriptor_t kt) {
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t qk = scores(g, s, fp32, 0, "scores: Q K^T");
    matmul(g, q, kt, qk, "scores: Q K^T");
    cudnnBackendDescriptor_t scaled = scores(g, s, fp32, 0, "scores: * scale");
    pointwise(g, CUDNN_POINTWISE_MUL, fp32, -1, qk, scalar(g, UID_SCALE, "scale"), NULL, scaled, "scores: * scale");
    return scaled;
}

// The tensors the caller's memory backs, as the graph of either direction sees them (V transposed
// in the backward, where it is the right operand of dO V^T; the gradients there only).
typedef struct {
    cudnnBackendDescriptor_t q, kt, v, o, lse, dout, dq, dk, dv;
} io;
static io io_tensors(graph *g, const shape *s, int bwd) {
    const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16;
    io t = {};
    t.q = bshd(g, REAL, UID_Q, s, bf16, 0, "Q");
    t.kt = bshd(g, REAL, UID_K, s, bf16, 1, "K^T");
    t.v = bshd(g, REAL, UID_V, s, bf16, bwd, bwd ? "V^T" : "V");
    t.o = bshd(g, REAL, UID_O, s, bf16, 0, "O");
    t.lse = rowvec(g, REAL, UID_STATS, s, "lse");
    if (!bwd) return t;
    t.dout = bshd(g, REAL, UID_DO, s, bf16, 0, "dO");
    t.dq = bshd(g, REAL, UID_DQ, s, bf16, 0, "dQ");
    t.dk = bshd(g, REAL, UID_DK, s, bf16, 0, "dK");
    t.dv = bshd(g, REAL, UID_DV, s, bf16, 0, "dV");
    return t;
}

static void build_fwd(graph *g, const shape *s) {
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT, bf16 = CUDNN_DATA_BFLOAT16;
    const io t = io_tensors(g, s, 0);
    cudnnBackendDescriptor_t sm = causal(g, s, masked_scores(g, s, t.q, t.kt), scalar(g, UID_NEGINF, "-inf"));
    cudnnBackendDescriptor_t mx = rowvec(g, VIRTUAL, 0, s, "softmax: row max");
    reduction(g, CUDNN_REDUCE_TENSOR_MAX, sm, mx, "softmax: row max");
    cudnnBackendDescriptor_t z = scores(g, s, fp32, 0, "softmax: S - max");
    pointwise(g, CUDNN_POINTWISE_SUB, fp32, -1, sm, mx, NULL, z, "softmax: S - max");
    cudnnBackendDescriptor_t e = scores(g, s, fp32, 0, "softmax: exp");
    pointwise(g, CUDNN_POINTWISE_EXP, fp32, -1, z, NULL, NULL, e, "softmax: exp");
    cudnnBackendDescriptor_t sum = rowvec(g, VIRTUAL, 0, s, "softmax: row sum");
    reduction(g, CUDNN_REDUCE_TENSOR_ADD, e, sum, "softmax: row sum");
    cudnnBackendDescriptor_t logsum = rowvec(g, VIRTUAL, 0, s, "softmax: log sum");
    pointwise(g, CUDNN_POINTWISE_LOG, fp32, -1, sum, NULL, NULL, logsum, "softmax: log sum");
    pointwise(g, CUDNN_POINTWISE_ADD, fp32, -1, mx, logsum, NULL, t.lse, "softmax: lse");
    cudnnBackendDescriptor_t p = scores(g, s, bf16, 0, "softmax: P");
    pointwise(g, CUDNN_POINTWISE_DIV, fp32, -1, e, sum, NULL, p, "softmax: P");
    matmul(g, p, t.v, t.o, "O = P V");
}

static void build_bwd(graph *g, const shape *s) {
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT, bf16 = CUDNN_DATA_BFLOAT16;
    const io t = io_tensors(g, s, 1);
    cudnnBackendDescriptor_t scale = scalar(g, UID_SCALE, "scale");

    // D = rowsum(dO * O), kept in our memory (the engine reads it per key block)
    cudnnBackendDescriptor_t dout_o = tensor(g, VIRTUAL, 0, fp32, s->B, s->NH, s->T, s->HD, s->NH * s->T * s->HD,
                                             s->T * s->HD, s->NH * s->HD, 1, "D: dO * O");
    pointwise(g, CUDNN_POINTWISE_MUL, fp32, -1, t.dout, t.o, NULL, dout_o, "D: dO * O");
    cudnnBackendDescriptor_t rowsum = rowvec(g, VIRTUAL, 0, s, "D: row sum");
    reduction(g, CUDNN_REDUCE_TENSOR_ADD, dout_o, rowsum, "D: row sum");
    cudnnBackendDescriptor_t D = rowvec(g, REAL, UID_DSUM, s, "D");
    pointwise(g, CUDNN_POINTWISE_MUL, fp32, -1, rowsum, scalar(g, UID_ONE, "one"), NULL, D, "D: * 1");

    // P = exp(S * scale - lse), masked after the subtraction as the engine expects
    cudnnBackendDescriptor_t sc = masked_scores(g, s, t.q, t.kt);
    cudnnBackendDescriptor_t z = scores(g, s, fp32, 0, "P: S - lse");
    pointwise(g, CUDNN_POINTWISE_SUB, fp32, -1, sc, t.lse, NULL, z, "P: S - lse");
    cudnnBackendDescriptor_t zm = causal(g, s, z, scalar(g, UID_NEGINF, "-inf"));
    cudnnBackendDescriptor_t p = scores(g, s, fp32, 0, "P: exp");
    pointwise(g, CUDNN_POINTWISE_EXP, fp32, -1, zm, NULL, NULL, p, "P: exp");

    // dV = P^T dO
    cudnnBackendDescriptor_t pt = scores(g, s, bf16, 1, "dV: P^T");
    reshape(g, p, pt, "dV: P^T");
    matmul(g, pt, t.dout, t.dv, "dV = P^T dO");

    // dS = (dO V^T - D) * P * scale
    cudnnBackendDescriptor_t dp = scores(g, s, fp32, 0, "dP = dO V^T");
    matmul(g, t.dout, t.v, dp, "dP = dO V^T");
    cudnnBackendDescriptor_t dpd = scores(g, s, fp32, 0, "dS: dP - D");
    pointwise(g, CUDNN_POINTWISE_SUB, fp32, -1, dp, D, NULL, dpd, "dS: dP - D");
    cudnnBackendDescriptor_t dsp = scores(g, s, fp32, 0, "dS: * P");
    pointwise(g, CUDNN_POINTWISE_MUL, fp32, -1, dpd, p, NULL, dsp, "dS: * P");
    cudnnBackendDescriptor_t ds = scores(g, s, fp32, 0, "dS: * scale");
    pointwise(g, CUDNN_POINTWISE_MUL, fp32, -1, dsp, scale, NULL, ds, "dS: * scale");

    // dK = dS^T Q ; dQ = dS K (written directly: the deterministic form)
    cudnnBackendDescriptor_t dst = scores(g, s, bf16, 1, "dK: dS^T");
    reshape(g, ds, dst, "dK: dS^T");
    matmul(g, dst, t.q, t.dk, "dK = dS^T Q");
    cudnnBackendDescriptor_t k = bshd(g, VIRTUAL, 0, s, bf16, 0, "dQ: K");
    reshape(g, t.kt, k, "dQ: K");
    matmul(g, ds, k, t.dq, "dQ = dS K");
}

static void build(graph *g, int bwd, const shape *s) {
    memset(g, 0, sizeof *g);
    g->status = CUDNN_STATUS_SUCCESS;
    g->next_uid = VIRTUAL_UID;
    if (bwd) build_bwd(g, s);
    else build_fwd(g, s);
}

// "<what>: <status> (<cuDNN's last message>)" of a failed graph (the message only where a cuDNN
// call failed).
static void graph_why(const graph *g, char *why, size_t len) {
    char last[256] = "";
    if (!g->ours) dnn.cudnnGetLastErrorString_fn(last, sizeof last);
    say(why, len, "cuDNN's attention graph, %s: %s%s%s%s", g->what, dnn.cudnnGetErrorString_fn(g->status),
        *last ? " (" : "", last, *last ? ")" : "");
}

extern "C" int gm_cuda_attn_cudnn_graph_check(int bwd, int B, int T, int NH, int HD, char *why, size_t len) {
    if (cudnn_load(why, len)) return -1;
    graph *g = (graph *)calloc(1, sizeof *g);
    if (!g) return say(why, len, "out of memory"), -1;
    const shape s = {B, T, NH, HD};
    build(g, bwd, &s);
    const int rc = failed(g) ? -1 : 0;
    if (rc) graph_why(g, why, len);
    graph_free(g);
    free(g);
    return rc;
}

// ---- plans: the graph, its engine configuration and execution plan, per shape ----

enum { GM_CUDNN_PLANS = 16 };
// A plan asking for more workspace than this is declined (our kernel needs none). The heuristics'
// first engine for the backward does keep a T x T bf16 tile per head: with a driver (H200, driver
// 580, cuDNN 9.19; reports/gpu-h200/run-ecc8627/) its plan wanted B NH T^2 2 bytes, 3.22 GB at
// B 1, T 16384, 6 heads and 51.5 GB at T 65536, so there the automatic choice runs our kernels (6
// heads: cuDNN up to T 8192, 0.8 GB); the presets it serves (B 64, T 1024) stay below the cap by
// that rule (1.6 GB at 12 heads, 0.8 GB at 6).
#define GM_CUDNN_MAX_WORKSPACE ((int64_t)1 << 31)

typedef struct {
    int used, bwd;
    shape s;
    graph g;  // its descriptors outlive the plan's finalization: the plan refers to them
    cudnnBackendDescriptor_t plan;  // NULL: none was found, for the reason in why
    int64_t workspace;
    int64_t engine;       // the plan's engine (cuDNN's global index)
    char refusal[400];    // why the heuristics' first choice did not finalize (cuDNN's message)
    char why[800];
} plan_entry;

struct gm_cuda_cudnn {
    cudnnHandle_t handle;
    plan_entry plan[GM_CUDNN_PLANS];
    int next;  // the entry replaced when all are used
};

// The global index of an engine configuration's engine (-1 where cuDNN does not say).
static int64_t engine_of(cudnnBackendDescriptor_t cfg) {
    cudnnBackendDescriptor_t engine = NULL;
    int64_t n = 0, id = -1;
    if (dnn.cudnnBackendCreateDescriptor_fn(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS) return -1;
    if (dnn.cudnnBackendGetAttribute_fn(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                        &engine) == CUDNN_STATUS_SUCCESS)
        dnn.cudnnBackendGetAttribute_fn(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &id);
    dnn.cudnnBackendDestroyDescriptor_fn(engine);
    return id;
}

// The operation graph, the heuristics' engine configurations in order, the first that finalizes as
// an execution plan: for the device of `handle`, or (handle NULL) for the device `devprop` describes,
// without one (cuDNN 9.8 and later build plans from a device-properties descriptor).
static void make_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t devprop, plan_entry *e) {
    graph *g = &e->g;
    cudnnBackendDescriptor_t og = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    if (handle) set(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "operation graph");
    set(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops, "operation graph");
    finalize(g, og, "operation graph");
    const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    for (int m = 0; m < 2 && !failed(g) && !e->plan; m++) {
        cudnnBackendDescriptor_t heur = make(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
        set_desc(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, og, "engine heuristics");
        set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[m], "engine heuristics");
        if (!handle) set_desc(g, heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, devprop, "engine heuristics");
        finalize(g, heur, "engine heuristics");
        if (failed(g)) return;
        int64_t n = 0;
        cudnnStatus_t st = dnn.cudnnBackendGetAttribute_fn(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
        if (st != CUDNN_STATUS_SUCCESS) return fail(g, st, "engine heuristics: results");
        if (n > 8) n = 8;  // the first few are the heuristics' best; later ones are slower by design
        cudnnBackendDescriptor_t cfg[8];
        for (int64_t i = 0; i < n; i++) cfg[i] = make(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration");
        if (failed(g) || n == 0) continue;
        int64_t got = 0;
        st = dnn.cudnnBackendGetAttribute_fn(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                             &got, cfg);
        if (st != CUDNN_STATUS_SUCCESS) return fail(g, st, "engine heuristics: results");
        for (int64_t i = 0; i < got && !e->plan; i++) {
            cudnnBackendDescriptor_t plan = NULL;
            if (dnn.cudnnBackendCreateDescriptor_fn(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) !=
                CUDNN_STATUS_SUCCESS)
                return fail(g, CUDNN_STATUS_ALLOC_FAILED, "execution plan");
            int64_t count = 0;  // elements returned (one)
            const int ok = (handle ? dnn.cudnnBackendSetAttribute_fn(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                                                     CUDNN_TYPE_HANDLE, 1, &handle)
                                   : dnn.cudnnBackendSetAttribute_fn(plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
                                                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &devprop)) ==
                               CUDNN_STATUS_SUCCESS &&
                           dnn.cudnnBackendSetAttribute_fn(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                                           &cfg[i]) == CUDNN_STATUS_SUCCESS &&
                           dnn.cudnnBackendFinalize_fn(plan) == CUDNN_STATUS_SUCCESS &&
                           dnn.cudnnBackendGetAttribute_fn(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                           CUDNN_TYPE_INT64, 1, &count,
                                                           &e->workspace) == CUDNN_STATUS_SUCCESS;
            if (ok && g->ndesc < MAX_DESC) {
                e->plan = g->desc[g->ndesc++] = plan;
                e->engine = engine_of(cfg[i]);
                continue;
            }
            dnn.cudnnBackendDestroyDescriptor_fn(plan);
            if (!*e->refusal) {
                char last[300] = "";
                dnn.cudnnGetLastErrorString_fn(last, sizeof last);
                snprintf(e->refusal, sizeof e->refusal, "engine %lld: %s", (long long)engine_of(cfg[i]), last);
            }
        }
    }
    if (!failed(g) && !e->plan) {
        char what[sizeof g->what];
        snprintf(what, sizeof what, "no engine of the heuristics runs this graph (their first choice, %s)",
                 *e->refusal ? e->refusal : "none offered");
        fail_ours(g, CUDNN_STATUS_NOT_SUPPORTED, what);
    }
    if (!failed(g) && e->workspace > GM_CUDNN_MAX_WORKSPACE) {
        snprintf(g->what, sizeof g->what, "its plan wants %.3g GB of workspace (more than %.3g)", e->workspace / 1e9,
                 GM_CUDNN_MAX_WORKSPACE / 1e9);
        g->status = CUDNN_STATUS_NOT_SUPPORTED;
        g->ours = 1;
        e->plan = NULL;  // destroyed with the graph's descriptors
    }
}

// The cuDNN state of the context, made on first use; NULL with why when cuDNN cannot serve.
static gm_cuda_cudnn *state_of(gm_cuda_ctx *c, char *why, size_t len) {
    if (c->cudnn) return c->cudnn;
    if (c->libs == GM_CUDA_LIBS_REF) {
        say(why, len, "GM_CUDA_LIBS=ref keeps the vendor libraries out");
        return NULL;
    }
    if (cudnn_load(why, len)) return NULL;
    gm_cuda_cudnn *st = (gm_cuda_cudnn *)calloc(1, sizeof *st);
    if (!st) {
        say(why, len, "out of memory");
        return NULL;
    }
    cudnnStatus_t s = dnn.cudnnCreate_fn(&st->handle);
    if (s == CUDNN_STATUS_SUCCESS) s = dnn.cudnnSetStream_fn(st->handle, c->stream);
    if (s != CUDNN_STATUS_SUCCESS) {
        say(why, len, "cudnnCreate: %s", dnn.cudnnGetErrorString_fn(s));
        free(st);  // the handle, if made, is kept by the process: cuDNN's teardown is not needed here
        return NULL;
    }
    return c->cudnn = st;
}

// The plan for this direction and shape, built on first use; NULL with why when cuDNN builds none.
static plan_entry *plan_for(gm_cuda_ctx *c, int bwd, const shape *s, char *why, size_t len) {
    gm_cuda_cudnn *st = state_of(c, why, len);
    if (!st) return NULL;
    for (int i = 0; i < GM_CUDNN_PLANS; i++) {
        plan_entry *e = &st->plan[i];
        if (!e->used || e->bwd != bwd || memcmp(&e->s, s, sizeof *s)) continue;
        if (!e->plan) say(why, len, "%s", e->why);
        return e->plan ? e : NULL;
    }
    plan_entry *e = &st->plan[st->next];
    st->next = (st->next + 1) % GM_CUDNN_PLANS;
    if (e->used) graph_free(&e->g);
    memset(e, 0, sizeof *e);
    e->used = 1, e->bwd = bwd, e->s = *s;
    build(&e->g, bwd, s);
    make_plan(st->handle, NULL, e);
    if (!e->plan) {
        graph_why(&e->g, e->why, sizeof e->why);
        graph_free(&e->g);  // kept as "no plan" so the search is not repeated every call
        say(why, len, "%s", e->why);
        return NULL;
    }
    return e;
}

extern "C" int gm_cuda_attn_cudnn_plan_offline(int bwd, int B, int T, int NH, int HD, const char *device_json,
                                               int64_t *workspace, int64_t *engine, char *why, size_t len) {
    if (cudnn_load(why, len)) return -1;
    plan_entry *e = (plan_entry *)calloc(1, sizeof *e);
    if (!e) return say(why, len, "out of memory"), -1;
    const shape s = {B, T, NH, HD};
    build(&e->g, bwd, &s);
    graph *g = &e->g;
    cudnnBackendDescriptor_t dp = make(g, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "device properties");
    set(g, dp, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, (int64_t)strlen(device_json) + 1,
        device_json, "device properties");
    finalize(g, dp, "device properties");
    make_plan(NULL, dp, e);
    const int rc = e->plan ? 0 : -1;
    if (rc) graph_why(g, why, len);
    else *workspace = e->workspace, *engine = e->engine;
    graph_free(g);
    free(e);
    return rc;
}

extern "C" int gm_cuda_cudnn_device_json(int device, char *json, size_t json_len, char *why, size_t len) {
    if (cudnn_load(why, len)) return -1;
    graph *g = (graph *)calloc(1, sizeof *g);
    if (!g) return say(why, len, "out of memory"), -1;
    g->status = CUDNN_STATUS_SUCCESS;
    const int32_t id = device;
    cudnnBackendDescriptor_t dp = make(g, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "device properties");
    set(g, dp, CUDNN_ATTR_DEVICEPROP_DEVICE_ID, CUDNN_TYPE_INT32, 1, &id, "device properties");
    finalize(g, dp, "device properties");
    int64_t n = 0;
    if (!failed(g)) {
        const cudnnStatus_t st = dnn.cudnnBackendGetAttribute_fn(dp, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
                                                                 CUDNN_TYPE_CHAR, (int64_t)json_len, &n, json);
        if (st != CUDNN_STATUS_SUCCESS) fail(g, st, "device properties: JSON");
        else if (n <= 0 || (size_t)n >= json_len) fail(g, CUDNN_STATUS_BAD_PARAM, "device properties: JSON too long");
        else json[n] = 0;
    }
    const int rc = failed(g) ? -1 : 0;
    if (rc) graph_why(g, why, len);
    graph_free(g);
    free(g);
    return rc;
}

// Run plan e on the context's stream with the tensors' pointers (by-value scalars: host pointers,
// read at the call). 0, or -1 with why.
static int execute(gm_cuda_ctx *c, plan_entry *e, int n, const int64_t *uids, void *const *ptrs, char *why,
                   size_t len) {
    void *ws = e->workspace > 0 ? gm_cuda_scratch(c, GM_SCR_CUDNN_WS, (size_t)e->workspace) : NULL;
    if (e->workspace > 0 && !ws) return say(why, len, "no memory for cuDNN's workspace"), -1;
    cudnnBackendDescriptor_t vp = NULL;
    cudnnStatus_t st = dnn.cudnnBackendCreateDescriptor_fn(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (st == CUDNN_STATUS_SUCCESS)
        st = dnn.cudnnBackendSetAttribute_fn(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    if (st == CUDNN_STATUS_SUCCESS)
        st = dnn.cudnnBackendSetAttribute_fn(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (st == CUDNN_STATUS_SUCCESS)
        st = dnn.cudnnBackendSetAttribute_fn(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (st == CUDNN_STATUS_SUCCESS) st = dnn.cudnnBackendFinalize_fn(vp);
    if (st == CUDNN_STATUS_SUCCESS) st = dnn.cudnnBackendExecute_fn(c->cudnn->handle, e->plan, vp);
    if (vp) dnn.cudnnBackendDestroyDescriptor_fn(vp);
    if (st == CUDNN_STATUS_SUCCESS) return 0;
    char last[256] = "";
    dnn.cudnnGetLastErrorString_fn(last, sizeof last);
    say(why, len, "cudnnBackendExecute: %s%s%s%s", dnn.cudnnGetErrorString_fn(st), *last ? " (" : "", last,
        *last ? ")" : "");
    return -1;
}

// Whether cuDNN's graph takes this call at all: the mask, the element, head_dim, alignment.
static int takes(gm_attn_mask m, int HD, const void *const *ptrs, int n, char *why, size_t len) {
    if (!gm_cuda_attn_plain_causal(m))
        return say(why, len, "the mask has %s: cuDNN's token-level band does not express it",
                   m.doc ? "documents" : "a window of blocks"), 0;
    if (sizeof(gm_cuda_act) != 2) return say(why, len, "activations are fp32 in this build; cuDNN takes bf16"), 0;
    if (HD % 8) return say(why, len, "head_dim %d is not a multiple of 8", HD), 0;
    for (int i = 0; i < n; i++)
        if ((uintptr_t)ptrs[i] % 16) return say(why, len, "a tensor is not 16-byte aligned"), 0;
    return 1;
}

int gm_cuda_attn_cudnn_fwd(gm_cuda_ctx *c, gm_cuda_act *out, float *lse, const gm_cuda_act *q, const gm_cuda_act *k,
                           const gm_cuda_act *v, int B, int T, int NH, int HD, double scale, gm_attn_mask m,
                           char *why, size_t len) {
    const void *const ptrs[] = {out, q, k, v};
    if (!takes(m, HD, ptrs, 4, why, len)) return -1;
    const shape s = {B, T, NH, HD};
    plan_entry *e = plan_for(c, 0, &s, why, len);
    if (!e) return -1;
    float scale_f = (float)scale, neginf = -INFINITY;
    const int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_NEGINF};
    void *const data[] = {(void *)q, (void *)k, (void *)v, out, lse, &scale_f, &neginf};
    char err[400];
    if (execute(c, e, 7, uids, data, err, sizeof err)) gm_cuda_note(c, __FILE__, __LINE__, "attention (cuDNN)", err);
    return 0;
}

int gm_cuda_attn_cudnn_bwd(gm_cuda_ctx *c, gm_cuda_act *dq, gm_cuda_act *dk, gm_cuda_act *dv, const gm_cuda_act *dout,
                           const gm_cuda_act *q, const gm_cuda_act *k, const gm_cuda_act *v, const gm_cuda_act *out,
                           const float *lse, int B, int T, int NH, int HD, double scale, gm_attn_mask m, char *why,
                           size_t len) {
    const void *const ptrs[] = {dq, dk, dv, dout, q, k, v, out};
    if (!takes(m, HD, ptrs, 8, why, len)) return -1;
    const shape s = {B, T, NH, HD};
    plan_entry *e = plan_for(c, 1, &s, why, len);
    if (!e) return -1;
    float *D = (float *)gm_cuda_scratch(c, GM_SCR_ATTN_D, sizeof(float) * (size_t)B * NH * T);
    if (!D) return 0;  // noted by the scratch allocator
    float scale_f = (float)scale, neginf = -INFINITY, one = 1.0f;
    const int64_t uids[] = {UID_Q,  UID_K,  UID_V,     UID_O,    UID_DO,     UID_DQ,  UID_DK,
                            UID_DV, UID_STATS, UID_DSUM, UID_SCALE, UID_NEGINF, UID_ONE};
    void *const data[] = {(void *)q, (void *)k, (void *)v, (void *)out, (void *)dout, dq, dk, dv, (void *)lse, D,
                          &scale_f, &neginf, &one};
    char err[400];
    if (execute(c, e, 13, uids, data, err, sizeof err)) gm_cuda_note(c, __FILE__, __LINE__, "attention (cuDNN)", err);
    return 0;
}

#else  // no cudnn.h when this file was compiled

#define NO_HEADER "this build had no cudnn.h (cuDNN's headers) when it was compiled"

extern "C" int gm_cuda_attn_cudnn_graph_check(int, int, int, int, int, char *why, size_t len) {
    snprintf(why, len, NO_HEADER);
    return -1;
}
extern "C" int gm_cuda_attn_cudnn_plan_offline(int, int, int, int, int, const char *, int64_t *, int64_t *,
                                               char *why, size_t len) {
    snprintf(why, len, NO_HEADER);
    return -1;
}
extern "C" int gm_cuda_cudnn_device_json(int, char *, size_t, char *why, size_t len) {
    snprintf(why, len, NO_HEADER);
    return -1;
}
int gm_cuda_attn_cudnn_fwd(gm_cuda_ctx *, gm_cuda_act *, float *, const gm_cuda_act *, const gm_cuda_act *,
                           const gm_cuda_act *, int, int, int, int, double, gm_attn_mask, char *why, size_t len) {
    snprintf(why, len, NO_HEADER);
    return -1;
}
int gm_cuda_attn_cudnn_bwd(gm_cuda_ctx *, gm_cuda_act *, gm_cuda_act *, gm_cuda_act *, const gm_cuda_act *,
                           const gm_cuda_act *, const gm_cuda_act *, const gm_cuda_act *, const gm_cuda_act *,
                           const float *, int, int, int, int, double, gm_attn_mask, char *why, size_t len) {
    snprintf(why, len, NO_HEADER);
    return -1;
}
#endif
