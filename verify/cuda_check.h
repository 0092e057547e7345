// Helpers of the CUDA-vs-CPU suites (test_cuda_*.c): the two backends, fresh random inputs with
// the seed in every failure message, NaN-poisoned outputs, and comparisons at DESIGN.md's bars.
#ifndef GM_VERIFY_CUDA_CHECK_H
#define GM_VERIFY_CUDA_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cuda/device.h"

// DESIGN.md section 4: fp32 within 1e-5 (relative errors are ||gpu - cpu|| / ||cpu|| over the whole
// tensor, and every value must be finite). The bf16 matmul is held element-wise to bounds from its
// rounding points instead (matmul_check.h): a normwise relative bar fails where a prior gradient
// cancels the product.
#define CC_TOL_FP32 1e-5
// Attention sums up to T terms in a different order than the CPU: the CPU suite's own bar for
// two fp32 attention implementations (test_attn_mask.c), 200 ulp.
#define CC_TOL_ATTN (200 * 1.1920928955078125e-07)

// First statement of every GPU test; GPU tests live in suites named cuda_* (the summary counts
// them). Without a device (no CUDA in the build, no driver, no GPU) the test is skipped with the
// reason, or fails when GM_REQUIRE_GPU=1; any other CUDA error (a broken set-up) fails it.
void cc_require_gpu(void);
#define CC_REQUIRE_GPU() cc_require_gpu()

typedef struct {
    const gm_backend *cpu, *gpu;  // gpu: the backend under test (the CUDA one, or a CPU twin)
    uint64_t seed;    // fresh per test (time, pid); GM_TEST_SEED=<n> replays one
    uint64_t stream;  // next RNG stream
} cc_env;

// The backends and a seed; the test fails at once when the CUDA backend cannot be made.
cc_env cc_begin(void);
// The same with another backend under test in the GPU's place (a CPU twin such as cpu-bf16mm, so
// that a GPU test's own checks run on a machine without a GPU).
cc_env cc_begin_backend(const gm_backend *under_test);
// GM_GPU_TEST_MAX_WORK=<n> (unset: no limit) sizes the suites for a runtime far slower than a GPU,
// such as a functional simulator: a case whose work (its count of elements or multiply-adds, as
// the test states it) is above n is left out, with an info line naming it; cc_case_fits says
// whether to run it. A test whose cases are all left out fails (it would prove nothing), so every
// list of cases keeps a small one.
int cc_case_fits(const char *what, double work);
// A test with one size whose point is not the size (repeatability): n elements, or fewer so that
// n * work_per_element stays within GM_GPU_TEST_MAX_WORK (at least 1; an info line when reduced).
size_t cc_capped(const char *what, size_t n, double work_per_element);
// Fails the test when none of its cases ran (all above GM_GPU_TEST_MAX_WORK); skips it instead where
// GM_GPU_TEST_EMPTY_SKIPS=1: a sanitizer run that sizes the tests down for the tool's sake
// (run_gpu_report.sh's racecheck), where a test with nothing at that size has nothing to show it.
void cc_expect_some_ran(int ran);
// n normal draws times `scale` (malloc'd host memory; a fresh stream per call).
gm_real *cc_randn(cc_env *e, size_t n, double scale);
// n ids uniform in [0, V) (malloc'd).
int32_t *cc_randint(cc_env *e, size_t n, int V);
// Device copy of host memory.
void *cc_to_gpu(const cc_env *e, const void *host, size_t bytes);
// n device values, all NaN, so an element a kernel fails to write fails every comparison.
gm_real *cc_poisoned(const cc_env *e, size_t n);
// Host copy of n device values (malloc'd).
gm_real *cc_from_gpu(const cc_env *e, const gm_real *dev, size_t n);
// Wait for the GPU; fails the test with the backend's recorded error.
void cc_sync(const cc_env *e, const char *what);
// Download and compare with the CPU's values: every value finite and the relative error <= tol.
// On failure the message names `what`, the error, the first non-finite index and the seed.
int cc_expect_close(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, size_t n, double tol);
// Element-wise bar: every value finite and |gpu_i - ref_i| <= bound_i (a bound built from unit
// roundoffs and reduction lengths, LAPACK-style; a zero bound demands equality). On failure the
// message names `what`, the worst ratio |gpu - ref| / bound, its index and the seed.
int cc_expect_within(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, const double *bound,
                     size_t n);
// The same three checks on values already on the host (`got`: downloaded by the caller), for
// callers that download once and compare against several references.
int cc_check_close(const cc_env *e, const char *what, const gm_real *got, const gm_real *ref, size_t n, double tol);
int cc_check_within(const cc_env *e, const char *what, const gm_real *got, const gm_real *ref, const double *bound,
                    size_t n);
int cc_check_equal(const cc_env *e, const char *what, const gm_real *got, const gm_real *ref, size_t n);

