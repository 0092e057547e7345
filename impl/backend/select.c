#include "backend/select.h"

#include <string.h>

#include "backend/bf16act/bf16act.h"
#include "backend/bf16mm/bf16mm.h"
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/device.h"
#include "backend/guard/guard.h"
#include "base/error.h"
#include "base/real.h"

const gm_backend *gm_backend_open(const char *name, int device) {
    if (!strcmp(name, "cpu")) return gm_backend_cpu();
    if (!strcmp(name, "guarded")) return gm_backend_guarded();
    if (!strcmp(name, "cpu-bf16mm")) return gm_backend_cpu_bf16mm();
    if (!strcmp(name, "cpu-bf16")) return gm_backend_cpu_bf16();
    if (!strcmp(name, "cuda")) {
        char why[256];
        if (gm_cuda_device_count(why, sizeof why) <= 0) return gm_fail("--backend=cuda: no GPU: %s", why), NULL;
        const gm_backend *be = gm_backend_cuda(device);
        if (!be) gm_fail("--backend=cuda --device=%d: %s", device, gm_error());
        return be;
    }
    return gm_fail("--backend: unknown backend '%s' (cpu, cuda, guarded, cpu-bf16mm, cpu-bf16)", name), NULL;
}

const char *gm_backend_arithmetic(const char *name) {
    if (!strcmp(name, "cpu") || !strcmp(name, "guarded")) return "the CPU's " GM_REAL_NAME " kernels";
    if (!strcmp(name, "cpu-bf16mm")) return "the CPU's kernels with bf16 matmul operands";
    if (!strcmp(name, "cpu-bf16")) return "the CPU's kernels with bf16 matmul operands and bf16-rounded activations";
    if (!strcmp(name, "cuda")) return "the GPU's bf16 kernels";
    return name;
}

size_t gm_backend_act_size(const char *name) { return !strcmp(name, "cuda") ? GM_CUDA_ACT_BYTES : sizeof(gm_real); }
