#include "base/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

void gm_runtime_init(int argc, char **argv) {
    gm_set_program(argv[0]);
    (void)argc;
    const char *blas = getenv("OPENBLAS_NUM_THREADS");
    if (getenv("OMP_WAIT_POLICY") && blas && !strcmp(blas, "1")) return;
    if (!getenv("OMP_WAIT_POLICY") && setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0) return;
    execv("/proc/self/exe", argv);
    // exec failed (no /proc): run on as started, only slower or, under `ulimit -v`, at risk.
}
