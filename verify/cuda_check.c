// Helpers of the CUDA-vs-CPU suites; see cuda_check.h.
#include "cuda_check.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/act_io.h"
#include "backend/attn_mask.h"
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "base/bf16.h"
#include "base/error.h"
#include "base/rng.h"
#include "helpers.h"

void cc_require_gpu(void) {
    char why[256];
    int n = gm_cuda_device_count(why, sizeof why);
    cr_assert(n >= 0, "GPU test failed: %s", why);
    if (n > 0) return;
    const char *req = getenv("GM_REQUIRE_GPU");
    cr_assert(!(req && !strcmp(req, "1")), "GPU test failed: GM_REQUIRE_GPU=1 and %s", why);
    cr_skip_test("GPU test skipped: %s", why);
}

cc_env cc_begin(void) {
    const gm_backend *gpu = gm_backend_cuda(0);
    cr_assert(gpu, "cuda backend: %s", gm_error());
    return cc_begin_backend(gpu);
}

cc_env cc_begin_backend(const gm_backend *under_test) {
    cc_env e = {gm_backend_cpu(), under_test, 0, 1};
    const char *s = getenv("GM_TEST_SEED");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e.seed = s && *s ? strtoull(s, NULL, 10)
                     : ((uint64_t)ts.tv_sec * 1000003u) ^ ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)getpid();
    return e;
}

// GM_GPU_TEST_MAX_WORK as a number; infinite when unset. A value that is not a positive number
// fails the test (a typo must not silently run everything, or nothing).
static double max_work(void) {
    const char *s = getenv("GM_GPU_TEST_MAX_WORK");
    if (!s || !*s) return INFINITY;
    char *end;
    double v = strtod(s, &end);
    cr_assert(*end == 0 && v > 0 && isfinite(v), "GM_GPU_TEST_MAX_WORK='%s': not a positive number", s);
    return v;
}

int cc_case_fits(const char *what, double work) {
    const double cap = max_work();
    if (work <= cap) return 1;
    cr_log_info("left out: %s (work %.3g above GM_GPU_TEST_MAX_WORK=%.3g)", what, work, cap);
    return 0;
}

size_t cc_capped(const char *what, size_t n, double work_per_element) {
    const double cap = max_work();
    if (n * work_per_element <= cap) return n;
    size_t m = (size_t)(cap / work_per_element);
    m = m ? m : 1;
    cr_log_info("%s: %zu elements instead of %zu (GM_GPU_TEST_MAX_WORK=%.3g)", what, m, n, cap);
    return m;
}

void cc_expect_some_ran(int ran) {
    if (ran > 0) return;
    const char *skips = getenv("GM_GPU_TEST_EMPTY_SKIPS");
    if (skips && !strcmp(skips, "1"))
        cr_skip_test("every case of this test is above GM_GPU_TEST_MAX_WORK=%s: skipped (GM_GPU_TEST_EMPTY_SKIPS=1)",
                     getenv("GM_GPU_TEST_MAX_WORK"));
    cr_expect(0, "every case of this test is above GM_GPU_TEST_MAX_WORK=%s: nothing was checked",
              getenv("GM_GPU_TEST_MAX_WORK"));
}

gm_real *cc_randn(cc_env *e, size_t n, double scale) {
    gm_real *x = malloc(sizeof(gm_real) * (n ? n : 1));
    cr_assert(x);
    uint64_t st = e->stream++;
    for (size_t i = 0; i < n; i++) x[i] = (gm_real)(scale * gm_rng_normal(e->seed, st, i));
    return x;
}

int32_t *cc_randint(cc_env *e, size_t n, int V) {
    int32_t *x = malloc(sizeof(int32_t) * (n ? n : 1));
    cr_assert(x);
    uint64_t st = e->stream++;
    for (size_t i = 0; i < n; i++) x[i] = (int32_t)(gm_rng_u32(e->seed, st, i) % (uint32_t)V);
    return x;
}

int cc_attn_case_fits(const cc_attn_case *c) { return cc_case_fits(c->what, 2.0 * c->NH * c->T * c->T * c->HD); }

