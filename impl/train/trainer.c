#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "base/build_info.h"
#include "base/error.h"
#include "base/io.h"
#include "base/jsonl.h"
#include "base/matfile.h"
#include "base/timer.h"
#include "data/loader.h"
#include "model/model.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "optim/schedule.h"
#include "train/checkpoint.h"
#include "train/hardware.h"

static volatile sig_atomic_t stop_requested;
void gm_train_request_stop(void) { stop_requested = 1; }

enum { NGROUPS = 4 };  // embed, head, scalar, matrix (gm_group - 1)
static const char *const GROUP_NAMES[NGROUPS] = {"embed", "head", "matrix", "scalar"};
enum { UNTIMED_STEPS = 10 };  // compilation/warm-up steps the records leave out of the timing

typedef struct {
    const gm_run_config *rc;
    const gm_backend *be;
    gm_comm *comm, single;
    gm_model model;
    gm_loader train, val;
    int val_steps;
    gm_opt_view *views[NGROUPS];
    int nviews[NGROUPS];
    gm_adam adam[NGROUPS];
    int has_adam[NGROUPS];
    gm_muon muon;
    int has_muon;
    int32_t *x, *y;
    gm_jsonl log;
    char ckpt_path[600];
    char *config_core;  // config JSON without the run-control fields (resume must match it)
} trainer;

static gm_dtype real_dtype(void) { return sizeof(gm_real) == sizeof(double) ? GM_DT_F64 : GM_DT_F32; }

static double lr_of_group(const gm_run_config *rc, int g) {
    const double lrs[NGROUPS] = {rc->lr_embed, rc->lr_head, rc->lr_matrix, rc->lr_scalar};
    return lrs[g];
}

// Split the parameter table into the optimizer groups of the preset.
static int build_optimizers(trainer *t) {
    const gm_table *tab = &t->model.params;
    for (int g = 0; g < NGROUPS; g++) {
        t->views[g] = calloc((size_t)tab->n + 1, sizeof(gm_opt_view));
        if (!t->views[g]) return gm_fail("trainer: out of memory");
    }
    for (int i = 0; i < tab->n; i++) {
        const gm_view *v = &tab->v[i];
        int g = (int)v->group - 1;
        if (g < 0 || g >= NGROUPS) return gm_fail("trainer: parameter %s has no optimizer group", v->name);
        gm_opt_view ov = {v->name, v->offset, (int)v->shape[0], (int)(v->ndim > 1 ? v->shape[1] : 1)};
        t->views[g][t->nviews[g]++] = ov;
    }
    for (int g = 0; g < NGROUPS; g++) {
        if (!t->nviews[g]) continue;
        if (g == GM_GROUP_MATRIX - 1 && t->rc->matrix_opt == GM_MATRIX_MUON) {
            if (gm_muon_init(&t->muon, t->be, &t->rc->muon, t->views[g], t->nviews[g], t->comm)) return -1;
            t->has_muon = 1;
        } else {
            gm_adam_hparams hp = t->rc->adam;
            hp.lr = lr_of_group(t->rc, g);
            if (gm_adam_init(&t->adam[g], t->be, &hp, t->views[g], t->nviews[g])) return -1;
            t->has_adam[g] = 1;
        }
    }
    return 0;
}

static char *config_core_json(const gm_run_config *rc) {
    gm_run_config core = *rc;
    core.resume[0] = core.out_dir[0] = '\0';
    core.ckpt_every = core.log_every = core.halt_at = core.dump_at = 0;
    core.comm_timeout = 0;
    core.backend[0] = '\0';
    core.device = 0;
    return gm_run_config_json(&core);
}

// ---- checkpoints ---------------------------------------------------------------------------

enum { MAX_SECTIONS = 3 * NGROUPS + 8 };

// The backend buffers a checkpoint holds besides the host scalars: parameters, then each Adam
// group's moments, then Muon's momenta.
typedef struct {
    char name[GM_CKPT_NAME_LEN];
    gm_real *buf;  // backend memory
    size_t numel;
} state_buf;

