// GPU attention timings: the tensor-core kernels (attention_mma.cu) against the naive scalar ones
// (attention_naive.cu), their forward also with 32 query rows per warp (GM_CUDA_ATTN_MMA32, with
// mma's backward), on an sm_90 GPU their forward and backward on Hopper's wgmma (GM_CUDA_ATTN_WGMMA)
// and the one-pass backward (GM_CUDA_ATTN_WGMMA1, its forward wgmma's and not timed again) and the
// persistent forward (GM_CUDA_ATTN_WGMMA_PERSIST, its backward wgmma's and not timed again) and the
// forward with its warpgroups taking turns (GM_CUDA_ATTN_WGMMA_PINGPONG, likewise), and
// where the mask is plain causal (--window=0, no documents) cuDNN's fused attention
// (attention_cudnn.cu) beside them when it runs here (else one line says why), forward and
// backward, at a preset's per-GPU attention shape (softcap: B = 1, 6 heads of 128, blocks of 128,
// the window at the end of its schedule, 14 blocks) for
// T = 1024 .. 65536. TFLOP/s use the model's count of backend/cost.h over the admitted (query,
// key) pairs (gm_cost_attn_pairs: 4 HD flops a pair forward, 10 HD backward; the two-kernel
// tensor-core backwards execute 14 HD, since their separate dq pass recomputes S and dP, the
// one-pass backward 10 HD). Where no GPU is
// present it says so in one line and exits 0. Timings are never pass/fail. First run on an H100 on
// 2026-11-26 at commit d81bddf (reports/gpu-h100/); every figure in its reports comes from running it.
//
//   build/bench/attention_gpu [--preset=softcap] [--tmin=1024] [--tmax=65536] [--window=<blocks>]
//                             [--doc_len=0] [--reps=10] [--skip=FORM,...] [--out=reports/bench]
//                             [--name=gpu-attention-softcap]
//
// --skip leaves forms out (GM_CUDA_ATTN's names; not mma, the base, nor naive, the reference;
// wgmma's dependants go with it, being timed beside it): the GPU report leaves wgmma-pingpong out
// where its check failed on the node, so that a form that hangs costs its check, not every stage.
// --window defaults to the preset's final window (0: plain causal); --doc_len=L > 0 adds a
// document mask with EOT-opened documents of exponential lengths of mean L (the pairs are then
// counted on the host, exactly). Method: inputs N(0, 1) made once at tmax (shorter T use a
// prefix); per (T, kernel): one warm-up call, then `reps` samples, each a run of back-to-back
// calls (enough for ~20 ms, at least 1) closed by a sync, divided by the calls; median, min, max.
// Back-to-back calls on the same inputs keep them in L2 where they fit (T <= ~8K at these shapes).
// Writes <out>/<name>.csv and .md (with the GPU from nvidia-smi, the commit and the command).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/act_io.h"
#include "backend/attn_mask.h"
#include "backend/cost.h"
#include "backend/cuda/attention.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/device.h"
#include "base/args.h"
#include "base/help.h"
#include "base/build_info.h"
#include "base/error.h"
#include "base/io.h"
#include "base/rng.h"
#include "base/runtime.h"
#include "base/stats.h"
#include "base/timer.h"
#include "train/hardware.h"
#include "train/run_config.h"
#ifdef GM_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>  // header-only: a range costs nothing unless a tool listens
#endif

enum { MAX_REPS = 100, MAX_T_STEPS = 16 };
#define SAMPLE_S 0.02  // a sample lasts at least this long

