// The tensor-core attention's kernel bodies executed on the CPU: verify/emu/attn_emu (a host
// emulation of the CUDA execution model and of mma.sync, ldmatrix, cp.async, wgmma and TMA,
// compiled by g++ with CUDA's headers; verify/emu/emu.h) runs the mma.sync forward with 16 and 32 query rows
// per warp, the wgmma forward, the mma and wgmma backwards and the one-pass backward on two masks
// (head_dim 64 and 128, windows of blocks that divide no tile, documents) and on keys growing along
// T (a row's maximum moving past the forward's rescale slack after its first tile), each against
// the CPU backend's dense reference: every output within 2e-2 of the reference's largest value (a
// few bf16 roundings; a wrong fragment layout, tile range or mask gives errors of order one), the
// 32-row and the wgmma forward bitwise the 16-row one, the wgmma backward the mma one (the same
// operations; in the emulation a wgmma sums as mma.sync does) and the one-pass backward's dk, dv
// the wgmma one's, no register of a wgmma in flight written and no block of the one-pass backward
// waiting for a part of dq that a later block adds (the emulation stops the program at either).
// That the emulation reads the instructions as the hardware does was checked by running the kernels
// that had passed on an H100 and an H200 under it, and the wgmma kernels, written against it, then
// passed on an H200 (reports/gpu-sim/README.md). Built where nvcc is found, in the release tree
// only (the sanitizer suite, whose GM_TESTPROG holds no attn_emu, skips it).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

#define REQUIRE_ATTN_EMU(prog)                                                                                \
    do {                                                                                                      \
        if (access(prog, X_OK))                                                                               \
            cr_skip_test("%s not built: it needs CUDA's headers (nvcc found) and is in the release tree only", \
                         prog);                                                                               \
    } while (0)

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

// attn_emu with the environment `env` (a shell assignment, or "") on `args` (one case, or "": the
// default ones): each of its `cases` cases passes, with the forms bitwise alike (the persistent
// forward and the pingpong one on one block in every case).
static void expect_cases_pass(const char *env, const char *args, int cases) {
    const char *prog = th_testprog_path("attn_emu");
    REQUIRE_ATTN_EMU(prog);
    char cmd[4300], *out, *err;
    snprintf(cmd, sizeof cmd, "%s '%s' %s", env, prog, args);
    const int rc = th_run(cmd, &out, &err);
    cr_expect_eq(rc, 0, "%s: exit %d\n%s%s", cmd, rc, out, err);
    cr_expect_eq(count(out, "  PASS"), cases, "%s: not %d passing case(s):\n%s", cmd, cases, out);
    static const char *const alike[] = {
        "mma32  out, lse bitwise the 16-row forward's",
        "wgmma  out, lse bitwise the 16-row forward's",
        "wgmma-persist 1  out, lse bitwise the 16-row forward's",
        "wgmma-pingpong  out, lse bitwise the 16-row forward's",
        "wgmma-pingpong 1  out, lse bitwise the 16-row forward's",
        "wgmma  dq, dk, dv bitwise the mma backward's",
        "1pass  dk, dv bitwise the wgmma backward's"};
    for (size_t i = 0; i < sizeof alike / sizeof alike[0]; i++)
        cr_expect_eq(count(out, alike[i]), cases, "%s: not %d times \"%s\":\n%s", cmd, cases, alike[i], out);
    cr_expect(strstr(out, "\n0 failed\n") != NULL, "%s:\n%s", cmd, out);
    free(out), free(err);
}

Test(attn_emulated, tensor_core_kernels_match_the_reference, .timeout = 300) { expect_cases_pass("", "", 3); }

// The same with every copy (cp.async, TMA) landing when issued (GM_EMU_COPIES=eager) rather than
// at its wait: the earliest moment instead of the latest, so a ring that copies into a stage a
// warp still reads gets other numbers. A dk/dv ring of 2 stages copying two tiles ahead passes the
// default run and fails this one (relative error 3.5 to 1700; tried by hand). Then a causal case
// long enough for every ring to come round (T 450, head_dim 64: up to 8 key and query tiles a
// block, the rings having 3 or 4 stages), with the second warpgroup waiting 1 ms longer at each
// wgmma wait (GM_EMU_LAG=1), so that the first, which issues the TMA copies, runs ahead as far as
// the stages' releases let it: the wgmma forward giving a V stage back before its product with it
// has completed (tried by hand: 3 runs of 3) passes the default cases and fails this one. And one
// at head_dim 128 (T 320: up to 5 key tiles an item), whose wgmma forward has a producer warp of
// its own, copying as far ahead as the releases let it: a producer not waiting for a V stage's
// release (tried by hand) passes the default cases with the copies landing at their waits, and the
// head_dim 64 case; landing at issue the default cases fail it in the persistent forward only,
// this case in the one-item-a-block form too.
Test(attn_emulated, copies_landing_at_issue_change_nothing, .timeout = 300) {
    expect_cases_pass("GM_EMU_COPIES=eager", "", 3);
    expect_cases_pass("GM_EMU_COPIES=eager GM_EMU_LAG=1", "1 450 1 64 128 0 0", 1);
    expect_cases_pass("GM_EMU_COPIES=eager GM_EMU_LAG=1", "1 320 1 128 128 0 0", 1);
}

