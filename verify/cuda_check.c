// Helpers of the CUDA-vs-CPU suites; see cuda_check.h.
#include "cuda_check.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/attn_mask.h"
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
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
    cr_expect(ran > 0, "every case of this test is above GM_GPU_TEST_MAX_WORK=%s: nothing was checked",
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

int cc_expect_close(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, size_t n, double tol) {
    cc_sync(e, what);
    gm_real *h = cc_from_gpu(e, dev, n);
    double err = th_rel_err(h, ref, n);
    long bad = first_bad(h, ref, n, 0);
    int ok = err <= tol;
    cr_expect(ok,
              "%s: relative error %.3g > %.3g over %zu values (first non-finite: %ld, gpu %g vs cpu %g) (seed %llu)",
              what, err, tol, n, bad, bad >= 0 ? (double)h[bad] : 0.0, bad >= 0 ? (double)ref[bad] : 0.0,
              (unsigned long long)e->seed);
    free(h);
    return ok;
}

int cc_expect_within(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, const double *bound,
                     size_t n) {
    cc_sync(e, what);
    gm_real *h = cc_from_gpu(e, dev, n);
    long bad = first_bad(h, ref, n, 0), at = -1;
    double worst = 0;
    for (size_t i = 0; bad < 0 && i < n; i++) {
        double diff = fabs((double)h[i] - ref[i]), r = bound[i] > 0 ? diff / bound[i] : (diff > 0 ? INFINITY : 0);
        if (r > worst || at < 0) worst = r, at = (long)i;
    }
    int ok = bad < 0 && worst <= 1;
    if (bad >= 0) at = bad;
    cr_expect(ok, "%s: |gpu - ref| / bound = %.3g at %ld of %zu (gpu %.9g, ref %.9g, bound %.3g; first non-finite: %ld) (seed %llu)",
              what, worst, at, n, at >= 0 ? (double)h[at] : 0.0, at >= 0 ? (double)ref[at] : 0.0,
              at >= 0 ? bound[at] : 0.0, bad, (unsigned long long)e->seed);
    free(h);
    return ok;
}

int cc_expect_equal(const cc_env *e, const char *what, const gm_real *dev, const gm_real *ref, size_t n) {
    cc_sync(e, what);
    gm_real *h = cc_from_gpu(e, dev, n);
    long bad = first_bad(h, ref, n, 1);
    cr_expect(bad < 0, "%s: not bitwise equal at %ld of %zu: gpu %.9g vs cpu %.9g (seed %llu)", what, bad, n,
              bad >= 0 ? (double)h[bad] : 0.0, bad >= 0 ? (double)ref[bad] : 0.0, (unsigned long long)e->seed);
    free(h);
    return bad < 0;
}
