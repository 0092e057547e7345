// cuDNN's attention graphs (backend/cuda/attention_cudnn.cu) checked by the real library without a
// GPU, in two steps. (1) Every tensor and operation descriptor of the forward and the backward graph
// is made and finalized by libcudnn, which validates each one (attribute types, dimensions against
// strides, the operands an operation needs). (2) The execution plans for the GPUs the presets run on
// are built from those GPUs' properties (verify/cudnn_devices/*.json: cuDNN's device JSON of an H100
// SXM 80 GB and an H200, written from their nvidia-smi reports in reports/ and Hopper's limits; the
// keys are the ones libcudnn asks for): cuDNN's heuristics must offer an engine and its first choice
// must accept the graph's pattern and compile its kernel for sm_90 (cuDNN's runtime compiler). With
// no driver installed, the CUDA toolkit's stub libcuda stands in and loads no module, so the plan
// stops exactly there, and that stop is what the test accepts (anything earlier, no engine offered
// or a pattern refused, fails); with a driver the plan is built whole. The run itself, and its
// numbers, are the GPU suite's (cuda_attn_cudnn). Skipped, saying why, where the build has no CUDA or
// cuDNN cannot be loaded (GM_REQUIRE_CUDNN=1 turns that into a failure).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/device.h"
#include "helpers.h"

static void skip_without_cudnn(const char *why) {
    const char *req = getenv("GM_REQUIRE_CUDNN");
    cr_assert(!(req && !strcmp(req, "1")), "GM_REQUIRE_CUDNN=1 and %s", why);
    cr_skip_test("cuDNN graph test skipped: %s", why);
}

// Whether a failure's reason says cuDNN is not there at all (no CUDA in this build, no cudnn.h when
// it was compiled, no library to load) rather than that it refused something.
static int cudnn_absent(const char *why) {
    return strstr(why, "without CUDA") || strstr(why, "CPU only") || strstr(why, "cannot load cuDNN") ||
           strstr(why, "no cudnn.h");
}

// 0 when the graph builds; the reason otherwise (skip when cuDNN is not there at all).
static int check(int bwd, int B, int T, int NH, int HD, char *why, size_t len) {
    int rc = gm_cuda_attn_cudnn_graph_check(bwd, B, T, NH, HD, why, len);
    if (rc && cudnn_absent(why)) skip_without_cudnn(why);
    return rc;
}

Test(cudnn_graph, forward_and_backward_descriptors_finalize) {
    // The presets' shape (6 heads of 128, B 1) at a short and the record's T; a batch of two with
    // head_dim 64.
    const int shapes[][4] = {{1, 1024, 6, 128}, {1, 65536, 6, 128}, {2, 256, 2, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int bwd = 0; bwd < 2; bwd++) {
            char why[600] = "";
            const int *s = shapes[i];
            cr_expect(check(bwd, s[0], s[1], s[2], s[3], why, sizeof why) == 0, "%s B %d T %d NH %d HD %d: %s",
                      bwd ? "backward" : "forward", s[0], s[1], s[2], s[3], why);
        }
}

// The check can fail: a negative extent is refused by the library (T = 0 is not: cuDNN 9.19 accepts
// it and then divides by it in the reduction's finalize, so the backend never builds a graph for an
// empty call), and the reason names the descriptor and cuDNN's status.
Test(cudnn_graph, a_refused_descriptor_is_named) {
    char why[600] = "";
    cr_assert(check(0, 1, -4, 6, 128, why, sizeof why) != 0, "T = -4 was accepted");
    cr_expect(strstr(why, "cuDNN's attention graph, Q: CUDNN_STATUS_") != NULL, "reason: %s", why);
}

// cudnn_plan's answer for one graph on one described GPU, run with the real driver where there is
// one, else with the toolkit's stub (skipped where neither is there); its exit status.
static int plan(const char *device, const char *dir, const char *shape, char **out) {
    char why[256], cmd[2048], stub[512] = "";
    if (gm_cuda_device_count(why, sizeof why) <= 0) {
        const char *home = getenv("CUDA_HOME");
        snprintf(stub, sizeof stub, "%s/lib64/stubs", home && *home ? home : "/usr/local/cuda");
        char lib[600];
        snprintf(lib, sizeof lib, "%s/libcuda.so", stub);
        if (!th_file_exists(lib)) cr_skip_test("cuDNN plan test skipped: no driver and no stub driver (%s)", lib);
    }
    snprintf(cmd, sizeof cmd, "%s%s%s %s %s %s %s", *stub ? "LD_LIBRARY_PATH=" : "", stub, *stub ? " " : "",
             th_testprog_path("cudnn_plan"), th_root_path(device), dir, shape);
    const int rc = th_run(cmd, out, NULL);
    if (rc && *out && cudnn_absent(*out)) skip_without_cudnn(*out);
    return rc;
}

// A plan built whole (a driver), or one whose first engine compiled and stopped at the stub's load.
static int engine_compiled(int rc, const char *out) {
    return rc == 0 ? strncmp(out, "plan: engine", 12) == 0 : strstr(out, "cuLibraryLoadData") != NULL;
}

Test(cudnn_graph, an_engine_compiles_both_graphs_for_hopper) {
    // Both graphs at the per-GPU shapes of the presets cuDNN serves, the forward at adamw's / muon's
    // (B 64, T 1024, 12 heads of 64) on the H100, the backward at untied's (6 heads of 128) on the
    // H200, whose properties differ in memory size and clock only. Not the record's T 65536 (a
    // windowed preset, which cuDNN never runs): with a driver, cuDNN 9.19's plan for that backward
    // wants B NH T^2 2 bytes of workspace, 51.5 GB, and is declined (attention_cudnn.cu; H200, driver
    // 580, reports/gpu-h200/run-ecc8627/gpu-suite.log); by that rule 0.8 GB at B 64 x T 1024. Each plan
    // compiles a kernel (~3 s of a CPU core), so make verify builds two; build/verify/prog/cudnn_plan
    // builds any other by hand (both GPUs, both graphs, head_dim 64 at B 2 and T 333 all stop at the
    // stub's load, as these do).
    const struct {
        const char *device, *shape;  // shape: B T NH HD
        int bwd;
    } cases[] = {{"verify/cudnn_devices/h100-sxm-80gb.json", "64 1024 12 64", 0},
                 {"verify/cudnn_devices/h200.json", "64 1024 6 128", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = cases[i].bwd ? "bwd" : "fwd";
        char *out = NULL;
        const int rc = plan(cases[i].device, dir, cases[i].shape, &out);
        cr_expect(engine_compiled(rc, out ? out : ""), "%s, %s, B T NH HD = %s: exit %d, %s", cases[i].device, dir,
                  cases[i].shape, rc, out ? out : "");
        free(out);
    }
}

// ... and the check can fail: no engine takes head_dim 12 (not a multiple of 8).
Test(cudnn_graph, no_engine_takes_head_dim_12) {
    char *out = NULL;
    const int rc = plan("verify/cudnn_devices/h100-sxm-80gb.json", "fwd", "1 256 2 12", &out);
    cr_expect(rc != 0 && !engine_compiled(rc, out ? out : ""), "head_dim 12: exit %d, %s", rc, out ? out : "");
    cr_expect(out && strstr(out, "no engine of the heuristics runs this graph"), "%s", out ? out : "");
    free(out);
}