static int state_bufs(const trainer *t, state_buf *out) {
    int n = 0;
    out[n++] = (state_buf){"params", t->model.p, t->model.params.total};
    for (int g = 0; g < NGROUPS; g++) {
        if (!t->has_adam[g]) continue;
        out[n] = (state_buf){"", t->adam[g].m, t->adam[g].state_numel};
        snprintf(out[n++].name, GM_CKPT_NAME_LEN, "adam.%s.m", GROUP_NAMES[g]);
        out[n] = (state_buf){"", t->adam[g].v, t->adam[g].state_numel};
        snprintf(out[n++].name, GM_CKPT_NAME_LEN, "adam.%s.v", GROUP_NAMES[g]);
    }
    if (t->has_muon) out[n++] = (state_buf){"muon.buf", t->muon.buf, t->muon.state_numel};
    return n;
}

// A backend buffer copied into fresh host memory (NULL + gm_fail when out of memory).
static gm_real *download_new(const gm_backend *be, const gm_real *src, size_t numel) {
    gm_real *h = malloc((numel ? numel : 1) * sizeof *h);
    if (!h) return gm_fail("trainer: out of host memory for %zu elements", numel), NULL;
    be->download(be, h, src, numel * sizeof *h);
    return h;
}

static int save_checkpoint(trainer *t, int step) {
    if (t->comm->rank != 0) return 0;
    gm_ckpt_section s[MAX_SECTIONS];
    state_buf bufs[MAX_SECTIONS];
    gm_real *host[MAX_SECTIONS] = {0};
    int n = 0, nb = state_bufs(t, bufs), rc = 0;
    long long step_ll = step;
    gm_loader_state ls = gm_loader_get_state(&t->train);
    char tnames[NGROUPS][GM_CKPT_NAME_LEN];
    s[n++] = (gm_ckpt_section){"config", t->config_core, strlen(t->config_core)};
    s[n++] = (gm_ckpt_section){"step", &step_ll, sizeof step_ll};
    s[n++] = (gm_ckpt_section){"loader", &ls, sizeof ls};
    for (int g = 0; g < NGROUPS; g++) {
        if (!t->has_adam[g]) continue;
        snprintf(tnames[g], GM_CKPT_NAME_LEN, "adam.%s.t", GROUP_NAMES[g]);
        s[n++] = (gm_ckpt_section){tnames[g], &t->adam[g].t, sizeof t->adam[g].t};
    }
    for (int i = 0; i < nb && rc == 0; i++) {
        if (!(host[i] = download_new(t->be, bufs[i].buf, bufs[i].numel))) rc = -1;
        else s[n++] = (gm_ckpt_section){bufs[i].name, host[i], bufs[i].numel * sizeof(gm_real)};
    }
    if (rc == 0 && t->be->sync(t->be)) rc = -1;
    if (rc == 0) rc = gm_ckpt_write(t->ckpt_path, s, n);
    for (int i = 0; i < nb; i++) free(host[i]);
    return rc;
}

static int restore(void *dst, const gm_ckpt *c, const char *name, size_t bytes) {
    const void *p = gm_ckpt_get(c, name, bytes);
    if (!p) return -1;
    memcpy(dst, p, bytes);
    return 0;
}

static int load_checkpoint(trainer *t, const char *path, int *step) {
    gm_ckpt c;
    if (gm_ckpt_read(&c, path)) return -1;
    size_t n;
    const char *cfg = gm_ckpt_get_any(&c, "config", &n);
    int rc = 0;
    if (!cfg) rc = -1;
    else if (n != strlen(t->config_core) || memcmp(cfg, t->config_core, n) != 0)
        rc = gm_fail("%s: written by a different configuration (preset, shapes or hyperparameters differ); resume needs the same flags", path);
    long long step_ll = 0;
    gm_loader_state ls;
    if (rc == 0) rc = restore(&step_ll, &c, "step", sizeof step_ll) || restore(&ls, &c, "loader", sizeof ls);
    for (int g = 0; rc == 0 && g < NGROUPS; g++) {
        if (!t->has_adam[g]) continue;
        char name[GM_CKPT_NAME_LEN];
        snprintf(name, sizeof name, "adam.%s.t", GROUP_NAMES[g]);
        rc = restore(&t->adam[g].t, &c, name, sizeof t->adam[g].t);
    }
    state_buf bufs[MAX_SECTIONS];
    int nb = state_bufs(t, bufs);
    for (int i = 0; rc == 0 && i < nb; i++) {
        const void *p = gm_ckpt_get(&c, bufs[i].name, bufs[i].numel * sizeof(gm_real));
        if (!p) rc = -1;
        else t->be->upload(t->be, bufs[i].buf, p, bufs[i].numel * sizeof(gm_real));
    }
    if (rc == 0 && (step_ll < 0 || step_ll > t->rc->steps)) rc = gm_fail("%s: step %lld outside this run's %d steps", path, step_ll, t->rc->steps);
    if (rc == 0 && gm_loader_set_state(&t->train, ls)) rc = gm_fail("%s: %s", path, gm_error());
    gm_ckpt_close(&c);
    *step = (int)step_ll;
    return rc;
}

