#include "train/trainer.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cuda/device.h"
#include "backend/select.h"
#include "base/build_info.h"
#include "base/error.h"
#include "base/fmt_double.h"
#include "base/io.h"
#include "base/jsonl.h"
#include "base/matfile.h"
#include "base/short_list.h"
#include "base/timer.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "model/model.h"
#include "optim/schedule.h"
#include "train/checkpoint.h"
#include "train/hardware.h"
#include "train/host_memory.h"
#include "train/mem_plan.h"
#include "train/optimizers.h"
#include "train/progress.h"
#include "train/run_dir.h"
#include "train/signals.h"

enum { UNTIMED_STEPS = 10 };  // compilation/warm-up steps the records leave out of the timing

struct gm_trainer {
    const gm_run_config *rc;
    const gm_backend *be;
    gm_comm *comm, single;
    gm_model model;
    gm_loader train, val;
    int val_steps;
    gm_optimizers opt;
    gm_comm_span *spans;  // --grad_sync=reduce-scatter: which rank receives each gradient (NULL: all-reduce)
    int nspans;
    int32_t *x, *y;
    gm_jsonl log;
    char ckpt_path[600];
    char *config_core;  // config JSON without the run-control fields, with the world size (resume must match it)
    char *data_manifest;  // the shards read (data/manifest.h): resume must match it too
    char data_fingerprint[17];  // gm_data_fingerprint in hex, for the log's start record
    char ckpt_backend[sizeof ((gm_run_config *)0)->backend];  // --resume: the backend that wrote the checkpoint ("" : unknown)
    int verbose;
    gm_run_dir dir;     // rank 0: out_dir, locked for the whole run (fd -1 elsewhere)
    int step;           // the step being run, for the error record
};
typedef struct gm_trainer trainer;

static gm_dtype real_dtype(void) { return sizeof(gm_real) == sizeof(double) ? GM_DT_F64 : GM_DT_F32; }

// The configuration a checkpoint must match to be resumed: every field but the run-control ones,
// plus the world size, since W ranks of B sequences train on a global batch of W*B.
static char *config_core_json(const gm_run_config *rc, int world) {
    gm_run_config core = *rc;
    core.resume[0] = core.out_dir[0] = '\0';
    core.ckpt_every = core.ckpt_every_s = core.log_every = core.halt_at = core.dump_at = core.overwrite = 0;
    core.comm_timeout = 0;
    core.plan_memory = 0;
    core.backend[0] = core.comm[0] = '\0';  // how the ranks talk is not the computation; world_size is
    core.grad_sync = GM_GRAD_SYNC_ALL_REDUCE;  // the same values either way, so a checkpoint resumes under both
    core.device = 0;
    // Left out, so that checkpoints of builds before it resume too: bit for bit the same training either way.
    static const char *const not_identity[] = {"recompute", "head_rows", NULL};
    char *json = gm_run_config_json_without(&core, not_identity), tail[48];
    int n = snprintf(tail, sizeof tail, ",\"world_size\":%d}", world);
    size_t len = strlen(json);
    char *grown = realloc(json, len + (size_t)n + 1);
    if (!grown) abort();
    memcpy(grown + len - 1, tail, (size_t)n + 1);  // over the closing brace
    return grown;
}

// ---- checkpoints ---------------------------------------------------------------------------

enum { MAX_SECTIONS = GM_NGROUPS + GM_MAX_STATE_BUFS + 8 };
typedef gm_state_buf state_buf;
_Static_assert(sizeof(((state_buf *)0)->name) == GM_CKPT_NAME_LEN, "state buffer names are checkpoint section names");

// The backend buffers a checkpoint holds besides the host scalars: the parameters, then the
// optimizers' states.
static int state_bufs(const trainer *t, state_buf *out) {
    out[0] = (state_buf){"params", t->model.p, t->model.params.total, 0};
    return 1 + gm_optimizers_states(&t->opt, out + 1);
}

// A backend buffer copied into fresh host memory (NULL + gm_fail when out of memory).
static gm_real *download_new(const gm_backend *be, const gm_real *src, size_t numel) {
    gm_real *h = malloc((numel ? numel : 1) * sizeof *h);
    if (!h) return gm_fail("trainer: out of host memory for %zu elements", numel), NULL;
    be->download(be, h, src, numel * sizeof *h);
    return h;
}

// The host scalars a checkpoint holds; the sections point into it.
typedef struct {
    long long step;
    gm_loader_state loader;
    long adam_t[GM_NGROUPS];  // steps taken by each Adam group (t of those with has_adam)
    char tnames[GM_NGROUPS][GM_CKPT_NAME_LEN];
} ckpt_scalars;

// The section names of the Adam step counts.
static void name_adam_t(ckpt_scalars *sc) {
    for (int g = 0; g < GM_NGROUPS; g++) snprintf(sc->tnames[g], GM_CKPT_NAME_LEN, "adam.%s.t", gm_group_names[g]);
}

// Every section of the checkpoint at `step`, in file order: what the run is (configuration, data,
// backend), the scalars, then the state buffers `bufs`, downloaded into host[i] (host NULL: no
// data, for the size alone).
static int ckpt_sections(const trainer *t, int step, ckpt_scalars *sc, const state_buf *bufs, int nb,
                         gm_real *const *host, gm_ckpt_section *s) {
    int n = 0;
    sc->step = step;
    sc->loader = gm_loader_get_state(&t->train);
    name_adam_t(sc);
    s[n++] = (gm_ckpt_section){"config", t->config_core, strlen(t->config_core)};
    s[n++] = (gm_ckpt_section){"data", t->data_manifest, strlen(t->data_manifest)};
    s[n++] = (gm_ckpt_section){"backend", t->rc->backend, strlen(t->rc->backend)};
    s[n++] = (gm_ckpt_section){"step", &sc->step, sizeof sc->step};
    s[n++] = (gm_ckpt_section){"loader", &sc->loader, sizeof sc->loader};
    for (int g = 0; g < GM_NGROUPS; g++) {
        if (!t->opt.has_adam[g]) continue;
        sc->adam_t[g] = t->opt.adam[g].t;
        s[n++] = (gm_ckpt_section){sc->tnames[g], &sc->adam_t[g], sizeof sc->adam_t[g]};
    }
    for (int i = 0; i < nb; i++)
        s[n++] = (gm_ckpt_section){bufs[i].name, host ? host[i] : NULL, bufs[i].numel * sizeof(gm_real)};
    return n;
}