// mma32: the forward only (its backward is mma's code); wgmma where it runs (an sm_90 GPU), and there
// wgmma1 the backward only (its forward is wgmma's) and wgmma-persist and wgmma-pingpong the
// forward only (their backward is wgmma's); cuDNN's fused attention where the mask is plain causal
// and cuDNN runs here.
enum {
    IMPL_MMA,
    IMPL_NAIVE,
    IMPL_MMA32,
    IMPL_WGMMA,
    IMPL_WGMMA1,
    IMPL_WGMMA_PERSIST,
    IMPL_WGMMA_PINGPONG,
    IMPL_CUDNN,
    MAX_IMPLS
};
static const gm_cuda_attn_impl IMPLS[MAX_IMPLS] = {
    GM_CUDA_ATTN_MMA,    GM_CUDA_ATTN_NAIVE,         GM_CUDA_ATTN_MMA32,          GM_CUDA_ATTN_WGMMA,
    GM_CUDA_ATTN_WGMMA1, GM_CUDA_ATTN_WGMMA_PERSIST, GM_CUDA_ATTN_WGMMA_PINGPONG, GM_CUDA_ATTN_CUDNN};
#define NAME(i) gm_cuda_attn_name(IMPLS[i])  // as GM_CUDA_ATTN spells it

typedef struct {
    const gm_backend *be;
    int B, NH, HD, reps;
    int on[MAX_IMPLS];  // which implementations run here
    double scale;
    gm_attn_mask mask;  // doc: device ids (B, tmax) or NULL
    gm_actval *q, *k, *v, *dout, *out, *dq, *dk, *dv;  // (B, T, NH, HD) in the backend's element
    gm_real *lse;
    char declined_why[400];  // why cuDNN declined its first T (it may decline a longer T than tmin)
} bench;

// Whether implementation i is one of wgmma's variants (the one-pass backward, the persistent and
// pingpong forwards): timed beside wgmma, and left out with it.
static int beside_wgmma(int i) { return i == IMPL_WGMMA1 || i == IMPL_WGMMA_PERSIST || i == IMPL_WGMMA_PINGPONG; }

// Whether implementation i is timed in pass p (0 forward, 1 backward).
static int timed(const bench *b, int i, int p) {
    const int forward_only = i == IMPL_MMA32 || i == IMPL_WGMMA_PERSIST || i == IMPL_WGMMA_PINGPONG;
    return b->on[i] && !(forward_only && p == 1) && !(i == IMPL_WGMMA1 && p == 0);
}

typedef struct {
    int T;
    double pairs, flops[2];          // per call: [0] forward, [1] backward (model count)
    double ms[MAX_IMPLS][2][3];      // [impl][pass][median, min, max]
    double out_rel[MAX_IMPLS];       // ||out_impl - out_naive|| / ||out_naive|| (naive: 0)
    int declined[MAX_IMPLS];         // an implementation that refused this T (cuDNN: its workspace)
} row;

// Whether implementation i ran in pass p at this row's T.
static int ran(const bench *b, const row *w, int i, int p) { return timed(b, i, p) && !w->declined[i]; }

static void call(const bench *b, int impl, int pass, int T) {
    const gm_backend *be = b->be;
    if (pass == 0) gm_cuda_attn_fwd_with(IMPLS[impl], be, b->out, b->lse, b->q, b->k, b->v, b->B, T, b->NH, b->HD, b->scale, b->mask);
    else
        gm_cuda_attn_bwd_with(IMPLS[impl], be, b->dq, b->dk, b->dv, GM_GRAD_SET, b->dout, b->q, b->k, b->v, b->out,
                              b->lse, b->B, T, b->NH, b->HD, b->scale, b->mask);
}

static void sync_or_die(const bench *b) {
    if (b->be->sync(b->be)) gm_die_last();
}

