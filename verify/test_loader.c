// The rank-strided loader: W ranks x B see exactly the tokens of 1 rank x W*B, batches wrap to
// the next shard, positions save and restore, and bad shapes are refused.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/loader.h"
#include "helpers.h"

// Shards whose token at global position p is p mod 50000, so any batch tells where it came from.
static char *make_shards(int nshards, const size_t *sizes) {
    char *dir = th_tmpdir();
    size_t p = 0;
    for (int s = 0; s < nshards; s++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/train_%06d.bin", dir, s);
        uint16_t *tok = malloc(sizes[s] * sizeof *tok);
        for (size_t i = 0; i < sizes[s]; i++) tok[i] = (uint16_t)((p + i) % 50000);
        p += sizes[s];
        cr_assert_eq(gm_shard_write(path, tok, sizes[s]), 0, "%s", gm_error());
        free(tok);
    }
    return dir;
}

static void pattern(char *buf, size_t n, const char *dir) { snprintf(buf, n, "%s/train_*.bin", dir); }

Test(loader, ranks_partition_the_single_process_batch) {
    const size_t sizes[] = {5000, 3001, 4000};
    char *dir = make_shards(3, sizes), pat[4200];
    pattern(pat, sizeof pat, dir);
    enum { B = 3, T = 17 };
    for (int W = 1; W <= 4; W++) {
        gm_loader one, ranks[4];
        cr_assert_eq(gm_loader_open(&one, pat, W * B, T, 0, 1, 50000), 0, "%s", gm_error());
        for (int r = 0; r < W; r++) cr_assert_eq(gm_loader_open(&ranks[r], pat, B, T, r, W, 50000), 0, "%s", gm_error());
        int32_t x1[4 * B * T], y1[4 * B * T], x[B * T], y[B * T];
        for (int step = 0; step < 200; step++) {  // long enough to wrap every shard several times
            gm_loader_next(&one, x1, y1);
            for (int r = 0; r < W; r++) {
                gm_loader_next(&ranks[r], x, y);
                cr_assert_arr_eq(x, x1 + r * B * T, sizeof x, "W=%d step %d rank %d inputs", W, step, r);
                cr_assert_arr_eq(y, y1 + r * B * T, sizeof y, "W=%d step %d rank %d targets", W, step, r);
            }
            for (int i = 0; i < W * B * T; i++) cr_assert_eq((y1[i] - x1[i] + 50000) % 50000, 1, "targets are inputs shifted by one");
        }
        gm_loader_close(&one);
        for (int r = 0; r < W; r++) gm_loader_close(&ranks[r]);
    }
    th_rmtree(dir);
    free(dir);
}

Test(loader, wraps_to_next_shard_and_back_to_first) {
    const size_t sizes[] = {1000, 700};
    char *dir = make_shards(2, sizes), pat[4200];
    pattern(pat, sizeof pat, dir);
    gm_loader ld;
    cr_assert_eq(gm_loader_open(&ld, pat, 2, 100, 0, 1, 0), 0, "%s", gm_error());
    int32_t x[200], y[200];
    // Shard 0 (1000 tokens) fits 4 steps of 200 (+1); shard 1 (700) fits 3; then shard 0 again.
    int expect_start[] = {0, 200, 400, 600, 1000, 1200, 1400, 0};
    for (int s = 0; s < 8; s++) {
        gm_loader_next(&ld, x, y);
        cr_assert_eq(x[0], expect_start[s], "step %d starts at token %d", s, x[0]);
    }
    gm_loader_close(&ld);
    th_rmtree(dir);
    free(dir);
}

Test(loader, state_round_trip_resumes_exactly) {
    const size_t sizes[] = {1000, 900};
    char *dir = make_shards(2, sizes), pat[4200];
    pattern(pat, sizeof pat, dir);
    gm_loader a, b;
    cr_assert_eq(gm_loader_open(&a, pat, 2, 50, 1, 2, 0), 0);
    cr_assert_eq(gm_loader_open(&b, pat, 2, 50, 1, 2, 0), 0);
    int32_t xa[100], ya[100], xb[100], yb[100];
    for (int s = 0; s < 7; s++) gm_loader_next(&a, xa, ya);
    cr_assert_eq(gm_loader_set_state(&b, gm_loader_get_state(&a)), 0, "%s", gm_error());
    for (int s = 0; s < 20; s++) {
        gm_loader_next(&a, xa, ya);
        gm_loader_next(&b, xb, yb);
        cr_assert_arr_eq(xa, xb, sizeof xa);
    }
    gm_loader_state bad = {5, 0};
    cr_assert_neq(gm_loader_set_state(&b, bad), 0);
    cr_assert(strstr(gm_error(), "does not fit"), "%s", gm_error());
    gm_loader_close(&a);
    gm_loader_close(&b);
    th_rmtree(dir);
    free(dir);
}

Test(loader, refuses_bad_configurations) {
    const size_t sizes[] = {1000};
    char *dir = make_shards(1, sizes), pat[4200], nomatch[4200];
    pattern(pat, sizeof pat, dir);
    gm_loader ld;
    cr_assert_neq(gm_loader_open(&ld, pat, 4, 250, 0, 1, 0), 0, "1000 tokens cannot feed a 1000+1 step");
    cr_assert(strstr(gm_error(), "fewer than one step"), "%s", gm_error());
    cr_assert_neq(gm_loader_open(&ld, pat, 2, 10, 2, 2, 0), 0);
    cr_assert(strstr(gm_error(), "rank 2 out of range for world size 2"), "%s", gm_error());
    snprintf(nomatch, sizeof nomatch, "%s/val_*.bin", dir);
    cr_assert_neq(gm_loader_open(&ld, nomatch, 2, 10, 0, 1, 0), 0);
    cr_assert(strstr(gm_error(), "no shard matches"), "%s", gm_error());
    cr_assert_neq(gm_loader_open(&ld, pat, 2, 10, 0, 1, 999), 0, "tokens up to 999 exceed vocab 999");
    cr_assert(strstr(gm_error(), ">= vocab size 999"), "%s", gm_error());
    th_rmtree(dir);
    free(dir);
}

Test(loader, validation_token_count_is_world_size_independent) {
    int steps;
    cr_assert_eq(gm_val_steps(10485760, 64, 1024, 8, &steps), 0);
    cr_assert_eq(steps, 20);
    cr_assert_eq(gm_val_steps(10485760, 8, 1024, 1, &steps), 0);
    cr_assert_eq(steps, 1280);
    cr_assert_neq(gm_val_steps(10000, 4, 64, 3, &steps), 0, "a world size that does not divide the count");
    cr_assert(strstr(gm_error(), "val_tokens 10000 is not a positive multiple of world*B*T = 3*4*64"), "%s", gm_error());
}