static size_t checkpoint_bytes(const trainer *t) {
    gm_ckpt_section s[MAX_SECTIONS];
    state_buf bufs[MAX_SECTIONS];
    ckpt_scalars sc;
    int nb = state_bufs(t, bufs);
    return gm_ckpt_file_bytes(s, ckpt_sections(t, 0, &sc, bufs, nb, NULL, s));
}

// Records #4 and #8 train step 1 on step 0's batch: the loader starts over before it.
static void rewind_before_step(const gm_run_config *rc, gm_loader *ld, long long s) {
    if (rc->batch0_twice && s == 1) gm_loader_reset(ld);
}

// Where the training loader stands after `steps` steps of this run (train_step's reads).
static gm_loader_state loader_after(const trainer *t, long long steps) {
    gm_loader ld = t->train;  // the position only: it shares the shards and is not closed
    gm_loader_reset(&ld);
    for (long long s = 0; s < steps; s++) {
        rewind_before_step(t->rc, &ld, s);
        gm_loader_skip(&ld, t->rc->grad_accum);
    }
    return gm_loader_get_state(&ld);
}

// Where element i of buffer b is: "<view>[row, col] (element i)" for the parameters, else "element i".
static void locate(const trainer *t, const state_buf *b, size_t i, char *where, size_t len) {
    const gm_table *tab = &t->model.params;
    int v = b->buf == t->model.p ? gm_table_locate(tab, i) : -1;
    if (v >= 0) {
        size_t k = i - tab->v[v].offset, cols = (size_t)tab->v[v].shape[1];
        snprintf(where, len, "%s[%zu, %zu] (element %zu)", tab->v[v].name, k / cols, k % cols, i);
    } else {
        snprintf(where, len, "element %zu", i);
    }
}

// What check_state finds: a state training produces, one a diverged run can hold (a non-finite
// value: a NaN in a parameter no batch touches, an unused embedding row, trains on "fine"), or one
// no run writes.
enum { STATE_OK = 0, STATE_NONFINITE, STATE_IMPOSSIBLE };

// The one test of a checkpoint's state, applied to what is saved (the backend's buffers, copied to
// the host) and to what is resumed (the file), so that a run never writes a checkpoint its resume
// refuses: the step within the run's steps, the loader where that many steps leave it, every Adam
// group stepped once per step, every value finite, second moments never negative. data[i] holds
// bufs[i]'s values. The first fault goes to gm_fail, naming the section (and the element).
static int check_state(const trainer *t, const ckpt_scalars *sc, const state_buf *bufs, int nb, const gm_real *const *data) {
    if (sc->step < 0 || sc->step > t->rc->steps)
        return gm_fail("step %lld is outside this run's %d steps", sc->step, t->rc->steps), STATE_IMPOSSIBLE;
    gm_loader_state want = loader_after(t, sc->step);
    if (sc->loader.shard != want.shard || sc->loader.pos != want.pos)
        return gm_fail("loader position (shard %lld, token %lld) is not where %lld steps leave it (shard %lld, token %lld)",
                       (long long)sc->loader.shard, (long long)sc->loader.pos, sc->step, (long long)want.shard,
                       (long long)want.pos), STATE_IMPOSSIBLE;
    for (int g = 0; g < GM_NGROUPS; g++)
        if (t->opt.has_adam[g] && sc->adam_t[g] != sc->step)
            return gm_fail("%s is %ld at step %lld (every step steps each Adam group once)", sc->tnames[g], sc->adam_t[g],
                           sc->step), STATE_IMPOSSIBLE;
    char where[160], value[GM_FMT_DOUBLE_LEN];
    for (int b = 0; b < nb; b++) {
        const gm_real *x = data[b];
        size_t i = 0;
        while (i < bufs[b].numel && isfinite(x[i]) && !(bufs[b].second_moment && x[i] < 0)) i++;
        if (i == bufs[b].numel) continue;
        locate(t, &bufs[b], i, where, sizeof where);
        if (!isfinite(x[i]))
            return gm_fail("%s holds a non-finite value (%s) at %s", bufs[b].name, isnan(x[i]) ? "nan" : x[i] > 0 ? "inf" : "-inf",
                           where), STATE_NONFINITE;
        return gm_fail("%s holds a negative value (%s) at %s (a second moment is an average of squares)", bufs[b].name,
                       gm_fmt_double(x[i], value), where), STATE_IMPOSSIBLE;
    }
    return STATE_OK;
}

// What a failed checkpoint write leaves, for its message: the write is atomic, so the previous
// ckpt.bin where there is one (saying "kept" when there was none promised work that was lost).
static const char *ckpt_left(const trainer *t) {
    struct stat st;
    return stat(t->ckpt_path, &st) == 0 && S_ISREG(st.st_mode) ? "an earlier one is kept as it was"
                                                                : "this run's folder holds no earlier one";
}