// Median, min, max of `reps` samples (ms per call). The calls, warm-up first, run in an NVTX range
// named "<impl>-forward" or "<impl>-backward" (GM_CUDA_ATTN's name): forms that launch one kernel
// (wgmma-persist is wgmma's forward on fewer blocks) are then told apart by Nsight Compute
// (--nvtx --nvtx-include "wgmma-persist-forward/": the GPU report's profile stage).
static void time_calls(const bench *b, int impl, int pass, int T, double res[3]) {
#ifdef GM_HAVE_CUDA
    char range[64];
    snprintf(range, sizeof range, "%s-%s", NAME(impl), pass ? "backward" : "forward");
    nvtxRangePushA(range);
#endif
    call(b, impl, pass, T);  // warm-up (and the forward's out / lse for a backward)
    sync_or_die(b);
    uint64_t t0 = gm_now_ns();
    call(b, impl, pass, T);
    sync_or_die(b);
    const double one = gm_seconds_since(t0);
    const int calls = one >= SAMPLE_S ? 1 : (int)ceil(SAMPLE_S / fmax(one, 1e-6));
    double t[MAX_REPS];
    for (int r = 0; r < b->reps; r++) {
        t0 = gm_now_ns();
        for (int c = 0; c < calls; c++) call(b, impl, pass, T);
        sync_or_die(b);
        t[r] = gm_seconds_since(t0) * 1e3 / calls;
    }
#ifdef GM_HAVE_CUDA
    nvtxRangePop();
#endif
    res[0] = gm_median(t, b->reps), res[1] = t[0], res[2] = t[b->reps - 1];
}

// rel[i] = ||out_i - out_naive|| / ||out_naive|| for each implementation that ran (naive: 0), the
// naive forward run once.
static void out_rel_diffs(const bench *b, int T, const int declined[MAX_IMPLS], double rel[MAX_IMPLS]) {
    const size_t n = (size_t)b->B * T * b->NH * b->HD;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    if (!x || !y) gm_die("attention_gpu: out of memory");
    gm_cuda_attn_fwd_with(GM_CUDA_ATTN_NAIVE, b->be, b->out, b->lse, b->q, b->k, b->v, b->B, T, b->NH, b->HD, b->scale, b->mask);
    if (gm_act_download(b->be, y, b->out, n)) gm_die_last();
    rel[IMPL_NAIVE] = 0;
    for (int i = 0; i < MAX_IMPLS; i++) {
        if (i == IMPL_NAIVE || !b->on[i] || declined[i]) continue;
        gm_cuda_attn_fwd_with(IMPLS[i], b->be, b->out, b->lse, b->q, b->k, b->v, b->B, T, b->NH, b->HD, b->scale, b->mask);
        if (gm_act_download(b->be, x, b->out, n)) gm_die_last();
        sync_or_die(b);
        double num = 0, den = 0;
        for (size_t e = 0; e < n; e++) num += ((double)x[e] - y[e]) * ((double)x[e] - y[e]), den += (double)y[e] * y[e];
        rel[i] = sqrt(num / (den > 0 ? den : 1));
    }
    free(x), free(y);
}

static void write_or_die(gm_atomic_file *af, int rc) {
    if (rc) {
        gm_atomic_abort(af);
        gm_die_last();
    }
}
#define OUT(af, ...) write_or_die(af, gm_atomic_printf(af, __VA_ARGS__))

static double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e9) : 0; }

static void write_csv(const bench *b, const row *rows, int nrows, const char *path) {
    gm_atomic_file f;
    if (gm_atomic_open(&f, path)) gm_die_last();
    OUT(&f, "impl,pass,B,T,NH,HD,block,window,docs,pairs,flops,median_ms,min_ms,max_ms,tflops,out_rel_diff\n");
    for (int r = 0; r < nrows; r++)
        for (int i = 0; i < MAX_IMPLS; i++)
            for (int p = 0; p < 2; p++) {
                if (!ran(b, &rows[r], i, p)) continue;
                const double *ms = rows[r].ms[i][p];
                OUT(&f, "%s,%s,%d,%d,%d,%d,%d,%d,%d,%.0f,%.6g,%.6g,%.6g,%.6g,%.4g,%.3g\n", NAME(i), p ? "bwd" : "fwd", b->B, rows[r].T, b->NH, b->HD, b->mask.block, b->mask.window_blocks,
                    b->mask.doc != NULL, rows[r].pairs, rows[r].flops[p], ms[0], ms[1], ms[2],
                    tflops(rows[r].flops[p], ms[0]), rows[r].out_rel[i]);
            }
    write_or_die(&f, gm_atomic_commit(&f));
}

