// train: one training run of a preset.
//   build/train --preset NAME --scale full|small|tiny|test [--key=value ...]
// Under `mpirun -np W`, W ranks train one model (data parallel, sharded Muon).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/select.h"
#include "base/args.h"
#include "base/error.h"
#include "base/fields.h"
#include "base/runtime.h"
#include "dist/comm.h"
#include "train/host_memory.h"
#include "train/run_config.h"
#include "train/signals.h"
#include "train/trainer.h"

// The flags with the defaults of `preset` at `scale` (those given with --help, else make train's).
static void usage(const char *preset, const char *scale) {
    gm_run_config rc;
    if (gm_run_config_preset(&rc, preset, scale)) gm_die_last();
    char scales[128], presets[256];
    printf("usage: train --preset NAME --scale %s [--key=value ...]\n"
           "  presets: %s\n"
           "  Ctrl-C (SIGINT), SIGTERM, SIGHUP and a closed output pipe stop after the current step (or validation batch)\n"
           "  with a checkpoint (exit status 130) and print the command line that continues the run; under mpirun see\n"
           "  README, \"Training\".\n"
           "overrides: the defaults come from the preset and scale, here --preset=%s --scale=%s\n"
           "(`train --preset=NAME --scale=SCALE --help` shows another's; the resolved configuration is logged):\n",
           gm_names_join(gm_scale_names, "|", scales, sizeof scales),
           gm_names_join(gm_preset_names, ", ", presets, sizeof presets), preset, scale);
    gm_run_config_help(&rc);
}

// One line on what will run; every field of the configuration goes to the log's first record.
static void print_summary(const gm_run_config *rc, const char *preset, const char *scale, const gm_comm *comm) {
    const gm_config *c = &rc->model;
    printf("train: %s/%s on %d rank(s) (%s, data channel %s), backend %s: %d layers, d_model %d, %d steps of %lld tokens "
           "(B %d x T %d x %d rank(s) x %d micro-batch(es)), out_dir %s (the whole configuration: first record of its log.jsonl)\n",
           preset, scale, comm->world, comm->ops->name, comm->data->name, rc->backend, c->n_layer, c->d_model, rc->steps,
           (long long)c->batch * c->seq_len * comm->world * rc->grad_accum, c->batch, c->seq_len, comm->world, rc->grad_accum,
           rc->out_dir);
}

// An argument as the shell reads it back: quoted unless it holds only characters the shell leaves alone.
static void print_shell_word(const char *a) {
    if (*a && strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=./:,@%") == strlen(a)) {
        fputs(a, stdout);
        return;
    }
    putchar('\'');
    for (; *a; a++) a[0] == '\'' ? fputs("'\\''", stdout) : putchar(*a);
    putchar('\'');
}

// After an interruption: this very command line with --resume naming the checkpoint just written
// (an earlier --resume and --overwrite left out: the run continues its own folder).
static void print_resume_line(int argc, char **argv, const gm_run_config *rc, int world) {
    printf("train: to continue: ");
    if (world > 1) printf("mpirun -np %d ", world);
    print_shell_word(argv[0]);
    for (int i = 1; i < argc;) {
        const char *k, *v;
        int from = i;
        gm_arg_next(argc, argv, &i, &k, &v);
        if (!strcmp(k, "resume") || !strcmp(k, "overwrite")) continue;
        for (int j = from; j < i; j++) putchar(' '), print_shell_word(argv[j]);
    }
    char flag[600];
    snprintf(flag, sizeof flag, "--resume=%s/ckpt.bin", rc->out_dir);
    putchar(' ');
    print_shell_word(flag);
    putchar('\n');
}