// Written atomically: on any failure the previous ckpt.bin (if any) is left as it was. Every rank
// calls it: a sharded optimizer state is gathered first.
static int save_checkpoint(trainer *t, int step) {
    if (gm_optimizers_gather_state(&t->opt, t->comm))
        return gm_fail("step %d: checkpoint not written (%s): %s", step, ckpt_left(t), gm_error());
    if (t->comm->rank != 0) return 0;
    gm_ckpt_section s[MAX_SECTIONS];
    state_buf bufs[MAX_SECTIONS];
    gm_real *host[MAX_SECTIONS] = {0};
    ckpt_scalars sc;
    int nb = state_bufs(t, bufs), rc = 0, n = 0, state = STATE_OK;
    for (int i = 0; i < nb && rc == 0; i++)
        if (!(host[i] = download_new(t->be, bufs[i].buf, bufs[i].numel))) rc = -1;
    if (rc == 0 && t->be->sync(t->be)) rc = -1;
    if (rc == 0) n = ckpt_sections(t, step, &sc, bufs, nb, host, s);
    if (rc == 0 && (state = check_state(t, &sc, bufs, nb, (const gm_real *const *)host)) != STATE_OK) rc = -1;
    if (rc == 0) rc = gm_ckpt_write(t->ckpt_path, s, n);
    for (int i = 0; i < nb; i++) free(host[i]);
    return rc ? gm_fail("step %d: checkpoint not written (%s): %s%s", step, ckpt_left(t), gm_error(),
                        state == STATE_NONFINITE   ? "; the run has diverged where its loss does not show it"
                        : state == STATE_IMPOSSIBLE ? "; no training reaches this state: a fault of this build"
                                                    : "")
              : 0;
}

static int restore(void *dst, const gm_ckpt *c, const char *name, size_t bytes) {
    const void *p = gm_ckpt_get(c, name, bytes);
    if (!p) return -1;
    memcpy(dst, p, bytes);
    return 0;
}

// The room a list of differences has in the one-line message `fmt` (with path and the list as its
// %s arguments), keeping 32 characters for the prefix a caller adds ("rank 0: ").
static size_t list_room(const char *fmt, const char *path) {
    int fixed = snprintf(NULL, 0, fmt, path, "");
    return fixed + 32 < GM_ERROR_LEN ? GM_ERROR_LEN - 32 - (size_t)fixed : 0;
}

// The checkpoint must be of this run: the same configuration, then the same data (it decides the
// tokens still to come, and the loader's position means nothing on other shards). Says so, field by
// field and shard by shard. A checkpoint of a build that did not record its data (no "data"
// section) is resumed with a note; one of another backend with a note where the arithmetic differs.
static int check_identity(trainer *t, const gm_ckpt *c) {
    size_t n;
    const char *cfg = gm_ckpt_get_any(c, "config", &n);
    if (!cfg) return -1;
    if (n != strlen(t->config_core) || memcmp(cfg, t->config_core, n) != 0) {
        // Compared field by field, numbers by value (a checkpoint of a build that printed them
        // with 17 digits holds the same configuration).
        const char *fmt = "%s: written by a different configuration: %s (checkpoint -> this run); resume needs the same flags "
                          "and world size";
        char *saved = strndup(cfg, n), list[GM_ERROR_LEN];
        if (!saved) abort();
        int differ = gm_run_config_diff(saved, t->config_core, list, list_room(fmt, c->path));
        free(saved);
        if (differ) return gm_fail(fmt, c->path, list);
    }
    const int say = t->verbose && t->comm->rank == 0;
    const char *data = gm_ckpt_find(c, "data", &n);
    if (!data) {
        if (say)
            printf("train: note: --resume: %s was written by a build that did not record its data or backend: it continues "
                   "on these shards (data fingerprint %s) unchecked\n", c->path, t->data_fingerprint);
        return 0;
    }
    const char *fmt = "%s: written on other data: %s (checkpoint -> this run); resume needs the shards it was written on";
    char list[GM_ERROR_LEN];
    gm_short_list l;
    gm_short_list_init(&l, list, list_room(fmt, c->path));
    if (gm_data_manifest_diff(data, n, t->data_manifest, &l)) return gm_fail(fmt, c->path, gm_short_list_end(&l));
    const char *backend = gm_ckpt_get_any(c, "backend", &n);
    if (!backend) return -1;
    snprintf(t->ckpt_backend, sizeof t->ckpt_backend, "%.*s", (int)n, backend);
    if (say && strcmp(gm_backend_arithmetic(t->ckpt_backend), gm_backend_arithmetic(t->rc->backend)))
        printf("train: note: --resume: %s was written on --backend=%s (%s); this run computes on --backend=%s (%s): what "
               "follows is neither backend's uninterrupted run\n", c->path, t->ckpt_backend, gm_backend_arithmetic(t->ckpt_backend),
               t->rc->backend, gm_backend_arithmetic(t->rc->backend));
    return 0;
}

static int load_checkpoint(trainer *t, const char *path, int *step) {
    gm_ckpt c;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return gm_fail("--resume: %s is a folder; give its checkpoint file (%s/ckpt.bin)", path, path);
    if (gm_ckpt_read(&c, path)) return gm_fail("--resume: %s", gm_error());
    ckpt_scalars sc = {0};
    name_adam_t(&sc);
    state_buf bufs[MAX_SECTIONS];
    const gm_real *data[MAX_SECTIONS];
    int nb = state_bufs(t, bufs);
    int rc = check_identity(t, &c) || restore(&sc.step, &c, "step", sizeof sc.step) ||
             restore(&sc.loader, &c, "loader", sizeof sc.loader);
    for (int g = 0; rc == 0 && g < GM_NGROUPS; g++)
        if (t->opt.has_adam[g]) rc = restore(&sc.adam_t[g], &c, sc.tnames[g], sizeof sc.adam_t[g]);
    for (int i = 0; rc == 0 && i < nb; i++)
        if (!(data[i] = gm_ckpt_get(&c, bufs[i].name, bufs[i].numel * sizeof(gm_real)))) rc = -1;
    // Nothing is restored before the whole state passed.
    int state = rc ? STATE_OK : check_state(t, &sc, bufs, nb, data);
    if (state == STATE_NONFINITE)
        rc = gm_fail("--resume: %s: %s; the run that wrote it had diverged or the file was changed: it cannot be resumed", path,
                     gm_error());
    else if (state == STATE_IMPOSSIBLE)
        rc = gm_fail("--resume: %s: %s: no run writes this state (the file was changed, or written by a faulty build); it "
                     "cannot be resumed", path, gm_error());
    for (int i = 0; rc == 0 && i < nb; i++) t->be->upload(t->be, bufs[i].buf, data[i], bufs[i].numel * sizeof(gm_real));
    for (int g = 0; rc == 0 && g < GM_NGROUPS; g++)
        if (t->opt.has_adam[g]) t->opt.adam[g].t = sc.adam_t[g];
    if (rc == 0 && gm_loader_set_state(&t->train, sc.loader)) rc = gm_fail("%s: %s", path, gm_error());
    gm_ckpt_close(&c);
    *step = (int)sc.step;
    return rc;
}