static void write_md(const bench *b, const row *rows, int nrows, const char *path, const char *preset,
                     const char *cmdline, const double load[2], int doc_len) {
    gm_atomic_file f;
    if (gm_atomic_open(&f, path)) gm_die_last();
    char *hw = gm_hardware_json();
    OUT(&f, "# GPU attention: tensor cores (mma.sync bf16) vs naive fp32%s, %s shapes\n\n",
        b->on[IMPL_CUDNN] ? ", and cuDNN's fused attention" : "", preset);
    OUT(&f, "- Machine: `%s`.\n", hw);
    OUT(&f, "- Commit: `%s`. Command: `%s`.\n", gm_build_commit, cmdline);
    OUT(&f, "- Host load average (1 min): %.2f at start, %.2f at end; the GPU is assumed otherwise idle.\n", load[0],
        load[1]);
    OUT(&f, "- Shape: B = %d, %d heads x %d, mask blocks of %d, window %d blocks%s; ", b->B, b->NH, b->HD,
        b->mask.block, b->mask.window_blocks, b->mask.window_blocks > 0 ? "" : " (none: plain causal)");
    if (doc_len > 0)
        OUT(&f, "documents EOT-opened with exponential lengths of mean %d tokens, pairs counted exactly.\n", doc_len);
    else
        OUT(&f, "no document mask.\n");
    OUT(&f, "- TFLOP/s: backend/cost.h's count over the admitted (q, k) pairs, 4 HD flops a pair forward and 10 HD "
            "backward (the two-kernel tensor-core backwards execute 14 HD: their separate dq pass recomputes S and dP; "
            "the one-pass backward, wgmma1, 10 HD). "
            "Median of %d samples, each a run of back-to-back calls closed by a sync (>= %.0f ms), after a warm-up; "
            "min and max in the CSV. `out diff`: ||out_mma - out_naive|| / ||out_naive|| (bf16 inputs vs fp32).\n\n",
        b->reps, SAMPLE_S * 1e3);
    OUT(&f, "| T | pairs / head | mma fwd ms | TFLOP/s | naive fwd ms | TFLOP/s | fwd speed-up | mma bwd ms | TFLOP/s "
            "| naive bwd ms | TFLOP/s | bwd speed-up | out diff |\n");
    OUT(&f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int r = 0; r < nrows; r++) {
        const row *w = &rows[r];
        OUT(&f, "| %d | %.4g |", w->T, w->pairs / (b->B * b->NH));
        for (int p = 0; p < 2; p++)
            OUT(&f, " %.4g | %.1f | %.4g | %.1f | %.1fx |", w->ms[0][p][0], tflops(w->flops[p], w->ms[0][p][0]),
                w->ms[1][p][0], tflops(w->flops[p], w->ms[1][p][0]), w->ms[1][p][0] / w->ms[0][p][0]);
        OUT(&f, " %.2g |\n", w->out_rel[IMPL_MMA]);
    }
    // The other implementations, one table each, beside mma or (wgmma1) wgmma (a pass not timed: -).
    static const char *const about[MAX_IMPLS] = {
        [IMPL_MMA32] = "The forward with 32 query rows per warp (mma32: 4 warps a block, K and V fragments feeding two "
                       "m-tiles; bitwise mma's results; its backward is mma's)",
        [IMPL_WGMMA] = "The forward and backward on Hopper's wgmma (wgmma: the same kernels with their products on "
                       "wgmma, Q, K, V, dO read from shared memory through descriptors)",
        [IMPL_WGMMA1] = "The one-pass backward on wgmma (wgmma1: one kernel a key block, 5 products a pair, dq summed over "
                        "the key blocks in a fixed order; its forward is wgmma's, not timed again)",
        [IMPL_WGMMA_PERSIST] = "The wgmma forward on persistent blocks (wgmma-persist: as many blocks as the GPU "
                               "holds, each walking many blocks of 128 queries, the next one's copies under the last "
                               "one's tiles; bitwise wgmma's results; its backward is wgmma's, not timed again)",
        [IMPL_WGMMA_PINGPONG] = "The wgmma forward with its warpgroups taking turns to issue their products "
                                "(wgmma-pingpong: FlashAttention-3's pingpong, one warpgroup's softmax under the "
                                "other's products; bitwise wgmma's results; its backward is wgmma's, not timed again)",
        [IMPL_CUDNN] = "cuDNN's fused attention (graph API, plain causal)"};
    for (int i = IMPL_MMA32; i < MAX_IMPLS; i++) {
        if (!b->on[i]) continue;
        // beside mma, but wgmma's variants beside what they replace (wgmma's)
        const int base = beside_wgmma(i) ? IMPL_WGMMA : IMPL_MMA;
        const char *nm = NAME(i), *bn = NAME(base);
        OUT(&f, "\n%s, the same inputs; `%s / %s`: %s's time over its; `out diff`: ||out_%s - out_naive|| / "
                "||out_naive||.\n\n", about[i], bn, nm, bn, nm);
        OUT(&f, "| T | %s fwd ms | TFLOP/s | %s / %s | %s bwd ms | TFLOP/s | %s / %s | out diff |\n", nm, bn, nm, nm, bn,
            nm);
        OUT(&f, "|---|---|---|---|---|---|---|---|\n");
        for (int r = 0; r < nrows; r++) {
            const row *w = &rows[r];
            OUT(&f, "| %d |", w->T);
            for (int p = 0; p < 2; p++)
                if (ran(b, w, i, p))
                    OUT(&f, " %.4g | %.1f | %.2f |", w->ms[i][p][0], tflops(w->flops[p], w->ms[i][p][0]),
                        w->ms[base][p][0] / w->ms[i][p][0]);
                else
                    OUT(&f, " - | - | - |");
            if (w->declined[i]) OUT(&f, " - |\n");
            else OUT(&f, " %.2g |\n", w->out_rel[i]);
        }
        int first = -1;
        for (int r = 0; r < nrows && first < 0; r++)
            if (rows[r].declined[i]) first = rows[r].T;
        if (first >= 0) OUT(&f, "\n%s declined T = %d and longer: %s.\n", nm, first, b->declined_why);
    }
    write_or_die(&f, gm_atomic_commit(&f));
    free(hw);
}

