// The memory plan is what is allocated: a counting backend (the CPU backend whose alloc/free keep
// a ledger of live bytes) runs the model and the trainer, and the bytes it sees equal the plan
// category by category: the model's at every stage of a step (parameters; + activations after an
// evaluation forward; + gradients after a training step), the optimizers' for every rank of a
// sharded Muon, and the trainer's peak over a whole run. And the record's per-GPU shape fits.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"
#include "dist/comm.h"
#include "helpers.h"
#include "model/model.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "train/run_config.h"
#include "train/trainer.h"

// ---- the counting backend ----

enum { MAX_LIVE = 4096 };
static struct {
    void *p;
    size_t bytes;
} ledger[MAX_LIVE];
static int nlive;
static size_t live, peak;

static void *count_alloc(const gm_backend *be, size_t bytes) {
    (void)be;
    const gm_backend *cpu = gm_backend_cpu();
    void *p = cpu->alloc(cpu, bytes);
    if (!p) return NULL;
    cr_assert_lt(nlive, MAX_LIVE, "counting backend: ledger full");
    ledger[nlive].p = p, ledger[nlive++].bytes = bytes;
    live += bytes;
    if (live > peak) peak = live;
    return p;
}

static void count_free(const gm_backend *be, void *p) {
    (void)be;
    if (!p) return;
    int i = 0;
    while (i < nlive && ledger[i].p != p) i++;
    cr_assert_lt(i, nlive, "counting backend: freeing %p, which it did not allocate", p);
    live -= ledger[i].bytes;
    ledger[i] = ledger[--nlive];
    gm_backend_cpu()->free(gm_backend_cpu(), p);
}

static gm_backend counting(void) {
    gm_backend b = *gm_backend_cpu();
    b.name = "counting";
    b.alloc = count_alloc, b.free = count_free;
    nlive = 0, live = peak = 0;
    return b;
}

// ---- the model ----

static void check_model(const char *preset, const char *scale, int head_rows, int recompute) {
    gm_config cfg;
    cr_assert_eq(gm_preset_model(&cfg, preset, scale), 0, "%s", gm_error());
    const int B = cfg.batch, T = cfg.seq_len, N = B * T;
    gm_model_mem plan;
    cr_assert_eq(gm_model_plan(&cfg, B, T, head_rows, recompute, sizeof(gm_real), &plan), 0, "%s", gm_error());
    const size_t step = plan.acts + plan.scratch + plan.head + plan.inputs;
    gm_backend be = counting();
    gm_model m;
    cr_assert_eq(gm_model_create(&m, &cfg, &be), 0, "%s", gm_error());
    gm_model_set_head_rows(&m, head_rows);
    gm_model_set_recompute(&m, recompute);
    cr_expect_eq(live, plan.params, "%s/%s: %zu bytes after create, plan %zu", preset, scale, live, plan.params);
    cr_assert_eq(gm_model_init(&m, 3, GM_INIT_TEST), 0);
    int32_t *tok = malloc(sizeof(int32_t) * (N + 1));
    for (int i = 0; i <= N; i++) tok[i] = (int32_t)((i * 7919u + 13u) % (unsigned)cfg.vocab);
    cr_assert(!isnan(gm_model_forward(&m, tok, tok + 1, B, T)), "%s", gm_error());
    cr_expect_eq(live, plan.params + step, "%s/%s rows %d: %zu bytes after a forward, plan %zu", preset, scale,
                 head_rows, live, plan.params + step);
    cr_assert(!isnan(gm_model_forward_backward(&m, tok, tok + 1, B, T, 1.0)), "%s", gm_error());
    const size_t all = plan.params + plan.grads + step + plan.act_grads_layer + plan.act_grads_across;
    cr_expect_eq(live, all, "%s/%s rows %d: %zu bytes after a training step, plan %zu", preset, scale, head_rows, live,
                 all);
    cr_expect_eq(peak, all, "%s/%s: peak %zu bytes, plan %zu", preset, scale, peak, all);
    gm_model_free(&m);
    cr_expect_eq(live, 0, "%s/%s: %zu bytes left after free", preset, scale, live);
    free(tok);
}

Test(model_memory, plan_is_what_the_model_allocates) {
    for (const char *const *p = gm_preset_names; *p; p++) {
        check_model(*p, "test", GM_HEAD_ROWS, 1);
        check_model(*p, "test", 48, 1);  // 128 rows in chunks of 48, 48, 32
        check_model(*p, "test", 48, 0);  // the blocks' inputs kept, not recomputed
        check_model(*p, "tiny", GM_HEAD_ROWS, 1);
    }
}

// ---- the optimizers, every rank of a sharded Muon ----