// ---- logging -------------------------------------------------------------------------------

static int open_log(trainer *t) {
    const gm_run_config *rc = t->rc;
    if (t->comm->rank != 0) return gm_jsonl_open(&t->log, NULL, "a");
    if (gm_mkdir_p(rc->out_dir)) return gm_fail("--out_dir: %s", gm_error());
    char path[600];
    snprintf(path, sizeof path, "%s/log.jsonl", rc->out_dir);
    if (gm_jsonl_open(&t->log, path, rc->resume[0] ? "a" : "w")) return -1;
    char *cfg = gm_run_config_json(rc), *hw = gm_hardware_json();
    gm_jsonl_begin(&t->log);
    gm_jsonl_str(&t->log, "event", "start");
    gm_jsonl_raw(&t->log, "config", cfg);
    gm_jsonl_str(&t->log, "git_commit", gm_build_commit);
    gm_jsonl_raw(&t->log, "hardware", hw);
    gm_jsonl_int(&t->log, "world_size", t->comm->world);
    gm_jsonl_str(&t->log, "comm", t->comm->ops->name);
    gm_jsonl_str(&t->log, "precision", GM_REAL_NAME);
    gm_jsonl_str(&t->log, "source", gm_build_source);
    int r = gm_jsonl_end(&t->log);
    free(cfg);
    free(hw);
    return r;
}

// ---- the loop ------------------------------------------------------------------------------

