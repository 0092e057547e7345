// The backend seam: the whole training step is a backend program. The guarded backend (the CPU
// kernels, every allocation PROT_NONE between its own calls) trains every preset with gradient
// accumulation bitwise like the CPU backend, in one process, resumed from a checkpoint, and under
// mpirun with 2 ranks (the data channel staged through host memory); a host dereference of its
// memory crashes, so any left in the trainer, the optimizers, checkpoints or the communicator would
// fail these tests.
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/guard/guard.h"
#include "base/error.h"
#include "train/checkpoint.h"
#include "train/run_config.h"
#include "train/trainer.h"
#include "helpers.h"

enum { STEPS = 4 };

// Shrunk presets (helpers.h) with their switches still on: two value-embedding tables, a layer
// without attention, a window that grows over the run.
static const char *const PRESETS[][2] = {
    {"adamw", ""},
    {"muon-v1", ""},
    {"muon-v2", ""},
    {"untied", ""},
    {"value-embed", "--n_value_embeds=2 --window_start_tokens=16 --window_end_tokens=64"},
    {"softcap", "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64"},
    {"normuon", "--n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16 --window_end_tokens=64"},
};
enum { NPRESETS = sizeof PRESETS / sizeof PRESETS[0] };

typedef struct {
    double loss[STEPS];
    gm_real *params;
    size_t n;
    double val;
} run_result;

