// A short training run on --backend=cpu-bf16 (the CPU with bf16 matmul operands and bf16-rounded
// activations): it runs to the end, its validation loss falls, and the log's start record names the
// backend.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "helpers.h"

Test(bf16act_train, muon_v2_trains_on_cpu_bf16, .timeout = 240) {
    char *dir = th_tmpdir(), *out, *err, log[4200], *text;
    size_t len;
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--backend=cpu-bf16", &out, &err), 0, "%s", err);
    free(out), free(err);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    cr_assert_eq(gm_read_all(log, &text, &len), 0, "%s", gm_error());
    cr_expect(strstr(text, "\"event\":\"start\"") && strstr(text, "\"backend\":\"cpu-bf16\""),
              "the start record does not name cpu-bf16:\n%s", text);
    // the first and the last validation (steps 0 and 6 of th_test_flags)
    double first = 0, last = 0;
    int nval = 0;
    for (const char *p = strstr(text, "\"val_loss\":"); p; p = strstr(p + 1, "\"val_loss\":")) {
        last = strtod(p + strlen("\"val_loss\":"), NULL);
        if (!nval++) first = last;
    }
    cr_assert_geq(nval, 2, "%d validations in:\n%s", nval, text);
    cr_expect_lt(last, first - 0.1, "validation loss %g -> %g: it does not fall", first, last);
    free(text);
    th_rmtree(dir);
    free(dir);
}
