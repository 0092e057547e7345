// Numbers in messages are printed with the fewest digits that read back as the same double
// ("0.05 -> 0.06", never "0.050000000000000003 -> 0.059999999999999998"), so a message shows the
// value that was given, and exactly: a flag value out of range by 1e-7 is not shown as its bound.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fmt_double.h"
#include "base/rng.h"
#include "train/run_config.h"
#include "helpers.h"

static void shortest(double v, const char *want) {
    char buf[GM_FMT_DOUBLE_LEN];
    cr_expect_str_eq(gm_fmt_double(v, buf), want, "%.17g", v);
}

Test(fmt_double, fewest_digits_that_round_trip) {
    shortest(0.05, "0.05");
    shortest(0.1 + 0.2, "0.30000000000000004");
    shortest(1e-10, "1e-10");
    shortest(15, "15");
    shortest(-2.5, "-2.5");
    shortest(1.1920928955078125e-07, "1.1920928955078125e-07");
    shortest(1e300 * 10, "1e+301");
    shortest(DBL_MIN / 4, "5.562684646268003e-309");  // as Python's repr
    shortest(INFINITY, "inf");
    // Whole numbers stay whole where %g would switch to an exponent ("300 s", not "3e+02 s").
    shortest(300, "300");
    shortest(1024, "1024");
    shortest(1e20, "1e+20");
    // Any double reads back exactly.
    for (uint32_t i = 0; i < 20000; i++) {
        uint64_t bits = (uint64_t)gm_rng_u32(5, 1, 2 * i) << 32 | gm_rng_u32(5, 1, 2 * i + 1);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) continue;
        char buf[GM_FMT_DOUBLE_LEN];
        gm_fmt_double(v, buf);
        cr_assert_eq(strtod(buf, NULL), v, "%s does not read back as %.17g", buf, v);
    }
}

// The places that print flag values: an out-of-range flag, the schedule fractions, and the
// differences between two configurations (a checkpoint's and this run's).
Test(fmt_double, flag_values_in_messages_are_shortest) {
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "muon-v2", "tiny"), 0, "%s", gm_error());
    cr_assert_eq(gm_run_config_set(&rc, "adam_beta1", "1.0000001"), -1);
    cr_expect_str_eq(gm_error(), "--adam_beta1: 1.0000001 is out of range [0, 1]");
    cr_assert_eq(gm_run_config_set(&rc, "warmup_frac", "0.7"), 0);
    cr_assert_eq(gm_run_config_set(&rc, "warmdown_frac", "0.3000001"), 0);
    cr_assert_eq(gm_run_config_finish(&rc), -1);
    cr_expect_str_eq(gm_error(), "--warmup_frac/--warmdown_frac: 0.7 + 0.3000001 exceed 1");
    gm_run_config a, b;
    cr_assert_eq(gm_run_config_preset(&a, "muon-v2", "tiny"), 0);
    cr_assert_eq(gm_run_config_preset(&b, "muon-v2", "tiny"), 0);
    cr_assert_eq(gm_run_config_set(&a, "lr_matrix", "0.05"), 0);
    cr_assert_eq(gm_run_config_set(&b, "lr_matrix", "0.06"), 0);
    char *ja = gm_run_config_json(&a), *jb = gm_run_config_json(&b), diff[512];
    gm_run_config_diff(ja, jb, diff, sizeof diff);
    cr_expect_str_eq(diff, "lr_matrix (0.05 -> 0.06)");
    // A checkpoint of a build that wrote 17 digits holds the same configuration.
    gm_run_config_diff("{\"lr_matrix\":0.050000000000000003,\"out_dir\":\"0.05\"}", "{\"lr_matrix\":0.05,\"out_dir\":\"0.050\"}",
                       diff, sizeof diff);
    cr_expect_str_eq(diff, "out_dir (\"0.05\" -> \"0.050\")");
    // And one that differs shows both numbers as this run prints them.
    gm_run_config_diff("{\"lr_matrix\":0.050000000000000003}", "{\"lr_matrix\":0.06}", diff, sizeof diff);
    cr_expect_str_eq(diff, "lr_matrix (0.05 -> 0.06)");
    free(ja), free(jb);
}
