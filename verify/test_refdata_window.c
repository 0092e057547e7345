// The PyTorch reference pins the sliding-window rule of the doc-masked presets (#16, #18, normuon): its
// tokens hold a document spanning more blocks than the window, so windows w - 1, w and w + 1 give
// different outputs on both sides, and our model matches PyTorch at each of the three windows and
// misses the reference of w under w - 1 and w + 1. A window rule off by one block fails here and
// in test_refdata.c.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "refdata_fixture.h"

#define BAR 1e-4
// Different windows must move the logits by far more than the bar that tells them apart.
#define APART (100 * BAR)

// Documents of one sequence: [start, end) from each EOT (or the row start) to the next.
static void check_documents(const th_refcase *rc, const char *preset) {
    int T = rc->cfg.seq_len, b = rc->cfg.attn_block, w = rc->window;
    int long_docs = 0, short_at_edge = 0;
    for (int row = 0; row < rc->cfg.batch; row++) {
        const int32_t *ids = rc->tok + (size_t)row * T;
        for (int s = 0; s < T;) {
            int e = s + 1;
            while (e < T && ids[e] != rc->cfg.eot) e++;
            // a query in the last block loses keys under w - 1, w and w + 1 alike
            if ((e - 1) / b - s / b >= w + 1) long_docs++;
            if (e - s < b && (s % b == 0 || s / b != (e - 1) / b) && e < T) short_at_edge++;
            s = e;
        }
    }
    cr_expect(long_docs > 0, "%s: no document spans more than %d blocks: the tokens leave the window untested", preset,
              w + 1);
    cr_expect(short_at_edge > 0, "%s: no document shorter than a block starts on or crosses a block edge", preset);
    cr_log_info("%s tokens: documents spanning more than %d blocks: %d; shorter than a block at a block edge: %d",
                preset, w + 1, long_docs, short_at_edge);
}

static void check_windows(const char *preset) {
    th_refcase rc;
    th_ref_open(&rc, preset, NULL, NULL);
    cr_assert_gt(rc.window, 1, "%s: the reference needs a window of at least 2 blocks to test w - 1", preset);
    check_documents(&rc, preset);
    size_t n = 1 + (size_t)rc.N * rc.Vp;
    for (int v = rc.window - 1; v <= rc.window + 1; v += 2) {
        char file[64];
        snprintf(file, sizeof file, "window_%d.bin", v);
        float *ref_v = th_ref_floats(preset, file, n);
        double torch_apart = th_rel_err(ref_v + 1, rc.ref + 1, n - 1);
        th_referr same = th_ref_compare(&rc, v, ref_v, 0), other = th_ref_compare(&rc, v, rc.ref, 0);
        cr_expect(torch_apart > APART, "%s: PyTorch's logits at windows %d and %d differ by only %.3g", preset, v,
                  rc.window, torch_apart);
        cr_expect(same.loss < BAR && same.logits < BAR, "%s: window %d: ours vs PyTorch's: loss %.3g, logits %.3g",
                  preset, v, same.loss, same.logits);
        cr_expect(other.logits > APART, "%s: ours at window %d matches PyTorch's at %d to %.3g", preset, v, rc.window,
                  other.logits);
        cr_log_info("%s window %d (reference %d): PyTorch %d vs %d %.2e; ours vs PyTorch at %d %.2e, at %d %.2e",
                    preset, v, rc.window, v, rc.window, torch_apart, v, same.logits, rc.window, other.logits);
        free(ref_v);
    }
    th_ref_close(&rc);
}

Test(refdata_window, value_embed) { check_windows("value-embed"); }
Test(refdata_window, softcap) { check_windows("softcap"); }
Test(refdata_window, normuon) { check_windows("normuon"); }
