// The CUDA backend's choices from the environment, GM_CUDA_LIBS (vendor libraries or their
// references), GM_CUDA_ATTN (the attention's form, or auto) and GM_CUDA_WGMMA (whether the wgmma
// attention forms may run): an unknown value is refused when
// the backend is made, with one error naming the variable, the value and the values it takes, on
// any machine (they are read before the device is looked for). Not a suite cuda_*: those are the
// GPU tests, and these need none. What each known value runs is the GPU suites' to check
// (test_cuda_gemm.c; test_cuda_attention_mma.c: pinned_by_the_environment).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda.h"
#include "base/error.h"

static void expect_refused(const char *var, const char *value, const char *takes) {
#ifndef GM_HAVE_CUDA  // the sanitizer and fp64 builds, a build without nvcc: backend_none.c's stand-in
    cr_skip_test("no CUDA backend in this build: its stand-in reads no environment");
#endif
    setenv(var, value, 1);
    const gm_backend *be = gm_backend_cuda(0);
    cr_expect_null(be, "%s=%s: the backend was made", var, value);
    char want[256];
    snprintf(want, sizeof want, "cuda backend: %s: unknown value '%s' (%s)", var, value, takes);
    cr_expect(strstr(gm_error(), want) != NULL, "%s=%s: the error reads '%s', not '%s'", var, value, gm_error(), want);
}

// One form, or FWD,BWD: a wrong name on either side of the comma, or a third part, is refused.
Test(backend_env, unknown_attention_form_refused) {
    const char *takes = "a form, or FWD,BWD; forms: auto, naive, mma, mma32, wgmma, wgmma1, wgmma-persist, "
                        "wgmma-pingpong, cudnn";
    const char *const bad[] = {"wgmma2", "auto,wgmma2", "wgmma2,auto", "auto,", ",mma", "mma,mma,mma", "MMA"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_refused("GM_CUDA_ATTN", bad[i], takes);
}
// Known values pass the check: the backend is made, or (no GPU here) refused for another reason.
Test(backend_env, known_attention_forms_accepted) {
#ifndef GM_HAVE_CUDA
    cr_skip_test("no CUDA backend in this build: its stand-in reads no environment");
#endif
    setenv("GM_CUDA_ATTN", "auto,wgmma1", 1);
    const gm_backend *be = gm_backend_cuda(0);
    cr_expect(be || !strstr(gm_error(), "GM_CUDA_ATTN"), "GM_CUDA_ATTN=auto,wgmma1: %s", gm_error());
}
Test(backend_env, unknown_library_choice_refused) { expect_refused("GM_CUDA_LIBS", "cublas", "vendor, ref"); }
Test(backend_env, unknown_wgmma_switch_refused) {
    const char *const bad[] = {"0", "no", "OFF", "of"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_refused("GM_CUDA_WGMMA", bad[i], "on, off");
}