// ---- memory plan ---------------------------------------------------------------------------

// Rows per logits chunk as rc says; --head_rows=0 (auto) left unresolved (not by train.c): GM_HEAD_ROWS.
static int head_rows_of(const gm_run_config *rc) { return rc->head_rows > 0 ? rc->head_rows : GM_HEAD_ROWS; }

int gm_train_memory_plan(const gm_run_config *rc, int world, int rank, gm_mem_plan *out) {
    memset(out, 0, sizeof *out);
    const gm_config *c = &rc->model;
    gm_model_mem mm;
    if (gm_model_plan(c, c->batch, c->seq_len, head_rows_of(rc), rc->recompute != GM_RECOMPUTE_OFF,
                      gm_backend_act_size(rc->backend), &mm))
        return -1;
    gm_table tab;
    gm_param_index pix;
    if (gm_params_build(c, &tab, &pix)) return gm_table_free(&tab), -1;
    size_t adam;
    gm_muon_mem muon;
    int r = gm_optimizers_plan(rc, &tab, rank, world, &adam, &muon);
    gm_table_free(&tab);
    if (r) return -1;
    gm_mem_plan_add(out, "params", "parameters", mm.params);
    gm_mem_plan_add(out, "grads", "parameter gradients", mm.grads);
    gm_mem_plan_add(out, "adam", "Adam moments m, v", adam);
    gm_mem_plan_add(out, "muon_momentum", "Muon momentum", muon.momentum);
    gm_mem_plan_add(out, "muon_update", "Muon updates u, send (this rank's matrices)", muon.update);
    gm_mem_plan_add(out, "muon_gather", "Muon all-gathered updates (world > 1)", muon.gather);
    if (muon.second) gm_mem_plan_add(out, "muon_second", "NorMuon second moments (every matrix)", muon.second);
    gm_mem_plan_add(out, "acts", "activations kept for the backward", mm.acts);
    gm_mem_plan_add(out, "scratch", "per-layer scratch (forward intermediates, recomputed ones)", mm.scratch);
    gm_mem_plan_add(out, "act_grads_layer", "activation gradients reused layer after layer", mm.act_grads_layer);
    gm_mem_plan_add(out, "act_grads_across", "activation gradients across layers (stream, x0, ve, skips)",
                    mm.act_grads_across);
    gm_mem_plan_add(out, "head", "head chunk: logits and their gradient in place, losses", mm.head);
    gm_mem_plan_add(out, "inputs", "ids, targets, document ids, rotary tables", mm.inputs);
    return 0;
}

// CUDA: what the plan leaves out (cuBLAS's workspace, the matmuls' bf16 operand copies, the CUDA
// context), held back from the device's free memory when an auto choice is decided.
#define CUDA_UNPLANNED_BYTES 4e9

// The memory rc's plan is held against (host backends: both limits train holds a run to, what it
// fills and all it maps; CUDA: the device's free memory less what the plan leaves out, or `budget`
// when > 0), and whether the plan fits: 1 fits, 0 does not, -1 (gm_fail) no plan or no figure.
static int plan_fits(const gm_run_config *rc, int world, int rank, double budget, double *need, double *have,
                     const char **what) {
    gm_mem_plan plan;
    gm_host_plan host;
    if (gm_train_memory_plan(rc, world, rank, &plan)) return -1;
    *need = (double)plan.total;
    if (strcmp(rc->backend, "cuda") != 0) {
        if (gm_train_host_plan(rc, &host)) return -1;
        const gm_host_memory lim = gm_host_memory_limit();
        const gm_host_limit *over = gm_host_over_limit(&lim, *need, &host, need);
        const gm_host_limit *l = over ? over : &lim.filled;
        *have = l->bytes;
        *what = l == &lim.filled ? "the host memory the process may fill" : "the address space it may map";
    } else if (budget > 0) {
        *have = budget, *what = "the budget of an 80 GB H100 less its workspace";
    } else {
        size_t free_bytes, total_bytes;
        if (gm_cuda_device_memory(rc->device, &free_bytes, &total_bytes))
            return gm_fail("device %d's memory unknown: %s", rc->device, gm_error());
        *have = (double)free_bytes - CUDA_UNPLANNED_BYTES, *what = "the device's free memory less 4 GB of workspace";
    }
    return *need <= *have;
}

// "recompute off (auto), head chunk 8192 rows (--head_rows)": the choices and who made them.
// `tail` follows: what auto went by.
static void say_choices(const gm_run_config *rc, int auto_recompute, int auto_head, const char *tail, char *why,
                        size_t len) {
    snprintf(why, len, "memory: recompute %s (%s), head chunk %d rows (%s)%s",
             rc->recompute == GM_RECOMPUTE_OFF ? "off" : "on", auto_recompute ? "auto" : "--recompute", rc->head_rows,
             auto_head ? "auto" : "--head_rows", tail);
}