// The forms --skip names (a comma-separated list) into skip[]; one error line and exit on a name
// that is no form, or names mma or naive, or an empty item.
static void parse_skip(const char *list, int skip[MAX_IMPLS]) {
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        gm_cuda_attn_impl impl;
        int found = -1;
        if (len && !gm_cuda_attn_parse(p, len, &impl))
            for (int i = IMPL_MMA32; i < MAX_IMPLS; i++)
                if (IMPLS[i] == impl) found = i;
        if (found < 0)
            gm_die("--skip=%s: '%.*s' is not a form it may leave out (mma32, wgmma, wgmma1, wgmma-persist, "
                   "wgmma-pingpong, cudnn)",
                   list, (int)len, p);
        skip[found] = 1;
        if (!comma) return;
        p = comma + 1;
    }
}

static void usage(void) {
    printf("usage: attention_gpu [--preset=NAME] [--tmin=T] [--tmax=T] [--window=BLOCKS] [--doc_len=L] [--reps=N]\n"
           "                     [--skip=FORM,...] [--out=DIR] [--name=BASE]\n"
           "  GPU attention, tensor cores vs naive (the forward also with 32 rows a warp; both passes also on wgmma\n"
           "  on an sm_90 GPU, the one-pass backward and the persistent and pingpong forwards; cuDNN on a plain\n"
           "  causal mask), forward and backward, at the preset's per-GPU shape for T = tmin, 2 tmin, ... tmax;\n"
           "  writes OUT/NAME.csv and .md.\n"
           "  Without a GPU: one line, exit 0.\n"
           "  --preset    whose attention shape (default softcap)\n"
           "  --tmin      shortest sequence (default 1024)\n"
           "  --tmax      longest sequence (default 65536)\n"
           "  --window    sliding window in blocks, 0 = plain causal (default the preset's final window)\n"
           "  --doc_len   mean document length of a document mask, 0 = none (default 0)\n"
           "  --reps      timed samples per (T, kernel) (default 10)\n"
           "  --skip      forms left out, comma-separated (default none): mma32, wgmma (with wgmma1,\n"
           "              wgmma-persist, wgmma-pingpong), wgmma1, wgmma-persist, wgmma-pingpong, cudnn\n"
           "  --out       report folder (default reports/bench)\n"
           "  --name      report file base (default gpu-attention-<preset>)\n");
}