Test(model_memory, optimizer_plan_is_what_they_allocate) {
    gm_config cfg;
    cr_assert_eq(gm_preset_model(&cfg, "softcap", "test"), 0);
    gm_table t;
    gm_param_index ix;
    cr_assert_eq(gm_params_build(&cfg, &t, &ix), 0);
    gm_opt_view *views = calloc((size_t)t.n, sizeof *views);
    int n = 0;
    for (int i = 0; i < t.n; i++)
        if (t.v[i].group == GM_GROUP_MATRIX)
            views[n++] = (gm_opt_view){t.v[i].name, t.v[i].offset, (int)t.v[i].shape[0], (int)t.v[i].shape[1]};
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "softcap", "test"), 0);
    cr_assert_eq(gm_run_config_finish(&rc), 0);
    // The preset's Muon, and with NorMuon's second moments (record #43).
    for (int normuon = 0; normuon <= 1; normuon++)
        for (int world = 1; world <= 3; world++)
            for (int rank = 0; rank < world; rank++) {
                gm_comm comm = {0};
                comm.rank = rank, comm.world = world;
                gm_muon_hparams hp = rc.muon;
                hp.normuon = normuon;
                gm_muon_mem plan;
                gm_muon_state_bytes(&hp, views, n, rank, world, &plan);
                gm_backend be = counting();
                gm_muon mu;
                cr_assert_eq(gm_muon_init(&mu, &be, &hp, views, n, &comm), 0, "%s", gm_error());
                const size_t want = plan.momentum + plan.update + plan.gather + plan.second;
                cr_expect_eq(live, want, "muon normuon=%d rank %d of %d: %zu bytes, plan %zu", normuon, rank, world, live, want);
                cr_expect_eq(plan.gather > 0, world > 1);
                cr_expect_eq(plan.second > 0, normuon);
                gm_muon_free(&mu);
            }
    gm_backend be = counting();
    gm_adam adam;
    cr_assert_eq(gm_adam_init(&adam, &be, &rc.adam, views, n), 0, "%s", gm_error());
    cr_expect_eq(live, gm_adam_state_bytes(views, n));
    gm_adam_free(&adam);
    free(views);
    gm_table_free(&t);
}

// ---- the trainer: the peak over a run is the plan's total ----

static void check_trainer(const char *preset, const char *extra) {
    char *dir = th_tmpdir(), flags[4096];
    th_make_train_data(dir);
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, preset, "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, th_test_flags(flags, sizeof flags, dir, extra));
    cr_assert_eq(gm_run_config_finish(&rc), 0, "%s", gm_error());
    gm_mem_plan plan;
    cr_assert_eq(gm_train_memory_plan(&rc, 1, 0, &plan), 0, "%s", gm_error());
    gm_backend be = counting();
    cr_assert_eq(gm_train(&rc, NULL, &be, 0, NULL), 0, "%s: %s", preset, gm_error());
    cr_expect_eq(peak, plan.total, "%s: peak %zu backend bytes over the run, plan %zu", preset, peak, plan.total);
    cr_expect_eq(live, 0, "%s: %zu bytes left after the run", preset, live);
    th_rmtree(dir);
    free(dir);
}

Test(model_memory, plan_is_what_training_allocates, .timeout = 300) {
    check_trainer("adamw", "--steps=2");
    check_trainer("muon-v2", "--steps=2");
    check_trainer("softcap", "--steps=2 --n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16");
    check_trainer("normuon", "--steps=2 --n_value_embeds=2 --skip_attn_mask=4 --window_start_tokens=16");  // + NorMuon's state
}

// ---- the record's per-GPU shape ----

Test(model_memory, full_scale_softcap_fits_the_budget) {
    for (const char *const *p = gm_preset_names; *p; p++) {
        gm_run_config rc;
        cr_assert_eq(gm_run_config_preset(&rc, *p, "full"), 0);
        cr_assert_eq(gm_run_config_finish(&rc), 0);
        gm_mem_plan plan;
        cr_assert_eq(gm_train_memory_plan(&rc, 1, 0, &plan), 0, "%s", gm_error());
        cr_log_info("%s full, B %d T %d: %.2f GB planned", *p, rc.model.batch, rc.model.seq_len, plan.total / 1e9);
        if (!strcmp(*p, "softcap") || !strcmp(*p, "normuon")) {  // normuon: softcap's model + NorMuon's state
            cr_assert(rc.model.batch == 1 && rc.model.seq_len == 65536, "%s full is not the record's shape", *p);
            cr_expect_lt(plan.total, GM_MEM_BUDGET_BYTES, "%s full: %.2f GB planned, budget %.0f GB", *p,
                         plan.total / 1e9, GM_MEM_BUDGET_BYTES / 1e9);
        }
    }
}