int gm_train_resolve_memory(gm_run_config *rc, int world, int rank, double budget, char *why, size_t len) {
    const int auto_recompute = rc->recompute == GM_RECOMPUTE_AUTO, auto_head = rc->head_rows == 0;
    const long long all_rows = (long long)rc->model.batch * rc->model.seq_len;
    if (!auto_recompute && !auto_head) return say_choices(rc, 0, 0, "", why, len), 0;
    // Keeping the recomputed inputs saves ~23 passes a step, one chunk of logits a few: the former
    // has the first claim on the memory.
    if (auto_recompute) rc->recompute = GM_RECOMPUTE_OFF;
    if (auto_head) rc->head_rows = all_rows > INT_MAX ? INT_MAX : (int)all_rows;
    double need = 0, have = 0;
    const char *what = "";
    char tail[256];
    int fits = plan_fits(rc, world, rank, budget, &need, &have, &what);
    if (fits < 0) {  // no figure to hold the plan against: the smaller choices
        if (auto_recompute) rc->recompute = GM_RECOMPUTE_ON;
        if (auto_head && rc->head_rows > GM_HEAD_ROWS) rc->head_rows = GM_HEAD_ROWS;
        snprintf(tail, sizeof tail, "; %s", gm_error());
        return say_choices(rc, auto_recompute, auto_head, tail, why, len), 0;
    }
    if (!fits && auto_head && rc->head_rows > GM_HEAD_ROWS) {
        rc->head_rows = GM_HEAD_ROWS;
        if ((fits = plan_fits(rc, world, rank, budget, &need, &have, &what)) < 0) return -1;
    }
    if (!fits && auto_recompute) {
        rc->recompute = GM_RECOMPUTE_ON;
        if ((fits = plan_fits(rc, world, rank, budget, &need, &have, &what)) < 0) return -1;
    }
    snprintf(tail, sizeof tail, "; the plan, %.2f GB, %s %s: %.2f GB", need / 1e9, fits ? "fits in" : "exceeds", what,
             have / 1e9);
    return say_choices(rc, auto_recompute, auto_head, tail, why, len), 0;
}

// ---- logging -------------------------------------------------------------------------------

static int open_log(trainer *t) {
    const gm_run_config *rc = t->rc;
    if (t->comm->rank != 0) return gm_jsonl_open(&t->log, NULL, "a");
    char path[600];
    snprintf(path, sizeof path, "%s/log.jsonl", rc->out_dir);
    if (gm_jsonl_open(&t->log, path, t->dir.continues ? "a" : "w")) return -1;
    char *cfg = gm_run_config_json(rc), *hw = gm_hardware_json(), *mem = NULL;
    gm_mem_plan plan;
    if (gm_train_memory_plan(rc, t->comm->world, t->comm->rank, &plan) == 0) mem = gm_mem_plan_json(&plan);
    if (!mem) return free(cfg), free(hw), gm_fail("trainer: memory plan: %s", gm_error());
    gm_jsonl_begin(&t->log);
    gm_jsonl_str(&t->log, "event", "start");
    gm_jsonl_raw(&t->log, "config", cfg);
    gm_jsonl_str(&t->log, "git_commit", gm_build_commit);
    gm_jsonl_raw(&t->log, "hardware", hw);
    gm_jsonl_int(&t->log, "world_size", t->comm->world);
    gm_jsonl_str(&t->log, "comm", t->comm->ops->name);
    gm_jsonl_str(&t->log, "precision", GM_REAL_NAME);
    gm_jsonl_raw(&t->log, "memory_plan", mem);
    gm_jsonl_str(&t->log, "data_fingerprint", t->data_fingerprint);  // every train and val shard (data/manifest.h)
    if (t->ckpt_backend[0]) gm_jsonl_str(&t->log, "checkpoint_backend", t->ckpt_backend);
    gm_jsonl_str(&t->log, "source", gm_build_source);
    int r = gm_jsonl_end(&t->log);
    free(cfg);
    free(hw);
    free(mem);
    return r;
}

// The last record of a failed run: the step and the message.
static int log_error_record(trainer *t, const char *msg) {
    gm_jsonl_begin(&t->log);
    gm_jsonl_str(&t->log, "event", "error");
    gm_jsonl_int(&t->log, "step", t->step);
    gm_jsonl_str(&t->log, "message", msg);
    return gm_jsonl_end(&t->log);
}

// Best effort, since the failure may be the log itself; the message of the failure stays the one
// reported.
static void log_error(trainer *t) {
    if (!t->log.opened) return;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gm_error());
    if (log_error_record(t, msg)) gm_fail("%s", msg);
}

// The communicator's last words before it ends the process itself (the MPI watchdog, from its
// thread, while this rank waits in a collective and touches neither the log nor t->step).
static void log_comm_exit(void *ctx, const char *msg) {
    trainer *t = ctx;
    if (t->log.opened) log_error_record(t, msg);
}

// The validation set must hold val_tokens distinct tokens: the loader wraps around, and a count
// above one pass would average some batches twice (8192 over a 5000-token shard is the loss of 4096).
static int check_val_tokens(const trainer *t) {
    const gm_run_config *rc = t->rc;
    long long per_step = (long long)t->comm->world * rc->model.batch * rc->model.seq_len;
    long long avail = (long long)gm_loader_pass_steps(&t->val) * per_step;
    if (rc->val_tokens > avail)
        return gm_fail("--val_tokens=%lld: the validation shards %s hold %lld distinct tokens in batches of W*B*T = %lld; "
                       "at most --val_tokens=%lld (more would count tokens twice)", rc->val_tokens, rc->val_data, avail, per_step, avail);
    return 0;
}

// Training shards that are also validation shards (--train_data='data/gcide/*.bin' matches the
// val shard too) would train on the validation set.
static int check_disjoint_data(const trainer *t) {
    char shared[1024];
    if (gm_loader_shared(&t->train, &t->val, shared, sizeof shared))
        return gm_fail("--train_data/--val_data: both match %s (the run would train on its validation set); give patterns "
                       "that share no file", shared);
    return 0;
}

// The log and checkpoints go beside no shard (train/run_dir.h).
static int check_out_dir_apart(const trainer *t) {
    const gm_loader *ld[2] = {&t->train, &t->val};
    const char *flag[2] = {"--train_data", "--val_data"};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ld[k]->nshards; i++)
            if (gm_run_dir_check_apart(t->rc->out_dir, flag[k], ld[k]->shards[i].path)) return -1;
    return 0;
}

// ---- the loop ------------------------------------------------------------------------------

// The fault of step s whose loss l is not finite or whose forward/backward failed (gm_error()
// was cleared before the step, so a message there is the kernel's).
static int step_fault(int s, const char *what, double l) {
    if (isfinite(l) || gm_error()[0]) return gm_fail("step %d: %s: %s", s, what, gm_error());
    // fabs: a NaN computed on x86 has its sign bit set, and "-nan" reads like a value.
    return gm_fail("step %d: %s loss is %g (not finite): training stopped, no checkpoint written for this step", s, what,
                   isnan(l) ? fabs(l) : l);
}

