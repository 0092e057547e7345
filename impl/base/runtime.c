#include "base/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/error.h"

void gm_runtime_init(int argc, char **argv) {
    gm_set_program(argv[0]);
    if (getenv("OMP_WAIT_POLICY")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    (void)argc;
    execv("/proc/self/exe", argv);
    // exec failed (no /proc): run on with the default policy, only slower.
}