int main(int argc, char **argv) {
    gm_runtime_init(argc, argv);
    const char *preset = NULL, *scale = NULL;
    int help = 0;
    // Preset and scale first: the overrides apply on top of them, in the order given.
    for (int i = 1; i < argc;) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help = 1, i++;
            continue;
        }
        const char *k, *v;
        gm_arg_next(argc, argv, &i, &k, &v);
        if (!strcmp(k, "preset")) preset = v;
        else if (!strcmp(k, "scale")) scale = v;
    }
    if (help) {
        usage(preset ? preset : "softcap", scale ? scale : "tiny");
        return 0;
    }
    char known[256];
    if (!preset) gm_die("--preset: missing (%s)", gm_names_join(gm_preset_names, ", ", known, sizeof known));
    if (!scale) gm_die("--scale: missing (%s)", gm_names_join(gm_scale_names, ", ", known, sizeof known));
    gm_run_config rc;
    if (gm_run_config_preset(&rc, preset, scale)) gm_die_last();
    for (int i = 1; i < argc;) {
        const char *k, *v;
        gm_arg_next(argc, argv, &i, &k, &v);
        if (strcmp(k, "preset") && strcmp(k, "scale") && gm_run_config_set(&rc, k, v)) gm_die_last();
    }
    if (gm_run_config_finish(&rc)) gm_die_last();

    gm_comm comm;
    if (gm_comm_open(&comm, rc.comm, &argc, &argv, rc.comm_timeout)) gm_die_last();
    gm_signals_install();
    if (comm.rank == 0) {
        char note[512];
        print_summary(&rc, preset, scale, &comm);
        gm_signals_launcher_note(note, sizeof note);
        fputs(note, stdout);
    }
    // Host backends: what the process will fill and map (the backend's plan and the host plan beyond
    // it) must fit in what it may use, checked before anything is created. The CUDA backend's
    // buffers are device memory, which these limits do not cover.
    const int host_backend = strcmp(rc.backend, "cuda") != 0;
    char memory_why[320];
    if (gm_train_resolve_memory(&rc, comm.world, comm.rank, 0, memory_why, sizeof memory_why))
        gm_die("rank %d: %s", comm.rank, gm_error());
    gm_mem_plan plan;
    gm_host_plan host;
    if (gm_train_memory_plan(&rc, comm.world, comm.rank, &plan) || gm_train_host_plan(&rc, &host))
        gm_die("rank %d: %s", comm.rank, gm_error());
    const double filled = (double)plan.total + host.filled.total, mapped = filled + host.mapped.total;
    if (rc.plan_memory) {  // nothing allocated, no data read
        if (comm.rank == 0) {
            char title[256];
            snprintf(title, sizeof title, "%s/%s, B = %d, T = %d per rank, rank 0 of %d, %s", preset, scale,
                     rc.model.batch, rc.model.seq_len, comm.world, GM_REAL_NAME);
            gm_mem_plan_print(&plan, title, GM_MEM_BUDGET_BYTES, stdout);
            printf("%s\n", memory_why);
            if (host_backend) {
                gm_mem_plan_print(&host.filled, "host memory the process fills beyond the backend's", 0, stdout);
                gm_mem_plan_print(&host.mapped, "address space the process maps beyond that, mostly untouched", 0, stdout);
                gm_host_memory lim = gm_host_memory_limit();
                char limits[2][256];
                for (int k = 0; k < 2; k++) {
                    const gm_host_limit *l = k ? &lim.mapped : &lim.filled;
                    snprintf(limits[k], sizeof limits[k], isinf(l->bytes) ? "%s" : "%s: %.3f GB", l->what, l->bytes / 1e9);
                }
                printf("host: %.3f GB filled (held against %s), %.3f GB mapped (held against %s)\n", filled / 1e9, limits[0],
                       mapped / 1e9, limits[1]);
            }
        }
        gm_comm_close(&comm);
        return 0;
    }
    if (host_backend) {
        const gm_host_memory lim = gm_host_memory_limit();
        double need;
        const gm_host_limit *l = gm_host_over_limit(&lim, (double)plan.total, &host, &need);
        if (l) {
            const int over_filled = l == &lim.filled;
            char threads[160] = "";
            if (!over_filled)  // each thread maps 200 MiB, of which it fills a few
                snprintf(threads, sizeof threads, ", and so does each OpenMP thread fewer (OMP_NUM_THREADS; %.2f GB of address space each)",
                         (GM_OPENBLAS_BUFFER_BYTES + GM_MALLOC_ARENA_BYTES + gm_thread_stack_bytes()) / 1e9);
            gm_die("rank %d: memory plan: this run needs %.2f GB of %s (B = %d, T = %d per rank, %d OpenMP thread(s); --plan_memory=1 "
                   "lists it), above %s: %.2f GB; a smaller --batch or --seq_len needs less%s",
                   comm.rank, need / 1e9, over_filled ? "host memory" : "address space", rc.model.batch,
                   rc.model.seq_len, omp_get_max_threads(), l->what, l->bytes / 1e9, threads);
        }
    }
    const gm_backend *be = gm_backend_open(rc.backend, rc.device);
    // gm_die flushes stdout first, so the error is the last line; exit without MPI_Finalize makes
    // mpirun stop the other ranks.
    if (!be) gm_die("rank %d: %s", comm.rank, gm_error());
    gm_train_result res = {0};
    if (gm_train(&rc, &comm, be, 1, &res)) gm_die("rank %d: %s", comm.rank, gm_error());
    if (comm.rank == 0) {
        char val[96], speed[96];
        if (res.val_step < 0) snprintf(val, sizeof val, "no validation yet");
        else snprintf(val, sizeof val, "%s val loss %.4f (step %d)", res.val_step == rc.steps ? "final" : "last", res.final_val_loss, res.val_step);
        if (res.tokens_per_s > 0) snprintf(speed, sizeof speed, "%.0f tokens/s (steps after the first 10)", res.tokens_per_s);
        else snprintf(speed, sizeof speed, "speed not measured (the first 10 steps are warm-up)");
        // A run that got here wrote its checkpoint at the end, unless --ckpt_every=-1 wrote none
        // (then a ckpt.bin in the folder, if any, is an older run's: not named).
        char ckpt[600];
        if (rc.ckpt_every < 0) snprintf(ckpt, sizeof ckpt, "no checkpoint written (--ckpt_every=-1)");
        else snprintf(ckpt, sizeof ckpt, "checkpoint %s/ckpt.bin", rc.out_dir);
        printf("train: %s after %d steps: %s, %s, peak RSS %.1f MiB, log %s/log.jsonl, %s\n",
               res.interrupted ? "interrupted" : "done", res.steps_done, val, speed, res.peak_rss_kb / 1024.0, rc.out_dir,
               ckpt);
    }
    if (comm.rank == 0 && res.interrupted) print_resume_line(argc, argv, &rc, comm.world);
    gm_comm_close(&comm);
    return res.interrupted ? 130 : 0;
}
