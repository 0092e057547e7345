// bench/backend_compare on the guarded backend (the CPU kernels behind locked memory): every row is
// bitwise equal to the CPU reference, which holds only if the harness hands both sides the same
// inputs and compares the buffers each side's kernel wrote; every kernel of GM_BACKEND_KERNELS has
// a row (the list comes from the X-macro, so a kernel added without a row fails here); --out writes
// the same report; --help and bad flags behave as in every program.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

#define KERNEL_NAME(name, params, args) #name,
static const char *const kernels[] = {GM_BACKEND_KERNELS(KERNEL_NAME)};

static char *run_ok(const char *args) {
    char cmd[4400], *out, *err;
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 '%s' %s", th_bin_path("bench/backend_compare"), args);
    cr_assert_eq(th_run(cmd, &out, &err), 0, "%s: %s", args, err);
    cr_expect_str_eq(err, "", "%s", err);
    free(err);
    return out;
}

// The table's rows ("| kernel | case | output | n | abs | rel | norm | bitwise | note |"): how many,
// and each row's kernel counted into hits[] by its index in kernels[].
static int check_rows(const char *out, int *hits) {
    int rows = 0;
    const size_t nk = sizeof kernels / sizeof kernels[0];
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "| ", 2) || !strncmp(p, "| kernel |", 10)) continue;
        char line[1024];
        size_t len = strcspn(p, "\n");
        cr_assert_lt(len, sizeof line, "row too long: %.80s", p);
        memcpy(line, p, len), line[len] = '\0';
        char *cell[10];
        int n = 0;
        for (char *c = strtok(line + 1, "|"); c && n < 10; c = strtok(NULL, "|")) cell[n++] = c;
        cr_assert_eq(n, 9, "a row of %d cells: %.*s", n, (int)len, p);
        cr_expect_str_eq(cell[7], " yes ", "not bitwise equal: %.*s", (int)len, p);
        cr_expect_str_eq(cell[8], " - ", "a note: %.*s", (int)len, p);
        for (size_t k = 0; k < nk; k++) {
            char want[64];
            snprintf(want, sizeof want, " %s ", kernels[k]);
            if (!strcmp(cell[0], want)) hits[k]++;
        }
        rows++;
    }
    return rows;
}

Test(backend_compare, guarded_is_bitwise_the_cpu_on_every_kernel, .timeout = 120) {
    char *out = run_ok("--backend=guarded --seed=5");
    cr_expect(strstr(out, "# Backend comparison: guarded against cpu-"), "%s", out);
    cr_expect(strstr(out, "Seed: 5."), "%s", out);
    cr_expect(strstr(out, "skipped: not the cuda backend"), "%s", out);
    int hits[sizeof kernels / sizeof kernels[0]] = {0};
    int rows = check_rows(out, hits);
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
        cr_expect_gt(hits[k], 0, "kernel %s has no row", kernels[k]);
    // Both shape sets; the odd one's attention windows and masks.
    cr_expect(strstr(out, "| small: "), "no small rows");
    cr_expect(strstr(out, "| odd: documents + window 2 blocks, B=2 T=37 NH=3 HD=12 block=5 | dv= |"), "%s", out);
    cr_expect_gt(rows, 200, "%d rows", rows);
    free(out);
}

// cpu-bf16 against its base cpu-bf16mm (--ref=cpu-bf16mm): the program runs, the parameter gradients
// and per-row statistics cpu-bf16 leaves in fp32 are bitwise cpu-bf16mm's, and the activations,
// which it rounds, are not.
Test(backend_compare, cpu_bf16_against_cpu_bf16mm_rounds_only_activations, .timeout = 120) {
    static const char *const fp32[] = {" dW ", " dtable ", " dpa ", " dpb ", " rstd ", " lse ", " losses "};
    char *out = run_ok("--backend=cpu-bf16 --ref=cpu-bf16mm --shapes=small");
    cr_expect(strstr(out, "# Backend comparison: cpu-bf16 against cpu-bf16mm"), "%s", out);
    int fp32_rows = 0, rounded_rows = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "| ", 2) || !strncmp(p, "| kernel |", 10)) continue;
        char line[1024], *cell[10];
        size_t len = strcspn(p, "\n");
        cr_assert_lt(len, sizeof line, "row too long: %.80s", p);
        memcpy(line, p, len), line[len] = '\0';
        int n = 0;
        for (char *c = strtok(line + 1, "|"); c && n < 10; c = strtok(NULL, "|")) cell[n++] = c;
        cr_assert_eq(n, 9, "a row of %d cells: %.*s", n, (int)len, p);
        int kept = 0;
        for (size_t k = 0; k < sizeof fp32 / sizeof *fp32; k++) kept |= !strcmp(cell[2], fp32[k]);
        if (kept) {
            fp32_rows++;
            cr_expect_str_eq(cell[7], " yes ", "rounded: %.*s", (int)len, p);
        }
        rounded_rows += !strcmp(cell[7], " no ");
    }
    cr_expect_gt(fp32_rows, 20, "%d rows of fp32 outputs", fp32_rows);
    cr_expect_gt(rounded_rows, 20, "%d rows differ: cpu-bf16 rounds nothing?", rounded_rows);
    free(out);
}

Test(backend_compare, out_file_holds_the_report_and_shapes_select_a_set, .timeout = 120) {
    char *dir = th_tmpdir(), args[4200], path[4100], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/bc.md", dir);
    snprintf(args, sizeof args, "--backend=cpu --shapes=odd --out='%s'", path);
    char *out = run_ok(args);
    cr_expect_str_eq(out, "", "--out: nothing on stdout");
    cr_assert_eq(gm_read_all(path, &text, &len), 0, "%s", gm_error());
    char *again = run_ok("--backend=cpu --shapes=odd");
    cr_expect_str_eq(text, again, "--out and stdout differ");
    cr_expect_null(strstr(text, "| small: "), "--shapes=odd ran the small set");
    int hits[sizeof kernels / sizeof kernels[0]] = {0};
    cr_expect_gt(check_rows(text, hits), 100);
    free(out), free(text), free(again);
    th_rmtree(dir);
}

Test(backend_compare, help_and_bad_flags, .timeout = 60) {
    char *out = run_ok("--help");
    cr_expect(strstr(out, "usage: backend_compare") && strstr(out, "--seed=N") && strstr(out, "(default all)"), "%s",
              out);
    free(out);
    th_expect_refused("bench/backend_compare", "--backend=tpu", "--backend: unknown backend 'tpu'", 1);
    th_expect_refused("bench/backend_compare", "--shapes=huge", "--shapes: 'huge' is not small, odd or all", 1);
    th_expect_refused("bench/backend_compare", "--ref=guarded", "--ref: 'guarded' is not cpu, cpu-bf16mm or cpu-bf16", 1);
    th_expect_refused("bench/backend_compare", "--seed=-3", "--seed", 1);
    th_expect_refused("bench/backend_compare", "--device=-1", "--device", 1);
    th_expect_refused("bench/backend_compare", "--colour=red", "--colour: unknown flag", 1);
    th_expect_refused("bench/backend_compare", "--out=", "--out: empty path", 1);
}