int32_t *cc_attn_docs(cc_env *e, const cc_attn_case *c, int B) {
    const int T = c->T;
    int32_t *ids = calloc((size_t)B * T, sizeof(int32_t)), *doc = malloc(sizeof(int32_t) * B * T);
    cr_assert(ids && doc);
    const uint64_t st = e->stream++;
    if (c->eot[0] == CC_ALL_EOT)
        for (int t = 0; t < T; t++) ids[t] = 1;
    for (int i = 0; c->eot[i] >= 0; i++) ids[c->eot[i]] = 1;
    for (size_t t = (size_t)T; t < (size_t)B * T; t++) ids[t] = gm_rng_u32(e->seed, st, t) % 23 == 0 ? 1 : 2;
    gm_doc_ids(doc, ids, B, T, 1);
    free(ids);
    return doc;
}

void *cc_to_gpu(const cc_env *e, const void *host, size_t bytes) {
    void *d = e->gpu->alloc(e->gpu, bytes);
    cr_assert(d, "%s", gm_error());
    e->gpu->upload(e->gpu, d, host, bytes);
    return d;
}

gm_real *cc_poisoned(const cc_env *e, size_t n) {
    gm_real *d = e->gpu->alloc(e->gpu, sizeof(gm_real) * (n ? n : 1));
    cr_assert(d, "%s", gm_error());
    e->gpu->fill(e->gpu, d, (gm_real)NAN, n);
    return d;
}

gm_real *cc_from_gpu(const cc_env *e, const gm_real *dev, size_t n) {
    gm_real *h = malloc(sizeof(gm_real) * (n ? n : 1));
    cr_assert(h);
    e->gpu->download(e->gpu, h, dev, sizeof(gm_real) * n);
    return h;
}

void cc_sync(const cc_env *e, const char *what) {
    cr_assert_eq(e->gpu->sync(e->gpu), 0, "%s: %s (seed %llu)", what, gm_error(), (unsigned long long)e->seed);
}

static long first_bad(const gm_real *a, const gm_real *b, size_t n, int exact) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i]) || (exact ? memcmp(&a[i], &b[i], sizeof a[i]) != 0 : 0)) return (long)i;
    return -1;
}

int cc_check_close(const cc_env *e, const char *what, const gm_real *got, const gm_real *ref, size_t n, double tol) {
    double err = th_rel_err(got, ref, n);
    long bad = first_bad(got, ref, n, 0);
    int ok = err <= tol;
    cr_expect(ok,
              "%s: relative error %.3g > %.3g over %zu values (first non-finite: %ld, gpu %g vs cpu %g) (seed %llu)",
              what, err, tol, n, bad, bad >= 0 ? (double)got[bad] : 0.0, bad >= 0 ? (double)ref[bad] : 0.0,
              (unsigned long long)e->seed);
    return ok;
}

int cc_check_within(const cc_env *e, const char *what, const gm_real *got, const gm_real *ref, const double *bound,
                    size_t n) {
    long bad = first_bad(got, ref, n, 0), at = -1;
    double worst = 0;
    for (size_t i = 0; bad < 0 && i < n; i++) {
        double diff = fabs((double)got[i] - ref[i]), r = bound[i] > 0 ? diff / bound[i] : (diff > 0 ? INFINITY : 0);
        if (r > worst || at < 0) worst = r, at = (long)i;
    }
    int ok = bad < 0 && worst <= 1;
    if (bad >= 0) at = bad;
    cr_expect(ok, "%s: |gpu - ref| / bound = %.3g at %ld of %zu (gpu %.9g, ref %.9g, bound %.3g; first non-finite: %ld) (seed %llu)",
              what, worst, at, n, at >= 0 ? (double)got[at] : 0.0, at >= 0 ? (double)ref[at] : 0.0,
              at >= 0 ? bound[at] : 0.0, bad, (unsigned long long)e->seed);
    return ok;
}

int cc_check_equal(const cc_env *e, const char *what, const gm_real *got, const gm_real *ref, size_t n) {
    long bad = first_bad(got, ref, n, 1);
    cr_expect(bad < 0, "%s: not bitwise equal at %ld of %zu: gpu %.9g vs cpu %.9g (seed %llu)", what, bad, n,
              bad >= 0 ? (double)got[bad] : 0.0, bad >= 0 ? (double)ref[bad] : 0.0, (unsigned long long)e->seed);
    return bad < 0;
}

// The cc_expect_* checks: wait, download (gm_real memory or activations), compare on the host.
static gm_real *synced_copy(const cc_env *e, const char *what, const void *dev, size_t n, int act) {
    cc_sync(e, what);
    return act ? cc_act_from_gpu(e, dev, n) : cc_from_gpu(e, dev, n);
}

