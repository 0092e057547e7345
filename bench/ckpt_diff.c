// ckpt_diff --ref=A --other=B: how far checkpoint B is from checkpoint A, section by section (the
// whole-step comparison of two backends: reports/gpu-sim/). The state sections (parameters and
// optimizer states, fp32 arrays) get the element count, max |b - a|, max |b - a| / max |a|, the
// normwise ||b - a|| / ||a|| and whether they are bitwise equal; the other sections (config, data,
// backend, step, loader position, Adam step counts) whether their bytes are equal. Prints a
// Markdown table; a section in one file only is a row too. Exit 0 once both files are read
// (whatever they hold).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/args.h"
#include "base/diff.h"
#include "base/error.h"
#include "base/help.h"
#include "train/checkpoint.h"

static const char *const USAGE =
    "usage: ckpt_diff --ref=FILE --other=FILE\n"
    "  Compares two checkpoints written by train (ckpt.bin), section by section: for the parameter\n"
    "  and optimizer-state sections max abs, max relative and normwise error and bitwise equality;\n"
    "  for the others byte equality. Markdown table on stdout.\n"
    "  --ref=FILE    the reference checkpoint (no default)\n"
    "  --other=FILE  the checkpoint compared with it (no default)\n";

// Sections that are not fp32 arrays.
static int is_scalar_section(const char *name) {
    return !strcmp(name, "config") || !strcmp(name, "data") || !strcmp(name, "backend") || !strcmp(name, "step") ||
           !strcmp(name, "loader") ||
           (!strncmp(name, "adam.", 5) && strlen(name) > 2 && !strcmp(name + strlen(name) - 2, ".t"));
}

static void compare(const char *name, const void *a, size_t na, const void *b, size_t nb) {
    if (!a || !b) {
        printf("| %s | %s | | | | | no |\n", name, a ? "only in --ref" : "only in --other");
        return;
    }
    const int same = na == nb && !memcmp(a, b, na);
    if (is_scalar_section(name) || na != nb || na % sizeof(float)) {
        printf("| %s | %zu vs %zu bytes | | | | | %s |\n", name, na, nb, same ? "yes" : "no");
        return;
    }
    const float *x = a, *y = b;
    const size_t n = na / sizeof(float);
    double *dx = malloc(sizeof *dx * (n ? n : 1)), *dy = malloc(sizeof *dy * (n ? n : 1));
    if (!dx || !dy) gm_die("out of memory for %zu values", n);
    for (size_t i = 0; i < n; i++) dx[i] = x[i], dy[i] = y[i];
    const gm_diff st = gm_diff_of(dx, dy, n);
    printf("| %s | %zu | %.3g | %.3g | %.3g | %zu | %s |\n", name, n, st.max_abs, st.rel, st.normwise, st.nonfinite,
           same ? "yes" : "no");
    free(dx), free(dy);
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    const char *ref = NULL, *other = NULL;
    if (gm_help_requested(argc, argv)) return fputs(USAGE, stdout), 0;
    for (int i = 1; i < argc;) {
        const char *key, *value;
        gm_arg_next(argc, argv, &i, &key, &value);
        if (!strcmp(key, "ref")) ref = value;
        else if (!strcmp(key, "other")) other = value;
        else gm_die("--%s: unknown flag (ckpt_diff --help lists them)", key);
    }
    if (!ref || !other) gm_die("%s: missing (ckpt_diff --help)", ref ? "--other" : "--ref");
    gm_ckpt a, b;
    if (gm_ckpt_read(&a, ref) || gm_ckpt_read(&b, other)) gm_die_last();
    printf("ckpt_diff: --ref=%s --other=%s\n\n", ref, other);
    printf("| section | elements | max abs err | max abs err / max abs ref | normwise rel err | non-finite | "
           "bitwise |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < a.n; i++) {
        size_t nb = 0;
        const void *pb = NULL;
        for (int j = 0; j < b.n; j++)
            if (!strcmp(b.sections[j].name, a.sections[i].name)) pb = b.sections[j].data, nb = b.sections[j].bytes;
        compare(a.sections[i].name, a.sections[i].data, a.sections[i].bytes, pb, nb);
    }
    for (int j = 0; j < b.n; j++) {
        int found = 0;
        for (int i = 0; i < a.n; i++) found |= !strcmp(a.sections[i].name, b.sections[j].name);
        if (!found) compare(b.sections[j].name, NULL, 0, b.sections[j].data, b.sections[j].bytes);
    }
    gm_ckpt_close(&a), gm_ckpt_close(&b);
    return 0;
}