// ---- Activations (backend.h's gm_actval: e->gpu->act_size bytes an element) ----
// Every tensor a kernel takes as gm_actval goes up through cc_act_to_gpu, which rounds the host
// array in place to what the device then holds, so the CPU reference computes from exactly the
// GPU's inputs. The only rounding left between the two sides is then each activation OUTPUT's one
// store to the element on the device side (the kernels compute in fp32 and round once per store,
// act_elem.cuh), where the fp32 CPU keeps its result unrounded; an ADD into a prior gradient
// rounds the sum once (the prior itself came up through cc_act_to_gpu: the same on both sides).
// With u = cc_act_unit(e), a device output T = fl(t), |T - t| <= u |t|, held to a reference at the
// bar b (or tol) of the unrounded t:
// - normwise, against an unrounded reference R: ||T - R|| <= u ||t|| + tol ||R||
//   <= (tol + u (1 + tol)) ||R||: cc_act_tol;
// - element-wise, |t - r| <= b_i, against an unrounded R = r:  |T - R| <= (1 + u) b_i + u |R|;
//   against a reference rounded to the element too (another kernel's output, R = fl(r)):
//   |T - R| <= u |t| + b_i + u |r| <= (1 + u) b_i + 2u |r|, |r| <= |R| / (1 - u): cc_act_widen.
// (Results in bf16's subnormal range, below 2^-126, would round with an absolute error 2^-134
// instead; no test's outputs come near it.)

// Unit roundoff of the activation element of the backend under test: 0 where it is gm_real (the
// CPU backends and their twins, CUDA while GM_CUDA_ACT_BYTES is 4: the fp32 bars already cover
// the kernels' stores), 2^-8 where it is bf16 (2 bytes). The one place the element's precision
// enters the suites' bars.
double cc_act_unit(const cc_env *e);
// A normwise bar tol on fp32 results, with each element of the result then perturbed by a
// relative rho: tol + rho (1 + tol) (the derivation above, rho for u).
double cc_tol_plus(double tol, double rho);
// cc_tol_plus(tol, cc_act_unit(e)): the bar for an activation output (derivation above).
double cc_act_tol(const cc_env *e, double tol);
// bound[i] <- (1 + u) bound[i] + k u |ref[i]| with k = 1 (ref unrounded: a CPU result) or
// k = 2 / (1 - u) (ref_rounded: another device output), u = cc_act_unit(e).
void cc_act_widen(const cc_env *e, double *bound, const gm_real *ref, size_t n, int ref_rounded);
// n host values up as activations (backend/act_io.h's gm_act_upload), and `host` rounded in place
// to the element by reading them back (gm_act_download): a no-op where the element is gm_real.
gm_actval *cc_act_to_gpu(const cc_env *e, gm_real *host, size_t n);
// n device activations, all NaN in the element, so an element a kernel fails to write fails every
// comparison.
gm_actval *cc_act_poisoned(const cc_env *e, size_t n);
// n zero activations (a gradient accumulated from zero).
gm_actval *cc_act_zeroed(const cc_env *e, size_t n);
// Host copy of n device activations, widened to gm_real (malloc'd).
gm_real *cc_act_from_gpu(const cc_env *e, const gm_actval *dev, size_t n);
// cc_expect_close and cc_expect_within for activations (downloaded with gm_act_download); the bar
// is the caller's (cc_act_tol, cc_act_widen).
int cc_act_expect_close(const cc_env *e, const char *what, const gm_actval *dev, const gm_real *ref, size_t n,
                        double tol);
int cc_act_expect_within(const cc_env *e, const char *what, const gm_actval *dev, const gm_real *ref,
                         const double *bound, size_t n);
// Bit-for-bit equality of device activations with ref rounded to the element first (a kernel whose
// operations are the CPU's stores the CPU's fp32 result rounded once: base/bf16.h's gm_round_bf16
// where the element is bf16; rounding a value that came from the device changes nothing).
int cc_act_expect_equal(const cc_env *e, const char *what, const gm_actval *dev, const gm_real *ref, size_t n);

// An attention test case: shape, mask, and the documents of batch row 0 (rows after it get random
// EOTs, one in 23 tokens on average).
#define CC_ALL_EOT (-2)  // eot[0] = CC_ALL_EOT: every token of row 0 opens a document
typedef struct {
    const char *what;
    int T, NH, HD, block, window, use_docs;
    double qscale;  // > 1: peaky softmax
    int eot[12];    // EOT positions of row 0, -1 terminated
} cc_attn_case;
// Doc ids (B, T) of a case (gm_doc_ids with EOT id 1); malloc'd.
int32_t *cc_attn_docs(cc_env *e, const cc_attn_case *c, int B);
// cc_case_fits for an attention case (both suites run B = 2): its work is every (query, key, dim)
// product of both batch rows and the heads, masks ignored.
int cc_attn_case_fits(const cc_attn_case *c);
// Bit-for-bit equality (kernels whose operation order is the CPU's by construction).
int cc_expect_equal(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, size_t n);

#endif