// 1 when the run stops here: a stop request on any rank (a signal, its output gone, or `local`:
// --halt_at) is honoured by every rank at the same point. -1 when the collective fails.
static int stop_agreed(trainer *t, int local) {
    gm_real stop = gm_stop_signal() || local ? 1 : 0;
    if (t->comm->world > 1 && gm_allreduce_mean(t->comm, &stop, 1, real_dtype())) return -1;
    return stop > 0;
}

// The mean loss over the validation set into *loss: 0. A stop request abandons it between two
// batches (a validation takes many steps' time: a scheduler's grace period may be shorter): 1,
// *loss untouched. -1 on a fault.
static int validate(trainer *t, double *loss) {
    const gm_config *c = &t->model.cfg;
    gm_loader_reset(&t->val);
    double sum = 0;
    for (int i = 0; i < t->val_steps; i++) {
        int stop = stop_agreed(t, 0);
        if (stop) return stop;
        gm_loader_next(&t->val, t->x, t->y);
        double l = gm_model_forward(&t->model, t->x, t->y, c->batch, c->seq_len);
        if (!isfinite(l)) return step_fault(t->step, "validation", l);
        sum += l;
    }
    gm_real mean = (gm_real)(sum / t->val_steps);
    if (gm_allreduce_mean(t->comm, &mean, 1, real_dtype())) return -1;
    *loss = mean;
    return 0;
}

// Rank 0 writes each block matrix of `buf` (gradients or momenta, laid out as the views) as
// out_dir/matrices/<name>.<what>.bin in float32.
static int dump_matrices(trainer *t, const gm_real *buf, const size_t *offsets, const char *what) {
    if (t->comm->rank != 0) return 0;
    char dir[700], path[1000], name[GM_MATFILE_NAME_MAX];
    snprintf(dir, sizeof dir, "%s/matrices", t->rc->out_dir);
    if (gm_mkdir_p(dir, NULL)) return -1;
    const int g = GM_GROUP_MATRIX - 1;
    for (int i = 0; i < t->opt.nviews[g]; i++) {
        const gm_opt_view *v = &t->opt.views[g][i];
        size_t n = gm_view_numel(v);
        float *f = malloc(n * sizeof *f);
        gm_real *src = download_new(t->be, buf + (offsets ? offsets[i] : v->offset), n);
        if (!f || !src) return free(f), free(src), gm_fail("dump: out of memory");
        for (size_t j = 0; j < n; j++) f[j] = (float)src[j];
        free(src);
        snprintf(name, sizeof name, "%s %s at step %d", v->name, what, t->rc->dump_at);
        snprintf(path, sizeof path, "%s/%s.%s.bin", dir, v->name, what);
        int rc = gm_matfile_write(path, name, f, v->rows, v->cols);
        free(f);
        if (rc) return -1;
    }
    return 0;
}

// One optimizer step s; `phase` (may be NULL) hears the name of each part before it starts.
static int train_step(trainer *t, int s, double *loss, gm_phase_fn phase, void *ctx) {
#define PHASE(name) (phase ? phase(ctx, name) : (void)0)
    const gm_run_config *rc = t->rc;
    const gm_config *c = &t->model.cfg;
    gm_model_zero_grad(&t->model);
    rewind_before_step(rc, &t->train, s);
    double sum = 0;
    for (int micro = 0; micro < rc->grad_accum; micro++) {
        PHASE("data");
        gm_loader_next(&t->train, t->x, t->y);
        PHASE("model");
        double l = gm_model_forward_backward(&t->model, t->x, t->y, c->batch, c->seq_len, 1.0 / rc->grad_accum);
        if (!isfinite(l)) return step_fault(s, "train", l);
        sum += l;
    }
    // The backward added the mean over the k micro-batches; average across ranks, once per step
    // (reduce-scatter: each Muon matrix's mean only on its owner, the same values).
    PHASE("allreduce");
    gm_real *g = t->model.g;
    size_t n = t->model.params.total;
    if (t->spans ? gm_data_reduce_scatter_mean(t->comm, t->be, g, n, real_dtype(), t->spans, t->nspans)
                 : gm_data_allreduce_mean(t->comm, t->be, g, n, real_dtype()))
        return -1;
    const int dump = s == rc->dump_at;
    if (dump && dump_matrices(t, g, NULL, "grad")) return -1;
    PHASE("optimizer");
    if (gm_optimizers_step(&t->opt, rc, t->model.p, g, s, t->comm)) return -1;
    if (t->be->sync(t->be)) return gm_fail("step %d: optimizer: %s", s, gm_error());
    if (dump && t->opt.has_muon && dump_matrices(t, t->opt.muon.buf, t->opt.muon.state_offset, "momentum")) return -1;
    PHASE("loss");
    gm_real mean = (gm_real)(sum / rc->grad_accum);
    if (gm_allreduce_mean(t->comm, &mean, 1, real_dtype())) return -1;
    *loss = mean;
    return 0;
#undef PHASE
}

// The checkpoint of step s (after step s - 1, or after the validation before step s) when one is
// due: every ckpt_every steps (by_count), and --ckpt_every_s seconds of wall time after the last
// one ended (rank 0's clock: only rank 0 writes; gathering a sharded state takes every rank, so they
// follow it). Checked at every such boundary, so a kill loses at most that plus one step or one
// validation (plus a checkpoint write cut short). The last step's is written at the end.
static int checkpoint_if_due(trainer *t, int s, int by_count, uint64_t *t_ckpt) {
    const gm_run_config *rc = t->rc;
    if (rc->ckpt_every < 0 || s >= rc->steps) return 0;
    int due = by_count && rc->ckpt_every > 0 && s % rc->ckpt_every == 0;
    due |= rc->ckpt_every_s > 0 && gm_seconds_since(*t_ckpt) >= rc->ckpt_every_s;
    if (t->spans && t->comm->world > 1 && gm_broadcast(t->comm, &due, sizeof due, 0)) return -1;
    if (!due) return 0;
    if (save_checkpoint(t, s)) return -1;
    *t_ckpt = gm_now_ns();
    return 0;
}