int main(int argc, char **argv) {
    gm_runtime_init(argc, argv);
    if (gm_help_requested(argc, argv)) return usage(), 0;
    const char *preset = "softcap", *out = "reports/bench", *name = NULL;
    int tmin = 1024, tmax = 65536, window = -1, doc_len = 0, reps = 10, skip[MAX_IMPLS] = {0};
    for (int i = 1; i < argc;) {
        const char *key, *val;
        gm_arg_next(argc, argv, &i, &key, &val);
        if (!strcmp(key, "preset")) preset = val;
        else if (!strcmp(key, "tmin")) tmin = (int)gm_arg_int(key, val, 1, 1 << 20);
        else if (!strcmp(key, "tmax")) tmax = (int)gm_arg_int(key, val, 1, 1 << 20);
        else if (!strcmp(key, "window")) window = (int)gm_arg_int(key, val, 0, 1 << 20);
        else if (!strcmp(key, "doc_len")) doc_len = (int)gm_arg_int(key, val, 0, 1 << 24);
        else if (!strcmp(key, "reps")) reps = (int)gm_arg_int(key, val, 1, MAX_REPS);
        else if (!strcmp(key, "skip")) parse_skip(val, skip);
        else if (!strcmp(key, "out")) out = val;
        else if (!strcmp(key, "name")) name = val;
        else
            gm_die("--%s: unknown flag (known: --preset, --tmin, --tmax, --window, --doc_len, --reps, --skip, --out, "
                   "--name)",
                   key);
    }
    if (tmin > tmax) gm_die("--tmin=%d is above --tmax=%d", tmin, tmax);
    char why[256];
    if (gm_cuda_device_count(why, sizeof why) == 0) {
        printf("attention_gpu: skipped: %s\n", why);
        return 0;
    }
    char cmdline[1024] = "";
    for (int i = 0; i < argc; i++) {
        strncat(cmdline, i ? " " : "", sizeof cmdline - strlen(cmdline) - 1);
        strncat(cmdline, argv[i], sizeof cmdline - strlen(cmdline) - 1);
    }

    gm_run_config rc;
    if (gm_run_config_preset(&rc, preset, "full") || gm_run_config_finish(&rc)) gm_die_last();
    const gm_config *mc = &rc.model;
    bench b = {0};
    if (!(b.be = gm_backend_cuda(0))) gm_die_last();
    b.B = 1, b.NH = mc->n_head, b.HD = mc->head_dim, b.reps = reps, b.scale = 1.0 / sqrt(mc->head_dim);
    b.mask.block = mc->attn_block > 0 ? mc->attn_block : 128;
    b.mask.window_blocks = window >= 0 ? window : gm_config_window_blocks(mc, 1, 1);
    const size_t n = (size_t)b.B * tmax * b.NH * b.HD;

    // Inputs N(0, 1) (drawn on the GPU by base/rng.h's Philox stream, through the host).
    float *host = malloc(sizeof(float) * n);
    if (!host) gm_die("attention_gpu: out of memory (%zu floats)", n);
    gm_actval **in[4] = {&b.q, &b.k, &b.v, &b.dout};
    for (int t = 0; t < 4; t++) {
        if (gm_cuda_rng_normal(1, (uint64_t)t, 0, host, n)) gm_die_last();
        if (!(*in[t] = b.be->alloc(b.be, b.be->act_size * n)) || gm_act_upload(b.be, *in[t], host, n)) gm_die_last();
    }
    free(host);
    gm_actval **outs[4] = {&b.out, &b.dq, &b.dk, &b.dv};
    for (int t = 0; t < 4; t++)
        if (!(*outs[t] = b.be->alloc(b.be, b.be->act_size * n))) gm_die_last();
    if (!(b.lse = b.be->alloc(b.be, sizeof(gm_real) * b.B * b.NH * tmax))) gm_die_last();
    int32_t *doc = NULL;
    if (doc_len > 0) {
        int32_t *ids = malloc(sizeof(int32_t) * tmax);
        if (!ids || !(doc = malloc(sizeof(int32_t) * tmax))) gm_die("attention_gpu: out of memory");
        size_t next = 0;
        for (int t = 0; t < tmax; t++) {
            ids[t] = (size_t)t == next;
            if (ids[t]) next += 1 + (size_t)(-log(1.0 - gm_rng_uniform(7, 1, (uint64_t)t)) * (doc_len - 1));
        }
        gm_doc_ids(doc, ids, 1, tmax, 1);
        free(ids);
        int32_t *gdoc = b.be->alloc(b.be, sizeof(int32_t) * tmax);
        if (!gdoc) gm_die_last();
        b.be->upload(b.be, gdoc, doc, sizeof(int32_t) * tmax);
        b.mask.doc = gdoc;
    }

    // cuDNN is timed beside ours where the mask is plain causal and a forward and a backward at tmin run.
    b.on[IMPL_MMA] = b.on[IMPL_NAIVE] = b.on[IMPL_MMA32] = 1;
    b.on[IMPL_WGMMA] = b.on[IMPL_WGMMA1] = b.on[IMPL_WGMMA_PERSIST] = b.on[IMPL_WGMMA_PINGPONG] =
        gm_cuda_attn_wgmma_ready(b.be);
    if (!b.on[IMPL_WGMMA]) fprintf(stderr, "attention_gpu: wgmma not timed: not an sm_90 GPU with the sm_90a build\n");
    for (int i = 0; i < MAX_IMPLS; i++)
        if (skip[IMPL_WGMMA] && beside_wgmma(i)) skip[i] = 1;
    for (int i = 0; i < MAX_IMPLS; i++)
        if (skip[i] && (b.on[i] || i == IMPL_CUDNN)) fprintf(stderr, "attention_gpu: %s not timed: --skip\n", NAME(i));
    for (int i = 0; i < MAX_IMPLS; i++) b.on[i] &= !skip[i];
    if (gm_cuda_attn_plain_causal(b.mask) && !skip[IMPL_CUDNN]) {
        call(&b, IMPL_CUDNN, 0, tmin), call(&b, IMPL_CUDNN, 1, tmin);
        if (b.be->sync(b.be)) fprintf(stderr, "attention_gpu: cuDNN not timed: %s\n", gm_error());
        else b.on[IMPL_CUDNN] = 1;
    }
    double load[2] = {gm_load_average(), 0};
    fprintf(stderr, "attention_gpu: %s, B=%d NH=%d HD=%d, window %d blocks of %d, docs %s; T = %d..%d\n", preset, b.B,
            b.NH, b.HD, b.mask.window_blocks, b.mask.block, doc ? "on" : "off", tmin, tmax);
    row rows[MAX_T_STEPS];
    int nrows = 0;
    for (long long T = tmin; T <= tmax && nrows < MAX_T_STEPS; T *= 2) {
        row *w = &rows[nrows++];
        *w = (row){.T = (int)T};
        if (doc) {  // exact count with the documents
            gm_attn_mask hm = b.mask;
            hm.doc = doc;
            w->pairs = 0;
            for (int i = 0; i < w->T; i++) {
                long long lo = hm.window_blocks > 0 ? ((long long)(i / hm.block) - hm.window_blocks + 1) * hm.block : 0;
                for (int j = lo > 0 ? (int)lo : 0; j <= i; j++) w->pairs += gm_attn_allowed(&hm, i, j, doc[i], doc[j]);
            }
            w->pairs *= (double)b.B * b.NH;
        } else {
            w->pairs = (double)b.B * b.NH * gm_cost_attn_pairs(w->T, b.mask.block, b.mask.window_blocks);
        }
        // The cost formulas with the pairs scaled to the exact count (equal without documents).
        gm_kernel_cost cf = {.act_bytes = (double)b.be->act_size}, cb = cf;
        gm_cost_attn_fwd(&cf, b.out, b.lse, b.q, b.k, b.v, b.B, w->T, b.NH, b.HD, b.scale, b.mask);
        gm_cost_attn_bwd(&cb, b.dq, b.dk, b.dv, GM_GRAD_SET, b.dout, b.q, b.k, b.v, b.out, b.lse, b.B, w->T, b.NH, b.HD,
                         b.scale, b.mask);
        const double model_pairs = (double)b.B * b.NH * gm_cost_attn_pairs(w->T, b.mask.block, b.mask.window_blocks);
        w->flops[0] = cf.flops * w->pairs / model_pairs, w->flops[1] = cb.flops * w->pairs / model_pairs;
        // cuDNN may decline a longer T than tmin (a plan wanting more workspace than it is allowed):
        // that T and the longer ones go without it, the reason said once.
        if (b.on[IMPL_CUDNN]) {
            w->declined[IMPL_CUDNN] = nrows > 1 && w[-1].declined[IMPL_CUDNN];
            if (!w->declined[IMPL_CUDNN]) {
                call(&b, IMPL_CUDNN, 0, w->T), call(&b, IMPL_CUDNN, 1, w->T);
                if (b.be->sync(b.be)) {
                    w->declined[IMPL_CUDNN] = 1;
                    snprintf(b.declined_why, sizeof b.declined_why, "%s", gm_error());
                    fprintf(stderr, "attention_gpu: cuDNN not timed from T = %d on: %s\n", w->T, b.declined_why);
                }
            }
        }
        for (int i = 0; i < MAX_IMPLS; i++)
            for (int p = 0; p < 2; p++)
                if (ran(&b, w, i, p)) time_calls(&b, i, p, w->T, w->ms[i][p]);
        out_rel_diffs(&b, w->T, w->declined, w->out_rel);
        fprintf(stderr, "  T=%6d  fwd: mma %9.3f ms (%6.1f TFLOP/s), naive %9.3f ms;  bwd: mma %9.3f ms (%6.1f TFLOP/s), "
                        "naive %9.3f ms;  out diff %.2g\n",
                w->T, w->ms[0][0][0], tflops(w->flops[0], w->ms[0][0][0]), w->ms[1][0][0], w->ms[0][1][0],
                tflops(w->flops[1], w->ms[0][1][0]), w->ms[1][1][0], w->out_rel[IMPL_MMA]);
        for (int i = IMPL_MMA32; i < MAX_IMPLS; i++) {
            if (!b.on[i] || w->declined[i]) continue;
            fprintf(stderr, "          %s:", NAME(i));
            for (int p = 0; p < 2; p++)
                if (timed(&b, i, p))
                    fprintf(stderr, "%s %s %9.3f ms (%6.1f TFLOP/s)", p && timed(&b, i, 0) ? "," : "", p ? "bwd" : "fwd",
                            w->ms[i][p][0], tflops(w->flops[p], w->ms[i][p][0]));
            fprintf(stderr, ";  out diff %.2g\n", w->out_rel[i]);
        }
    }
    load[1] = gm_load_average();

    char base[1024], csv[1100], md[1100];
    snprintf(base, sizeof base, "%s/%s", out, name ? name : "");
    if (!name) snprintf(base, sizeof base, "%s/gpu-attention-%s", out, preset);
    snprintf(csv, sizeof csv, "%s.csv", base), snprintf(md, sizeof md, "%s.md", base);
    if (gm_mkdir_p(out, NULL)) gm_die_last();
    write_csv(&b, rows, nrows, csv);
    write_md(&b, rows, nrows, md, preset, cmdline, load, doc_len);
    printf("%s\n", md);

    void *all[9] = {b.q, b.k, b.v, b.dout, b.out, b.dq, b.dk, b.dv, b.lse};
    for (int t = 0; t < 9; t++) b.be->free(b.be, all[t]);
    if (b.mask.doc) b.be->free(b.be, (void *)b.mask.doc);
    free(doc);
    return 0;
}
