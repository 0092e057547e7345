// The scripts that name every preset name the same ones, in the records' order, as the preset table
// (gm_preset_names): `make repro`'s default PRESETS, bench/repro.sh's default, the GPU step
// comparison's, the report's "previous record" order and the curves' colour table. A preset added
// to the table and forgotten in one of them fails here, naming the file.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"
#include "train/run_config.h"

// The preset names joined by `sep`, each wrapped in `quote`.
static void joined(char *buf, size_t len, const char *sep, const char *quote) {
    buf[0] = '\0';
    for (const char *const *p = gm_preset_names; *p; p++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s%s%s", p == gm_preset_names ? "" : sep, quote, *p, quote);
}

static void expect_line(const char *file, const char *prefix, const char *list, const char *suffix) {
    char *text, want[1024];
    size_t len;
    cr_assert_eq(gm_read_all(th_root_path(file), &text, &len), 0, "%s", gm_error());
    snprintf(want, sizeof want, "%s%s%s", prefix, list, suffix);
    cr_expect(strstr(text, want), "%s does not hold '%s'", file, want);
    free(text);
}

Test(preset_lists, every_script_names_every_preset_in_order) {
    char spaced[512], quoted[512];
    joined(spaced, sizeof spaced, " ", "");
    joined(quoted, sizeof quoted, ", ", "\"");
    expect_line("Makefile", "\nPRESETS ?= ", spaced, "\n");
    expect_line("bench/repro.sh", "PRESETS=${2:-\"", spaced, "\"}");
    expect_line("bench/gpu_step_compare.py", "\nPRESETS = \"", spaced, "\"\n");
    expect_line("bench/repro_report.py", "\nRECORD_ORDER = [", quoted, "]\n");
    expect_line("bench/repro_curves.gp", "\nPRESETS = \" ", spaced, " \"\n");
}