// The Hopper parts one at a time (attn_emu parts: attention_mma_parts.cuh's parts_body, which
// gm_cuda_attn_wgmma_parts runs on a GPU): each of its twelve lines ok, and the check itself can
// fail (wgmma reading without the swizzle: the three wgmma parts wrong at both head dims, the three
// copies still right).
Test(attn_emulated, hopper_parts_one_at_a_time, .timeout = 120) {
    const char *prog = th_testprog_path("attn_emu");
    REQUIRE_ATTN_EMU(prog);
    char cmd[4300], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' parts", prog);
    int rc = th_run(cmd, &out, &err);
    cr_expect_eq(rc, 0, "attn_emu parts: exit %d\n%s%s", rc, out, err);
    cr_expect_eq(count(out, ": ok\n"), 12, "attn_emu parts: not twelve parts ok:\n%s", out);
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "GM_EMU_FAULT=wgmma_swizzle '%s' parts", prog);
    rc = th_run(cmd, &out, &err);
    cr_expect_eq(rc, 1, "GM_EMU_FAULT=wgmma_swizzle attn_emu parts: exit %d\n%s%s", rc, out, err);
    cr_expect(count(out, ": ok\n") == 6 && strstr(out, "\n6 failed\n") != NULL,
              "GM_EMU_FAULT=wgmma_swizzle attn_emu parts:\n%s", out);
    free(out), free(err);
}

// The checks can fail: with mma.sync's A fragment read wrongly, or wgmma's descriptors, or wgmma
// reading the tiles without the swizzle their copies wrote, a small case fails (the outputs land
// far from the reference); with the tiles off the swizzle's 1024-byte boundary, the emulation
// stops at the first TMA copy, naming it; with a TMA barrier waited on for the wrong phase, it
// stops at the wait a GPU would hang in; with an accumulator of a wgmma in flight
// written, the emulation stops at the wait, naming the thread; with the one-pass backward's blocks
// taking the key blocks lowest first, the first block waiting for a part of dq not yet added stops
// it, naming the semaphore.
Test(attn_emulated, a_wrong_instruction_fails, .timeout = 120) {
    const char *prog = th_testprog_path("attn_emu");
    REQUIRE_ATTN_EMU(prog);
    const char *const faults[3] = {"mma_a", "wgmma_desc", "wgmma_swizzle"};
    for (int f = 0; f < 3; f++) {
        char cmd[4300], *out, *err;
        snprintf(cmd, sizeof cmd, "GM_EMU_FAULT=%s '%s' 1 70 1 64 16 3 0", faults[f], prog);
        const int rc = th_run(cmd, &out, &err);
        cr_expect_eq(rc, 1, "GM_EMU_FAULT=%s: exit %d\n%s%s", faults[f], rc, out, err);
        cr_expect(strstr(out, "  FAIL") != NULL && strstr(out, "\n1 failed\n") != NULL, "GM_EMU_FAULT=%s:\n%s",
                  faults[f], out);
        free(out), free(err);
    }
    // Faults the emulation stops at, with the line it says why on (a case of its own where needed).
    static const struct {
        const char *env, *args, *says;
    } stops[] = {
        {"GM_EMU_FAULT=wgmma_write", "1 70 1 64 16 3 0", "thread 5 wrote the accumulators of a wgmma in flight"},
        {"GM_EMU_FAULT=swizzle_base", "1 70 1 64 16 3 0", "copies a box to shared byte 128, off the swizzle's 1024"},
        {"GM_EMU_FAULT=tma_parity GM_EMU_HANG_S=2", "1 70 1 64 16 3 0", "which nothing completed in 2 s"},
        {"GM_EMU_FAULT=sum_order", "1 300 1 64 16 3 0", "for rank 1, which reads 0 and cannot change"},
        {"GM_EMU_FAULT=named_arrive GM_EMU_HANG_S=2", "1 70 1 64 16 3 0",
         "which nothing completed in 2 s (255 of 256 threads arrived): a GPU would hang"},
    };
    for (size_t f = 0; f < sizeof stops / sizeof stops[0]; f++) {
        char cmd[4300], *out, *err;
        snprintf(cmd, sizeof cmd, "%s '%s' %s", stops[f].env, prog, stops[f].args);
        const int rc = th_run(cmd, &out, &err);
        cr_expect_neq(rc, 0, "%s: exit 0\n%s%s", stops[f].env, out, err);
        cr_expect(strstr(err, stops[f].says) != NULL, "%s: not \"%s\":\n%s%s", stops[f].env, stops[f].says, out, err);
        free(out), free(err);
    }
}