static int validate(trainer *t, double *loss) {
    const gm_config *c = &t->model.cfg;
    gm_loader_reset(&t->val);
    double sum = 0;
    for (int i = 0; i < t->val_steps; i++) {
        gm_loader_next(&t->val, t->x, t->y);
        double l = gm_model_forward(&t->model, t->x, t->y, c->batch, c->seq_len);
        if (isnan(l)) return -1;
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
    if (gm_mkdir_p(dir)) return -1;
    const int g = GM_GROUP_MATRIX - 1;
    for (int i = 0; i < t->nviews[g]; i++) {
        const gm_opt_view *v = &t->views[g][i];
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

static int train_step(trainer *t, int s, double *loss) {
    const gm_run_config *rc = t->rc;
    const gm_config *c = &t->model.cfg;
    gm_model_zero_grad(&t->model);
    if (rc->batch0_twice && s == 1) gm_loader_reset(&t->train);
    double sum = 0;
    for (int micro = 0; micro < rc->grad_accum; micro++) {
        gm_loader_next(&t->train, t->x, t->y);
        double l = gm_model_forward(&t->model, t->x, t->y, c->batch, c->seq_len);
        if (isnan(l) || gm_model_backward(&t->model, 1.0 / rc->grad_accum)) return gm_fail("step %d: %s", s, isnan(l) && !gm_error()[0] ? "loss is NaN" : gm_error());
        sum += l;
    }
    // The backward added the mean over the k micro-batches; average across ranks, once per step.
    gm_real *g = t->model.g;
    size_t n = t->model.params.total;
    if (gm_data_allreduce_mean(t->comm, t->be, g, n, real_dtype())) return -1;
    const int dump = s == rc->dump_at;
    if (dump && dump_matrices(t, g, NULL, "grad")) return -1;
    double mult = gm_lr_mult(&rc->lr, s);
    for (int grp = 0; grp < NGROUPS; grp++)
        if (t->has_adam[grp]) gm_adam_step(&t->adam[grp], t->model.p, g, mult);
    if (t->has_muon && gm_muon_step(&t->muon, t->model.p, g, mult, s, t->comm)) return -1;
    if (t->be->sync(t->be)) return gm_fail("step %d: optimizer: %s", s, gm_error());
    if (dump && t->has_muon && dump_matrices(t, t->muon.buf, t->muon.state_offset, "momentum")) return -1;
    gm_real mean = (gm_real)(sum / rc->grad_accum);
    if (gm_allreduce_mean(t->comm, &mean, 1, real_dtype())) return -1;
    *loss = mean;
    return 0;
}

// step_s: this step's wall time (train records; benchmarks read it, e.g. bench/peers.py).
static void log_record(trainer *t, const char *event, int s, double loss, double lr, double train_s, long long tokens,
                       double step_s) {
    gm_jsonl_begin(&t->log);
    gm_jsonl_str(&t->log, "event", event);
    gm_jsonl_int(&t->log, "step", s);
    gm_jsonl_int(&t->log, "tokens", tokens);
    gm_jsonl_num(&t->log, event[0] == 'v' ? "val_loss" : "train_loss", loss);
    if (event[0] != 'v') gm_jsonl_num(&t->log, "lr_mult", lr);
    gm_jsonl_num(&t->log, "train_time_s", train_s);
    if (event[0] != 'v') gm_jsonl_num(&t->log, "step_s", step_s);
    gm_jsonl_end(&t->log);
}

static void free_trainer(trainer *t) {
    for (int g = 0; g < NGROUPS; g++) {
        if (t->has_adam[g]) gm_adam_free(&t->adam[g]);
        free(t->views[g]);
    }
    if (t->has_muon) gm_muon_free(&t->muon);
    gm_loader_close(&t->train);
    gm_loader_close(&t->val);
    if (t->model.be) gm_model_free(&t->model);  // created only once the data checks passed
    gm_jsonl_close(&t->log);
    free(t->x);
    free(t->y);
    free(t->config_core);
}

size_t gm_train_params_len(const gm_run_config *rc, const gm_backend *be) {
    gm_model m;
    if (gm_model_create(&m, &rc->model, be)) return 0;
    size_t n = m.params.total;
    gm_model_free(&m);
    return n;
}

int gm_train(const gm_run_config *rc, gm_comm *comm, const gm_backend *be, int verbose, gm_train_result *res) {
    trainer t;
    memset(&t, 0, sizeof t);
    gm_train_result local = {0};
    if (!res) res = &local;
    t.rc = rc;
    t.be = be;
    if (!comm) {
        gm_comm_open(&t.single, "single", NULL, NULL, 0);
        comm = &t.single;
    }
    t.comm = comm;
    const gm_config *c = &rc->model;
    const int W = comm->world, B = c->batch, T = c->seq_len;
    int rc_ = 0;
    stop_requested = 0;
    t.config_core = config_core_json(rc);
    snprintf(t.ckpt_path, sizeof t.ckpt_path, "%s/ckpt.bin", rc->out_dir);
    // Every rank must run the same configuration on the same data.
    if (gm_comm_check_same(comm, "the resolved configuration", gm_hash_bytes(GM_HASH_INIT, t.config_core, strlen(t.config_core)))) goto fail;
    if (gm_val_steps(rc->val_tokens, B, T, W, &t.val_steps)) goto fail;
    if (gm_loader_open(&t.train, rc->train_data, B, T, comm->rank, W, c->vocab)) goto fail;
    if (gm_loader_open(&t.val, rc->val_data, B, T, comm->rank, W, c->vocab)) goto fail;
    if (gm_comm_check_same(comm, "the data files", gm_loader_hash(&t.train) ^ (gm_loader_hash(&t.val) * 31))) goto fail;
    t.x = malloc((size_t)B * T * sizeof *t.x);
    t.y = malloc((size_t)B * T * sizeof *t.y);
    if (!t.x || !t.y) {
        gm_fail("trainer: out of memory");
        goto fail;
    }
    if (gm_model_create(&t.model, c, be) || gm_model_init(&t.model, rc->seed, GM_INIT_RECORD)) goto fail;
    if (build_optimizers(&t)) goto fail;
    int start = 0;
    if (rc->resume[0] && load_checkpoint(&t, rc->resume, &start)) goto fail;
    if (open_log(&t)) goto fail;

    double train_s = 0, val_loss = NAN, last_print = -1e9;
    long long tokens = (long long)start * rc->grad_accum * W * B * T, timed_tokens = 0;
    uint64_t t_run = gm_now_ns();
    int s = start;
    for (;; s++) {
        int window = gm_config_window_blocks(c, s, rc->steps);
        gm_model_set_window(&t.model, window);
        if (s == rc->steps || (rc->val_every > 0 && s % rc->val_every == 0)) {
            if (validate(&t, &val_loss)) goto fail;
            log_record(&t, "val", s, val_loss, 0, train_s, tokens, 0);
            if (verbose && comm->rank == 0) printf("step %d/%d | val loss %.4f | train time %.1f s\n", s, rc->steps, val_loss, train_s);
        }
        if (s == rc->steps) break;
        uint64_t t0 = gm_now_ns();
        double loss = NAN;
        if (train_step(&t, s, &loss)) goto fail;
        double dt = gm_seconds_since(t0);
        long long step_tokens = (long long)rc->grad_accum * W * B * T;
        tokens += step_tokens;
        if (s - start >= UNTIMED_STEPS) train_s += dt, timed_tokens += step_tokens;
        if (res->train_loss) res->train_loss[s] = loss;
        double mult = gm_lr_mult(&rc->lr, s);
        log_record(&t, "train", s, loss, mult, train_s, tokens, dt);
        double now = gm_seconds_since(t_run);
        if (verbose && comm->rank == 0 && (now - last_print >= rc->log_every || s + 1 == rc->steps)) {
            last_print = now;
            char bar[21];
            int filled = (int)(20.0 * (s + 1) / rc->steps);
            for (int i = 0; i < 20; i++) bar[i] = i < filled ? '#' : '.';
            bar[20] = '\0';
            printf("step %d/%d [%s] | loss %.4f | lr x%.3f | window %d | %.0f tok/s\n", s + 1, rc->steps, bar, loss, mult,
                   window, train_s > 0 ? timed_tokens / train_s : step_tokens / dt);
            fflush(stdout);
        }
        if (rc->ckpt_every > 0 && (s + 1) % rc->ckpt_every == 0 && save_checkpoint(&t, s + 1)) goto fail;
        // A stop request is honoured by every rank at the same step.
        gm_real stop = stop_requested || (rc->halt_at > 0 && s + 1 == rc->halt_at) ? 1 : 0;
        if (W > 1 && gm_allreduce_mean(comm, &stop, 1, real_dtype())) goto fail;
        if (stop > 0 && s + 1 < rc->steps) {
            s++;
            break;
        }
    }
    if (rc->ckpt_every >= 0 && save_checkpoint(&t, s)) goto fail;
    {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        res->steps_done = s;
        res->final_val_loss = val_loss;
        res->train_seconds = train_s;
        res->tokens = tokens;
        res->tokens_per_s = train_s > 0 ? timed_tokens / train_s : 0;
        res->peak_rss_kb = ru.ru_maxrss;
        res->interrupted = s < rc->steps;
        if (res->params) {
            size_t n = res->params_len < t.model.params.total ? res->params_len : t.model.params.total;
            be->download(be, res->params, t.model.p, n * sizeof(gm_real));
        }
        gm_jsonl_begin(&t.log);
        gm_jsonl_str(&t.log, "event", res->interrupted ? "interrupted" : "end");
        gm_jsonl_int(&t.log, "step", s);
        gm_jsonl_num(&t.log, "final_val_loss", val_loss);
        gm_jsonl_num(&t.log, "train_time_s", train_s);
        gm_jsonl_num(&t.log, "tokens_per_s", res->tokens_per_s);
        gm_jsonl_int(&t.log, "peak_rss_kb", res->peak_rss_kb);
        gm_jsonl_end(&t.log);
    }
    goto done;
fail:
    rc_ = -1;
done:
    free_trainer(&t);
    if (comm == &t.single) gm_comm_close(&t.single);
    return rc_;
}
