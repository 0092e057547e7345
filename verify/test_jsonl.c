// JSON-lines log: one valid object per line, strings escaped, numbers round-trip, NaN -> null; a
// record that cannot be written is an error and leaves no partial line.
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/error.h"
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

// A record that cannot be written is an error naming the file and the reason (a full disk once
// lost records silently and the run still said "done").
Test(jsonl, a_failed_write_is_an_error) {
    gm_jsonl l;
    cr_assert_eq(gm_jsonl_open(&l, "/dev/full", "w"), 0, "%s", gm_error());
    gm_jsonl_begin(&l);
    gm_jsonl_int(&l, "step", 1);
    cr_assert_eq(gm_jsonl_end(&l), -1, "a write to a full device succeeded");
    cr_assert_str_eq(gm_error(), "/dev/full: cannot write the log: No space left on device");
    gm_jsonl_close(&l);
}

// Past the file size limit (a disk filling up does the same), the log keeps only whole records:
// the part of the record that did fit is cut off again.
Test(jsonl, a_record_cut_short_is_removed) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG instead of killing the process
    struct rlimit lim = {1000, 1000};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    gm_jsonl l;
    cr_assert_eq(gm_jsonl_open(&l, path, "w"), 0, "%s", gm_error());
    int written = 0, rc = 0;
    while (rc == 0 && written < 100) {
        gm_jsonl_begin(&l);
        gm_jsonl_int(&l, "step", written);
        gm_jsonl_str(&l, "pad", "0123456789012345678901234567890123456789012345678901234567890123456789");
        if ((rc = gm_jsonl_end(&l)) == 0) written++;
    }
    gm_jsonl_close(&l);
    cr_assert_eq(rc, -1, "1000 bytes held %d records of ~100 bytes", written);
    cr_assert(strstr(gm_error(), "log.jsonl: cannot write the log: File too large"), "%s", gm_error());
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0, "%s", gm_error());
    cr_assert_eq(th_count_lines(data), written);
    cr_assert(len > 0 && data[len - 1] == '\n', "the log ends inside a record: ...%s", data + (len > 40 ? len - 40 : 0));
    free(data);
    th_rmtree(dir);
    free(dir);
}