static run_result train(const gm_backend *be, const char *dir, int i, const char *extra) {
    gm_run_config rc;
    char flags[4096], all[1024];
    snprintf(all, sizeof all, "--steps=%d --val_every=2 --grad_accum=2 --comm=single %s %s", STEPS, PRESETS[i][1],
             extra);
    cr_assert_eq(gm_run_config_preset(&rc, PRESETS[i][0], "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, all));
    cr_assert_eq(gm_run_config_finish(&rc), 0, "%s", gm_error());
    run_result r = {{0}, NULL, 0, 0};
    gm_train_result res = {0};
    res.train_loss = r.loss;
    res.params_len = r.n = gm_train_params_len(&rc, gm_backend_cpu());
    res.params = r.params = malloc(r.n * sizeof(gm_real));
    cr_assert_eq(gm_train(&rc, NULL, be, 0, &res), 0, "%s on %s: %s", PRESETS[i][0], be->name, gm_error());
    r.val = res.final_val_loss;
    return r;
}

static void same(const run_result *a, const run_result *b, const char *what, int from_step) {
    for (int s = from_step; s < STEPS; s++)
        cr_assert(memcmp(&a->loss[s], &b->loss[s], sizeof(double)) == 0, "%s: step %d loss %.17g vs %.17g", what, s,
                  a->loss[s], b->loss[s]);
    cr_assert(memcmp(&a->val, &b->val, sizeof(double)) == 0, "%s: final val loss %.17g vs %.17g", what, a->val, b->val);
    cr_assert_eq(a->n, b->n);
    cr_assert(memcmp(a->params, b->params, a->n * sizeof(gm_real)) == 0, "%s: final parameters differ", what);
}

Test(backend_seam, guarded_trains_every_preset_bitwise_like_cpu, .timeout = 600) {
    char *dir = th_tmpdir(), out[4200];
    th_make_train_data(dir);
    for (int i = 0; i < NPRESETS; i++) cr_assert_str_eq(PRESETS[i][0], gm_preset_names[i], "the table above misses a preset");
    cr_assert_null(gm_preset_names[NPRESETS], "the table above misses %s", gm_preset_names[NPRESETS]);
    for (int i = 0; i < NPRESETS; i++) {
        snprintf(out, sizeof out, "--out_dir=%s/cpu-%d", dir, i);
        run_result c = train(gm_backend_cpu(), dir, i, out);
        snprintf(out, sizeof out, "--out_dir=%s/guarded-%d", dir, i);
        run_result g = train(gm_backend_guarded(), dir, i, out);
        same(&c, &g, PRESETS[i][0], 0);
        free(c.params), free(g.params);
    }
    th_rmtree(dir);
    free(dir);
}

// Halted after 2 steps and resumed from the checkpoint: the same steps and parameters as one run,
// with every checkpoint section going through download and upload.
Test(backend_seam, guarded_resume_is_bitwise, .timeout = 300) {
    char *dir = th_tmpdir(), extra[4200];
    th_make_train_data(dir);
    const int i = 5;  // softcap: Adam and Muon states, every model switch
    snprintf(extra, sizeof extra, "--out_dir=%s/whole", dir);
    run_result whole = train(gm_backend_guarded(), dir, i, extra);
    snprintf(extra, sizeof extra, "--out_dir=%s/halted --halt_at=2", dir);
    run_result halted = train(gm_backend_guarded(), dir, i, extra);
    snprintf(extra, sizeof extra, "--out_dir=%s/resumed --resume=%s/halted/ckpt.bin", dir, dir);
    run_result resumed = train(gm_backend_guarded(), dir, i, extra);
    same(&whole, &resumed, "resumed vs uninterrupted", 2);
    free(whole.params), free(halted.params), free(resumed.params);
    th_rmtree(dir);
    free(dir);
}

// Two ranks under mpirun on both backends: the guarded one's gradient all-reduce and Muon
// all-gather go through download/upload; logs and final checkpoints must match byte for byte.
Test(backend_seam, guarded_under_mpirun_is_bitwise_like_cpu, .timeout = 600) {
    char *dir = th_tmpdir(), flags[4096], extra[4200], cmd[9000], path[4300];
    th_make_train_data(dir);
    const char *backends[2] = {"cpu", "guarded"};
    char *curves[2];
    const void *params[2];
    gm_ckpt ck[2];
    size_t bytes = 0;
    for (int b = 0; b < 2; b++) {
        snprintf(extra, sizeof extra, "--steps=%d --val_every=2 --grad_accum=2 --batch=2 --comm=mpi --comm_timeout=60 %s "
                 "--backend=%s --out_dir=%s/%s", STEPS, PRESETS[5][1], backends[b], dir, backends[b]);
        th_test_flags(flags, sizeof flags, dir, extra);
        snprintf(cmd, sizeof cmd, "%s -x OPENBLAS_NUM_THREADS=1 '%s' --preset=softcap --scale=tiny %s", th_mpirun(2),
                 th_bin_path("train"), flags);
        char *out, *err;
        cr_assert_eq(th_run(cmd, &out, &err), 0, "%s: %s", backends[b], err);
        cr_assert(strstr(out, "data channel staged"), "%s: %s", backends[b], out);
        free(out), free(err);
        snprintf(path, sizeof path, "%s/%s/log.jsonl", dir, backends[b]);
        curves[b] = th_log_curve(path, 0);
        snprintf(path, sizeof path, "%s/%s/ckpt.bin", dir, backends[b]);
        cr_assert_eq(gm_ckpt_read(&ck[b], path), 0, "%s", gm_error());
        params[b] = gm_ckpt_get_any(&ck[b], "params", &bytes);
        cr_assert_not_null(params[b], "%s", gm_error());
    }
    cr_assert_str_eq(curves[0], curves[1], "loss curves differ between cpu and guarded under mpirun");
    size_t bytes1;
    cr_assert_not_null(gm_ckpt_get_any(&ck[1], "params", &bytes1));
    cr_assert_eq(bytes, bytes1);
    cr_assert(memcmp(params[0], params[1], bytes) == 0, "final parameters differ between cpu and guarded");
    for (int b = 0; b < 2; b++) free(curves[b]), gm_ckpt_close(&ck[b]);
    th_rmtree(dir);
    free(dir);
}

// The guard works: reading its memory from host code outside a backend call is a SIGSEGV, and
// upload/download reach the same memory.
Test(backend_seam, host_dereference_of_guarded_memory_crashes, .signal = SIGSEGV) {
    const gm_backend *be = gm_backend_guarded();
    gm_real *p = be->alloc(be, 16 * sizeof(gm_real)), h[16], back[16];
    for (int i = 0; i < 16; i++) h[i] = (gm_real)i;
    be->upload(be, p, h, sizeof h);
    be->download(be, back, p, sizeof back);
    if (memcmp(h, back, sizeof h) != 0) exit(1);  // not the expected signal: the test fails
    signal(SIGSEGV, SIG_DFL);  // under AddressSanitizer its handler would turn the fault into an abort
    volatile gm_real x = p[3];
    (void)x;
}
