// cuDNN's attention graphs (backend/cuda/attention_cudnn.cu) checked by the real library without a
// GPU: every tensor and operation descriptor of the forward and the backward graph is made and
// finalized by libcudnn, which validates each one (attribute types, dimensions against strides,
// the operands an operation needs). The operation graph, the engine choice and the run need a
// device: the GPU suite's cuda_attention_cudnn tests do those. Skipped, saying why, where the
// build has no CUDA or cuDNN cannot be loaded (GM_REQUIRE_CUDNN=1 turns that into a failure).
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/attention.h"

static void skip_without_cudnn(const char *why) {
    const char *req = getenv("GM_REQUIRE_CUDNN");
    cr_assert(!(req && !strcmp(req, "1")), "GM_REQUIRE_CUDNN=1 and %s", why);
    cr_skip_test("cuDNN graph test skipped: %s", why);
}

// 0 when the graph builds; the reason otherwise (skip when cuDNN is not there at all).
static int check(int bwd, int B, int T, int NH, int HD, char *why, size_t len) {
    int rc = gm_cuda_attn_cudnn_graph_check(bwd, B, T, NH, HD, why, len);
    if (rc && (strstr(why, "without CUDA") || strstr(why, "CPU only") || strstr(why, "cannot load cuDNN") ||
               strstr(why, "no cudnn.h")))
        skip_without_cudnn(why);
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