static long peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

// step_s: this step's wall time (train records; benchmarks read it, e.g. bench/peers.py).
static int log_record(trainer *t, const char *event, int s, double loss, double lr, double train_s, long long tokens,
                      double step_s) {
    gm_jsonl_begin(&t->log);
    gm_jsonl_str(&t->log, "event", event);
    gm_jsonl_int(&t->log, "step", s);
    gm_jsonl_int(&t->log, "tokens", tokens);
    gm_jsonl_num(&t->log, event[0] == 'v' ? "val_loss" : "train_loss", loss);
    if (event[0] != 'v') gm_jsonl_num(&t->log, "lr_mult", lr);
    gm_jsonl_num(&t->log, "train_time_s", train_s);
    if (event[0] != 'v') gm_jsonl_num(&t->log, "step_s", step_s);
    gm_jsonl_int(&t->log, "peak_rss_kb", peak_rss_kb());  // host memory so far, to hold against the plan
    gm_jsonl_int(&t->log, "peak_vm_kb", gm_peak_vm_kb());  // address space so far, against the plan's mapped total
    return gm_jsonl_end(&t->log);
}

static void free_trainer(trainer *t) {
    gm_optimizers_free(&t->opt);
    gm_loader_close(&t->train);
    gm_loader_close(&t->val);
    if (t->model.be) gm_model_free(&t->model);  // created only once the data checks passed
    gm_jsonl_close(&t->log);
    gm_run_dir_close(&t->dir);
    free(t->x);
    free(t->y);
    free(t->config_core);
    free(t->data_manifest);
    free(t->spans);
}

// The shards of --<flag>. The presets' patterns (data/gcide/..., data/fineweb10B/...) are relative
// to the repository's folder: a run started elsewhere, or before `make data`, finds nothing there.
static int open_shards(gm_loader *ld, const char *flag, const char *pattern, int B, int T, const gm_comm *comm, int vocab) {
    if (gm_loader_open(ld, pattern, B, T, comm->rank, comm->world, vocab) == 0) return 0;
    const char *embedded = "data/gcide/";
    if (!strncmp(pattern, embedded, strlen(embedded)) && access(embedded, F_OK) != 0)
        return gm_fail("--%s: %s; `make data` in the repository's folder builds %s", flag, gm_error(), embedded);
    return gm_fail("--%s: %s", flag, gm_error());
}

size_t gm_train_params_len(const gm_run_config *rc, const gm_backend *be) {
    gm_model m;
    if (gm_model_create(&m, &rc->model, be)) return 0;
    size_t n = m.params.total;
    gm_model_free(&m);
    return n;
}

gm_trainer *gm_trainer_open(const gm_run_config *rc, gm_comm *comm, const gm_backend *be) {
    trainer *t = calloc(1, sizeof *t);
    if (!t) return gm_fail("trainer: out of memory"), NULL;
    t->dir.fd = -1;
    t->rc = rc;
    t->be = be;
    if (!comm) {
        if (gm_comm_open(&t->single, "single", NULL, NULL, 0)) return free(t), NULL;
        comm = &t->single;
    }
    t->comm = comm;
    const gm_config *c = &rc->model;
    const int W = comm->world, B = c->batch, T = c->seq_len;
    t->config_core = config_core_json(rc, W);
    if (rc->grad_sync == GM_GRAD_SYNC_REDUCE_SCATTER && W > 1 && rc->dump_at >= 0) {
        gm_fail("--dump_at: under --grad_sync=reduce-scatter on %d ranks, rank 0 holds only its own matrices' gradients and "
                "momenta; dump with --grad_sync=all-reduce (the same values)", W);
        goto fail;
    }
    snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s/ckpt.bin", rc->out_dir);
    // Every rank must run the same configuration on the same data.
    if (gm_comm_check_same(comm, "the resolved configuration", gm_hash_bytes(GM_HASH_INIT, t->config_core, strlen(t->config_core))) ||
        gm_comm_check_same(comm, "--grad_sync", (uint64_t)rc->grad_sync) ||
        gm_val_steps(rc->val_tokens, B, T, W, &t->val_steps) ||
        open_shards(&t->train, "train_data", rc->train_data, B, T, comm, c->vocab) ||
        open_shards(&t->val, "val_data", rc->val_data, B, T, comm, c->vocab) || check_disjoint_data(t) || check_val_tokens(t) ||
        !(t->data_manifest = gm_data_manifest(&t->train, &t->val)))
        goto fail;
    uint64_t fingerprint = gm_data_fingerprint(t->data_manifest);
    snprintf(t->data_fingerprint, sizeof t->data_fingerprint, "%016" PRIx64, fingerprint);
    if (gm_comm_check_same(comm, "the data files", fingerprint)) goto fail;
    t->x = malloc((size_t)B * T * sizeof *t->x);
    t->y = malloc((size_t)B * T * sizeof *t->y);
    if (!t->x || !t->y) {
        gm_fail("trainer: out of memory");
        goto fail;
    }
    if (gm_model_create(&t->model, c, be)) goto fail;
    gm_model_set_recompute(&t->model, rc->recompute != GM_RECOMPUTE_OFF);  // auto unresolved (not by train.c): on
    gm_model_set_head_rows(&t->model, head_rows_of(rc));
    if (gm_model_init(&t->model, rc->seed, GM_INIT_RECORD) ||
        gm_optimizers_init(&t->opt, rc, &t->model.params, be, comm))
        goto fail;
    if (rc->grad_sync == GM_GRAD_SYNC_REDUCE_SCATTER && (t->nspans = gm_optimizers_grad_spans(&t->opt, W, &t->spans)) < 0)
        goto fail;
    return t;
fail:
    gm_trainer_close(t);
    return NULL;
}

void gm_trainer_close(gm_trainer *t) {
    if (!t) return;
    free_trainer(t);
    if (t->comm == &t->single) gm_comm_close(&t->single);
    free(t);
}