int cc_expect_close(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, size_t n, double tol) {
    gm_real *h = synced_copy(e, what, dev, n, 0);
    int ok = cc_check_close(e, what, h, ref, n, tol);
    free(h);
    return ok;
}

int cc_expect_within(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, const double *bound,
                     size_t n) {
    gm_real *h = synced_copy(e, what, dev, n, 0);
    int ok = cc_check_within(e, what, h, ref, bound, n);
    free(h);
    return ok;
}

int cc_expect_equal(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, size_t n) {
    gm_real *h = synced_copy(e, what, dev, n, 0);
    int ok = cc_check_equal(e, what, h, ref, n);
    free(h);
    return ok;
}

double cc_act_unit(const cc_env *e) {
    const size_t size = e->gpu->act_size;
    cr_assert(size == sizeof(gm_real) || size == sizeof(gm_bf16), "backend %s: %zu-byte activations", e->gpu->name,
              size);
    return size == sizeof(gm_real) ? 0.0 : 0x1p-8;
}

double cc_tol_plus(double tol, double rho) { return tol + rho * (1 + tol); }

double cc_act_tol(const cc_env *e, double tol) { return cc_tol_plus(tol, cc_act_unit(e)); }

void cc_act_widen(const cc_env *e, double *bound, const gm_real *ref, size_t n, int ref_rounded) {
    const double u = cc_act_unit(e), k = ref_rounded ? 2 / (1 - u) : 1;
    for (size_t i = 0; i < n; i++) bound[i] = (1 + u) * bound[i] + k * u * fabs((double)ref[i]);
}

gm_actval *cc_act_to_gpu(const cc_env *e, gm_real *host, size_t n) {
    gm_actval *d = e->gpu->alloc(e->gpu, e->gpu->act_size * (n ? n : 1));
    cr_assert(d, "%s", gm_error());
    cr_assert_eq(gm_act_upload(e->gpu, d, host, n), 0, "%s", gm_error());
    cr_assert_eq(gm_act_download(e->gpu, host, d, n), 0, "%s", gm_error());
    return d;
}

gm_actval *cc_act_poisoned(const cc_env *e, size_t n) {
    gm_real *nan = malloc(sizeof(gm_real) * (n ? n : 1));
    cr_assert(nan);
    for (size_t i = 0; i < n; i++) nan[i] = (gm_real)NAN;
    gm_actval *d = cc_act_to_gpu(e, nan, n);
    free(nan);
    return d;
}

gm_actval *cc_act_zeroed(const cc_env *e, size_t n) {
    gm_actval *d = e->gpu->alloc(e->gpu, e->gpu->act_size * (n ? n : 1));  // alloc zeroes
    cr_assert(d, "%s", gm_error());
    return d;
}

gm_real *cc_act_from_gpu(const cc_env *e, const gm_actval *dev, size_t n) {
    gm_real *h = malloc(sizeof(gm_real) * (n ? n : 1));
    cr_assert(h);
    cr_assert_eq(gm_act_download(e->gpu, h, dev, n), 0, "%s", gm_error());
    return h;
}

int cc_act_expect_close(const cc_env *e, const char *what, const gm_actval *dev, const gm_real *ref, size_t n,
                        double tol) {
    gm_real *h = synced_copy(e, what, dev, n, 1);
    int ok = cc_check_close(e, what, h, ref, n, tol);
    free(h);
    return ok;
}

int cc_act_expect_within(const cc_env *e, const char *what, const gm_actval *dev, const gm_real *ref,
                         const double *bound, size_t n) {
    gm_real *h = synced_copy(e, what, dev, n, 1);
    int ok = cc_check_within(e, what, h, ref, bound, n);
    free(h);
    return ok;
}

int cc_act_expect_equal(const cc_env *e, const char *what, const gm_actval *dev, const gm_real *ref, size_t n) {
    gm_real *h = synced_copy(e, what, dev, n, 1), *want = malloc(sizeof(gm_real) * (n ? n : 1));
    cr_assert(want);
    const int bf16 = cc_act_unit(e) > 0;
    for (size_t i = 0; i < n; i++) want[i] = bf16 ? (gm_real)gm_round_bf16((float)ref[i]) : ref[i];
    int ok = cc_check_equal(e, what, h, want, n);
    free(h), free(want);
    return ok;
}
