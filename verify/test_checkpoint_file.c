// Checkpoint container: round trip, and every corruption (truncation, flipped byte, bad magic,
// wrong section size) refused with a message naming the file.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "train/checkpoint.h"
#include "helpers.h"

static char *write_sample(char *path, size_t n) {
    char *dir = th_tmpdir();
    snprintf(path, n, "%s/ck.bin", dir);
    static float params[1001];
    for (int i = 0; i < 1001; i++) params[i] = (float)i * 0.5f;
    long long step = 42;
    gm_ckpt_section s[] = {{"config", "{\"preset\":\"softcap\"}", 20}, {"params", params, sizeof params}, {"step", &step, sizeof step}};
    cr_assert_eq(gm_ckpt_write(path, s, 3), 0, "%s", gm_error());
    return dir;
}

Test(checkpoint_file, round_trip) {
    char path[4200];
    char *dir = write_sample(path, sizeof path);
    gm_ckpt c;
    cr_assert_eq(gm_ckpt_read(&c, path), 0, "%s", gm_error());
    const float *p = gm_ckpt_get(&c, "params", 1001 * sizeof(float));
    cr_assert_not_null(p, "%s", gm_error());
    cr_assert_eq(p[1000], 500.0f);
    const long long *step = gm_ckpt_get(&c, "step", sizeof(long long));
    cr_assert_eq(*step, 42);
    cr_assert_null(gm_ckpt_get(&c, "params", 10));
    cr_assert(strstr(gm_error(), "section 'params' holds 4004 bytes, this run needs 10"), "%s", gm_error());
    cr_assert_null(gm_ckpt_get(&c, "adam.m", 4));
    cr_assert(strstr(gm_error(), "has no section 'adam.m'"), "%s", gm_error());
    gm_ckpt_close(&c);
    th_rmtree(dir);
    free(dir);
}

// Damage the file with `how`, then reading must fail with `fault` in the message.
static void expect_refused(void (*how)(char *, size_t *), const char *fault) {
    char path[4200];
    char *dir = write_sample(path, sizeof path);
    char *data;
    size_t len;
    cr_assert_eq(gm_read_all(path, &data, &len), 0);
    how(data, &len);
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
    free(data);
    gm_ckpt c;
    cr_assert_neq(gm_ckpt_read(&c, path), 0, "damaged checkpoint accepted");
    cr_assert(strstr(gm_error(), path) && strstr(gm_error(), fault), "expected '%s' in: %s", fault, gm_error());
    th_rmtree(dir);
    free(dir);
}

static void truncate_half(char *d, size_t *len) { (void)d, *len /= 2; }
static void flip_param_byte(char *d, size_t *len) { d[*len / 2] ^= 0x10; }
static void bad_magic(char *d, size_t *len) { (void)len, d[0] = 'X'; }
static void bad_version(char *d, size_t *len) { (void)len, d[8] = 9; }
static void empty(char *d, size_t *len) { (void)d, *len = 0; }

Test(checkpoint_file, truncated) { expect_refused(truncate_half, "truncated"); }
Test(checkpoint_file, flipped_byte) { expect_refused(flip_param_byte, "section 'params' fails its checksum"); }
Test(checkpoint_file, bad_magic) { expect_refused(bad_magic, "not a checkpoint"); }
Test(checkpoint_file, bad_version) { expect_refused(bad_version, "unsupported checkpoint version 9"); }
Test(checkpoint_file, empty_file) { expect_refused(empty, "not a checkpoint"); }
