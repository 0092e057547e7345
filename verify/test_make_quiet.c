// The Makefile is quiet by default: a build with nothing to do prints nothing ("make train" then
// shows only the run, no "make[1]: ... is up to date" lines), `make help` compiles nothing and says
// nothing about compiling, the CUDA line appears only when .cu files are actually compiled, and
// V=1 shows the commands. Run on the real Makefile in a scratch tree of a few one-line sources (a
// stand-in nvcc compiles the .cu file as C), so the test takes seconds and touches no build of ours.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static const char *SCRIPT =
    "set -e\n"
    "cd \"$T\"\n"
    "mkdir -p ci impl/base impl/lib impl/cuda impl/bin bench verify tools\n"
    "cp \"$ROOT/impl/base/build_info.h\" impl/base/\n"
    "cp \"$ROOT/Makefile\" .\n"
    "cp \"$ROOT/ci/build_info.py\" ci/\n"
    "printf '#!/bin/sh\\nexit 0\\n' > ci/deps.sh\n"
    "echo 'int lib_one(void) { return 1; }' > impl/lib/one.c\n"
    "echo 'int lib_two(void) { return 2; }' > impl/cuda/two.cu\n"
    "for p in impl/bin/prog bench/kernels bench/model_report bench/backend_compare bench/ckpt_diff; do\n"
    "  echo 'int lib_one(void); int main(void) { return lib_one() - 1; }' > $p.c\n"
    "done\n"
    "echo 'int verify_nothing;' > verify/none.c\n"
    // nvcc's stand-in: compile the source as C into the -o file, ignore nvcc's own flags
    "printf '#!/bin/sh\\nwhile [ $# -gt 0 ]; do case $1 in -o) o=$2; shift;; *.cu) s=$1;; esac; shift; done\\n"
    "exec cc -x c -c \"$s\" -o \"$o\"\\n' > tools/nvcc && chmod +x tools/nvcc\n"
    "m() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory NVCC=$T/tools/nvcc CUDA_LIBS= \"$@\" 2>&1; }\n"
    "echo '== help'; m help\n"
    "echo '== first'; m build\n"
    "echo '== again'; m build\n"
    "echo '== touched'; touch impl/cuda/two.cu; m build\n"
    "echo '== verbose'; touch impl/lib/one.c; m build V=1\n"
    "echo '== end'\n";

// The text between "== name\n" and the next "== " line of the script's output (malloc'd).
static char *section(const char *out, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "== %s\n", name);
    const char *a = strstr(out, key);
    cr_assert_not_null(a, "no section %s in: %s", name, out);
    a += strlen(key);
    const char *b = strstr(a, "== ");
    return strndup(a, b ? (size_t)(b - a) : strlen(a));
}

Test(make_quiet, quiet_by_default_and_verbose_on_request, .timeout = 300) {
    if (getenv("GM_BUNDLE")) cr_skip_test("make: the GPU-node bundle carries no Makefile");
    char *dir = th_tmpdir(), prefix[9000], *out, *err;
    snprintf(prefix, sizeof prefix, "T='%s' ROOT='%s'", dir, th_root_path(""));
    int rc = th_run_script(dir, prefix, SCRIPT, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    char *help = section(out, "help"), *first = section(out, "first"), *again = section(out, "again"),
         *touched = section(out, "touched"), *verbose = section(out, "verbose");
    cr_expect_null(strstr(help, "compiling"), "make help speaks of compiling: %s", help);
    cr_expect(strstr(help, "make verify"), "make help lists no targets: %s", help);
    cr_expect(strstr(first, "two.cu"), "the first build does not say it compiles the .cu file: %s", first);
    cr_expect_null(strstr(first, "-std=c11"), "the first build shows commands: %s", first);
    cr_expect_str_eq(again, "", "a build with nothing to do printed: %s", again);
    cr_expect(strstr(touched, "two.cu"), "recompiling the .cu file is not said: %s", touched);
    cr_expect_null(strstr(touched, "one.c"), "an unchanged C file is named: %s", touched);
    cr_expect(strstr(verbose, "-std=c11") && strstr(verbose, "impl/lib/one.c"), "V=1 shows no commands: %s", verbose);
    free(help), free(first), free(again), free(touched), free(verbose), free(out), free(err);
    th_rmtree(dir);
    free(dir);
}
