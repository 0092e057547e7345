// The matrix file format (base/matfile.h): round trip, the byte layout, and each fault refused
// with one line naming the file.
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "base/matfile.h"
#include "helpers.h"

Test(matfile, round_trip_and_layout) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/m.bin", dir);
    float data[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
    cr_assert_eq(gm_matfile_write(path, "blocks.0.mlp.c_fc grad", data, 2, 3), 0, "%s", gm_error());
    char *raw;
    size_t len;
    cr_assert_eq(gm_read_all(path, &raw, &len), 0);
    cr_expect_eq(len, 128 + 6 * 4);
    cr_expect_eq(memcmp(raw, "GMMATRIX", 8), 0);
    const unsigned char *b = (const unsigned char *)raw;
    cr_expect(b[8] == 1 && b[12] == 1 && b[16] == 2 && b[20] == 3, "version, dtype, rows, cols little-endian");
    cr_expect_str_eq(raw + 24, "blocks.0.mlp.c_fc grad");
    float first;
    memcpy(&first, raw + 128, 4);
    cr_expect_eq(first, 1.5f);
    free(raw);
    gm_matrix m;
    cr_assert_eq(gm_matfile_read(path, &m), 0, "%s", gm_error());
    cr_expect(m.rows == 2 && m.cols == 3);
    cr_expect_str_eq(m.name, "blocks.0.mlp.c_fc grad");
    cr_expect_eq(memcmp(m.data, data, sizeof data), 0);
    gm_matrix_free(&m);
    th_rmtree(dir);
}

// Write a good file, let `corrupt` damage its bytes, and expect `fault` in the message.
static void expect_fault(void (*corrupt)(unsigned char *b, size_t *len), const char *fault) {
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/bad.bin", dir);
    float data[4] = {1, 2, 3, 4};
    cr_assert_eq(gm_matfile_write(path, "x", data, 2, 2), 0);
    char *raw;
    size_t len;
    cr_assert_eq(gm_read_all(path, &raw, &len), 0);
    corrupt((unsigned char *)raw, &len);
    cr_assert_eq(gm_write_file_atomic(path, raw, len), 0);
    free(raw);
    gm_matrix m;
    cr_expect_eq(gm_matfile_read(path, &m), -1, "a bad file was accepted (%s)", fault);
    cr_expect(strstr(gm_error(), path) && strstr(gm_error(), fault), "expected '%s' naming the file in: %s", fault,
              gm_error());
    cr_expect_null(strchr(gm_error(), '\n'));
    th_rmtree(dir);
}

static void bad_magic(unsigned char *b, size_t *len) { (void)len, b[0] = 'X'; }
static void bad_version(unsigned char *b, size_t *len) { (void)len, b[8] = 2; }
static void bad_dtype(unsigned char *b, size_t *len) { (void)len, b[12] = 2; }
static void zero_rows(unsigned char *b, size_t *len) { (void)len, b[16] = 0; }
static void truncated(unsigned char *b, size_t *len) { (void)b, *len -= 1; }
static void short_header(unsigned char *b, size_t *len) { (void)b, *len = 100; }
static void unterminated(unsigned char *b, size_t *len) { (void)len, memset(b + 24, 'a', 104); }
static void nan_entry(unsigned char *b, size_t *len) {
    (void)len;
    uint32_t qnan = 0x7fc00000u;
    memcpy(b + 128 + 4 * 3, &qnan, 4);
}

Test(matfile, faults_are_refused_naming_the_file) {
    expect_fault(bad_magic, "bad magic");
    expect_fault(bad_version, "unsupported version 2");
    expect_fault(bad_dtype, "unsupported dtype 2");
    expect_fault(zero_rows, "bad shape 0 x 2");
    expect_fault(truncated, "does not match 2 x 2");
    expect_fault(short_header, "truncated header");
    expect_fault(unterminated, "not NUL-terminated");
    expect_fault(nan_entry, "non-finite entry at (1, 1)");
    gm_matrix m;
    cr_expect_eq(gm_matfile_read("/nonexistent/m.bin", &m), -1);
    cr_expect(strstr(gm_error(), "/nonexistent/m.bin"), "%s", gm_error());
}
