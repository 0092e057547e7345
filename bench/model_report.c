// model_report [--reps=N] [--backend=cpu|cuda|guarded] [--device=N]: per preset, the parameter
// count at tiny and full scale (full beside the record's own count, refdata/records/PRESETS.md
// section 1) and the time of one forward and one forward + backward of a tiny-scale (B, T) batch on
// the backend named (median of N runs after one warm-up; each run ends with the loss read back, so
// a device's queued work is inside it). Prints a Markdown table; the backend (its name carries the
// precision) and threads are in its header.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/select.h"
#include "base/args.h"
#include "base/help.h"
#include "base/error.h"
#include "base/rng.h"
#include "base/timer.h"
#include "model/model.h"
#include "train/run_config.h"

static const struct {
    const char *preset;
    long long params;
} record_params[] = {{"adamw", 123532032},  {"muon-v1", 123532032},     {"muon-v2", 123532032},
                     {"untied", 162201600}, {"value-embed", 394002486}, {"softcap", 275742772}};

static size_t count_params(const char *preset, const char *scale) {
    gm_config cfg;
    gm_table t;
    gm_param_index ix;
    if (gm_preset_model(&cfg, preset, scale) || gm_params_build(&cfg, &t, &ix)) gm_die_last();
    size_t n = t.count;
    gm_table_free(&t);
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Median milliseconds of `reps` runs of forward (and backward when `bwd`).
static double time_ms(gm_model *m, const int32_t *tok, int reps, int bwd) {
    double *t = malloc(sizeof(double) * reps);
    for (int r = -1; r < reps; r++) {
        uint64_t t0 = gm_now_ns();
        const int B = m->cfg.batch, T = m->cfg.seq_len;
        if (isnan(bwd ? gm_model_forward_backward(m, tok, tok + 1, B, T, 1.0) : gm_model_forward(m, tok, tok + 1, B, T)))
            gm_die_last();
        if (r >= 0) t[r] = (double)(gm_now_ns() - t0) / 1e6;
    }
    qsort(t, reps, sizeof(double), cmp_double);
    double med = t[reps / 2];
    free(t);
    return med;
}

static void usage(void) {
    printf("usage: model_report [--reps=N] [--backend=cpu|cuda|guarded] [--device=N]\n"
           "  Per preset: parameter counts at tiny and full scale and the time of one forward and one\n"
           "  forward + backward of a tiny-scale batch; a Markdown table on stdout.\n"
           "  --reps      timed runs per preset, the median reported (default 5)\n"
           "  --backend   backend to time: cpu, cuda or guarded (default cpu)\n"
           "  --device    CUDA device of --backend=cuda (default 0)\n");
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    if (gm_help_requested(argc, argv)) return usage(), 0;
    int reps = 5, device = 0;
    const char *backend = "cpu";
    for (int i = 1; i < argc;) {
        const char *key, *value;
        gm_arg_next(argc, argv, &i, &key, &value);
        if (strcmp(key, "reps") == 0)
            reps = (int)gm_arg_int(key, value, 1, 1000);
        else if (strcmp(key, "backend") == 0)
            backend = value;
        else if (strcmp(key, "device") == 0)
            device = (int)gm_arg_int(key, value, 0, 1023);
        else
            gm_die("--%s: unknown flag (model_report [--reps=N] [--backend=cpu|cuda|guarded] [--device=N])", key);
    }
    const gm_backend *be = gm_backend_open(backend, device);
    if (!be) gm_die_last();
    printf("# Model report: parameters and step time (backend %s, %d OpenMP threads, median of %d)\n\n", be->name,
           omp_get_max_threads(), reps);
    printf("| preset | params tiny | params full | record full | match | tiny B x T | fwd ms | fwd+bwd ms |\n");
    printf("|---|---:|---:|---:|---|---|---:|---:|\n");
    for (size_t p = 0; p < sizeof record_params / sizeof record_params[0]; p++) {
        const char *name = record_params[p].preset;
        size_t tiny = count_params(name, "tiny"), full = count_params(name, "full");
        gm_config cfg;
        gm_model m;
        if (gm_preset_model(&cfg, name, "tiny") || gm_model_create(&m, &cfg, be) ||
            gm_model_init(&m, 1, GM_INIT_RECORD))
            gm_die_last();
        int N = cfg.batch * cfg.seq_len;
        int32_t *tok = malloc(sizeof(int32_t) * (N + 1));
        for (int i = 0; i <= N; i++) {
            uint32_t r = gm_rng_u32(7, 1, (uint64_t)i);
            tok[i] = r % 200 == 0 ? cfg.eot : (int32_t)(r >> 8) % cfg.vocab;
        }
        gm_model_set_window(&m, gm_config_window_blocks(&cfg, 1, 2));  // mid-schedule window
        double f = time_ms(&m, tok, reps, 0), fb = time_ms(&m, tok, reps, 1);
        printf("| %s | %zu | %zu | %lld | %s | %d x %d | %.1f | %.1f |\n", name, tiny, full, record_params[p].params,
               (long long)full == record_params[p].params ? "yes" : "NO", cfg.batch, cfg.seq_len, f, fb);
        free(tok);
        gm_model_free(&m);
    }
    return 0;
}