int gm_trainer_step(gm_trainer *t, int s, double *loss, gm_phase_fn phase, void *ctx) {
    if (phase) phase(ctx, "model");  // the window's mask and the gradient reset
    gm_model_set_window(&t->model, gm_config_window_blocks(&t->rc->model, s, t->rc->steps));
    return train_step(t, s, loss, phase, ctx);
}

int gm_train(const gm_run_config *rc, gm_comm *comm, const gm_backend *be, int verbose, gm_train_result *res) {
    gm_train_result local = {0};
    if (!res) res = &local;
    trainer *t = gm_trainer_open(rc, comm, be);
    if (!t) return -1;
    t->verbose = verbose;
    comm = t->comm;
    const gm_config *c = &rc->model;
    const int W = comm->world, B = c->batch, T = c->seq_len;
    int rc_ = 0, start = 0;
    if ((comm->rank == 0 && (check_out_dir_apart(t) || gm_run_dir_open(&t->dir, rc, checkpoint_bytes(t), verbose))) ||
        (rc->resume[0] && load_checkpoint(t, rc->resume, &start)) || open_log(t))
        goto fail;
    comm->last_words_ctx = t, comm->last_words = log_comm_exit;

    double train_s = 0, val_loss = NAN, last_print = -1e9;
    int val_step = -1, val_abandoned = 0;
    long long tokens = (long long)start * rc->grad_accum * W * B * T, timed_tokens = 0;
    gm_progress progress;
    gm_progress_init(&progress, rc->steps, rc->val_every);
    uint64_t t_run = gm_now_ns(), t_ckpt = t_run;
    int s = start;
    for (;; s++) {
        t->step = s;
        gm_error_clear();  // a message after this step's forward or backward is from this step
        int window = gm_config_window_blocks(c, s, rc->steps);
        gm_model_set_window(&t->model, window);
        if (s == rc->steps || (rc->val_every > 0 && s % rc->val_every == 0)) {
            uint64_t t0 = gm_now_ns();
            int r = validate(t, &val_loss);
            if (r < 0) goto fail;
            // Abandoned for a stop: no val record; checkpointed below as at a step boundary (the
            // validation changed nothing the checkpoint holds), and the resumed run validates step s
            // again from its first batch.
            if (r > 0) {
                val_abandoned = 1;
                break;
            }
            gm_progress_val(&progress, gm_seconds_since(t0));
            val_step = s;
            if (log_record(t, "val", s, val_loss, 0, train_s, tokens, 0)) goto fail;
            if (verbose && comm->rank == 0) {
                printf("step %d/%d | val loss %.4f | train time %.1f s\n", s, rc->steps, val_loss, train_s);
                gm_output_flush(stdout);
            }
            if (checkpoint_if_due(t, s, 0, &t_ckpt)) goto fail;
        }
        if (s == rc->steps) break;
        uint64_t t0 = gm_now_ns();
        double loss = NAN;
        if (gm_trainer_step(t, s, &loss, NULL, NULL)) goto fail;
        double dt = gm_seconds_since(t0);
        gm_progress_step(&progress, dt);
        long long step_tokens = (long long)rc->grad_accum * W * B * T;
        tokens += step_tokens;
        if (s - start >= UNTIMED_STEPS) train_s += dt, timed_tokens += step_tokens;
        if (res->train_loss) res->train_loss[s] = loss;
        double mult = gm_lr_mult(&rc->lr, s);
        if (log_record(t, "train", s, loss, mult, train_s, tokens, dt)) goto fail;
        double now = gm_seconds_since(t_run);
        if (verbose && comm->rank == 0 && (now - last_print >= rc->log_every || s + 1 == rc->steps)) {
            last_print = now;
            gm_progress_print(stdout, &progress, s, loss, mult, window, train_s > 0 ? timed_tokens / train_s : step_tokens / dt, now);
            gm_output_flush(stdout);
        }
        if (checkpoint_if_due(t, s + 1, 1, &t_ckpt)) goto fail;
        // A stop after the last step is honoured by the final validation, between its batches.
        int stop = stop_agreed(t, rc->halt_at > 0 && s + 1 == rc->halt_at);
        if (stop < 0) goto fail;
        if (stop && s + 1 < rc->steps) {
            s++;
            break;
        }
    }
    t->step = s;
    if (rc->ckpt_every >= 0 && save_checkpoint(t, s)) goto fail;
    {
        res->steps_done = s;
        res->final_val_loss = val_loss;
        res->val_step = val_step;
        res->train_seconds = train_s;
        res->tokens = tokens;
        res->tokens_per_s = train_s > 0 ? timed_tokens / train_s : 0;
        res->peak_rss_kb = peak_rss_kb();
        res->interrupted = s < rc->steps || val_abandoned;
        if (res->params) {
            size_t n = res->params_len < t->model.params.total ? res->params_len : t->model.params.total;
            be->download(be, res->params, t->model.p, n * sizeof(gm_real));
        }
        gm_jsonl_begin(&t->log);
        gm_jsonl_str(&t->log, "event", res->interrupted ? "interrupted" : "end");
        gm_jsonl_int(&t->log, "step", s);
        gm_jsonl_num(&t->log, "final_val_loss", val_loss);
        gm_jsonl_int(&t->log, "val_step", val_step);
        gm_jsonl_num(&t->log, "train_time_s", train_s);
        gm_jsonl_num(&t->log, "tokens_per_s", res->tokens_per_s);
        gm_jsonl_int(&t->log, "peak_rss_kb", res->peak_rss_kb);
        gm_jsonl_int(&t->log, "peak_vm_kb", gm_peak_vm_kb());
        if (res->interrupted) gm_jsonl_bool(&t->log, "val_abandoned", val_abandoned);
        if (gm_jsonl_end(&t->log)) goto fail;
    }
    goto done;
fail:
    rc_ = -1;
    log_error(t);
    // A run refused before it wrote anything leaves no empty folder behind.
    if (t->comm->rank == 0) gm_run_dir_abandon(&t->dir);
done:
    comm->last_words = NULL;
    gm_trainer_close(t);
    return rc_;
}
