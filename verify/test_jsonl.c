// JSON-lines log: one valid object per line, strings escaped, numbers round-trip, NaN -> null.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "base/jsonl.h"
#include "helpers.h"

Test(jsonl, records_are_single_escaped_lines) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    gm_jsonl l;
    cr_assert_eq(gm_jsonl_open(&l, path, "w"), 0);
    gm_jsonl_begin(&l);
    gm_jsonl_str(&l, "code", "line1\n\"quoted\"\t\\ \x01");
    gm_jsonl_int(&l, "step", 12);
    gm_jsonl_num(&l, "loss", NAN);
    gm_jsonl_bool(&l, "ok", 1);
    gm_jsonl_raw(&l, "shape", "[2,3]");
    cr_assert_eq(gm_jsonl_end(&l), 0);
    gm_jsonl_begin(&l);
    gm_jsonl_num(&l, "x", 0.1);
    cr_assert_eq(gm_jsonl_end(&l), 0);
    gm_jsonl_close(&l);
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0);
    cr_assert_eq(th_count_lines(data), 2);
    cr_assert_str_eq(data,
                     "{\"code\":\"line1\\n\\\"quoted\\\"\\t\\\\ \\u0001\",\"step\":12,\"loss\":null,\"ok\":true,\"shape\":[2,3]}\n"
                     "{\"x\":0.10000000000000001}\n");
    free(data);
    th_rmtree(dir);
    free(dir);
}

Test(jsonl, doubles_round_trip_exactly) {
    gm_jsonl l;
    cr_assert_eq(gm_jsonl_open(&l, NULL, "w"), 0);
    double vals[] = {3.2760, 1e-300, -2.5e17, 1.0 / 3.0, 6.02214076e23};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        gm_jsonl_begin(&l);
        gm_jsonl_num(&l, "v", vals[i]);
        const char *t = gm_jsonl_text(&l);
        cr_assert_eq(strtod(strchr(t, ':') + 1, NULL), vals[i]);
        cr_assert_eq(gm_jsonl_end(&l), 0);
    }
    gm_jsonl_close(&l);
}
