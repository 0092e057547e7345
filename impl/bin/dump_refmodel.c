// dump_refmodel --out=DIR: the inputs of the PyTorch reference data (refdata/gen/ref_model.py).
// For every preset at test scale, DIR/<preset>/ receives
//   meta.txt    the configuration (key = value), the init seed, the attention window in blocks
//               and an FNV-1a hash of the fp32 parameter buffer (the test's staleness check)
//   params.txt  one line per tensor: name rows cols offset (elements)
//   params.bin  the fp32 parameter buffer (test-mode init: every tensor non-zero)
//   tokens.bin  batch*seq_len + 1 int32 token ids (inputs = [0, N), targets = [1, N])
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cpu/cpu.h"
#include "base/args.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/io.h"
#include "base/rng.h"
#include "model/model.h"
#include "train/run_config.h"

enum { REF_SEED = 20240610, REF_WINDOW_BLOCKS = 2 };

static void dump(const char *root, const char *preset) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, preset);
    if (mkdir(dir, 0755) && errno != EEXIST) gm_die("%s: cannot create folder", dir);
    gm_config cfg;
    gm_model m;
    if (gm_preset_model(&cfg, preset, "test") || gm_model_create(&m, &cfg, gm_backend_cpu()) ||
        gm_model_init(&m, REF_SEED, GM_INIT_TEST))
        gm_die_last();
    // tokens: ~1 in 6 is EOT (documents shorter than a block), plus EOTs right at block edges
    int N = cfg.batch * cfg.seq_len;
    int32_t tokens[4096];
    if (N + 1 > 4096) gm_die("test scale too large for the token buffer");
    for (int i = 0; i <= N; i++) {
        uint32_t r = gm_rng_u32(REF_SEED, 1, (uint64_t)i);
        tokens[i] = r % 6 == 0 ? cfg.eot : (int32_t)(1 + (r >> 8) % (uint32_t)(cfg.vocab - 1));
    }
    if (cfg.attn_block > 0 && cfg.attn_block < N) tokens[cfg.attn_block] = tokens[2 * cfg.attn_block - 1] = cfg.eot;
    snprintf(path, sizeof path, "%s/tokens.bin", dir);
    if (gm_write_file_atomic(path, tokens, sizeof(int32_t) * (N + 1))) gm_die_last();
    snprintf(path, sizeof path, "%s/params.bin", dir);
    if (gm_write_file_atomic(path, m.p, sizeof(float) * m.params.total)) gm_die_last();

    char desc[4096];
    if (gm_config_describe(&cfg, desc, sizeof desc)) gm_die_last();
    gm_atomic_file af;
    snprintf(path, sizeof path, "%s/meta.txt", dir);
    if (gm_atomic_open(&af, path) ||
        gm_atomic_printf(&af, "%sseed = %d\nwindow_blocks = %d\nparams_fnv = %016llx\n", desc, REF_SEED,
                         cfg.window_start_tokens ? REF_WINDOW_BLOCKS : 0,
                         (unsigned long long)gm_hash_bytes(GM_HASH_INIT, m.p, sizeof(float) * m.params.total)) ||
        gm_atomic_commit(&af))
        gm_die_last();
    snprintf(path, sizeof path, "%s/params.txt", dir);
    if (gm_atomic_open(&af, path)) gm_die_last();
    for (int i = 0; i < m.params.n; i++) {
        const gm_view *v = &m.params.v[i];
        if (gm_atomic_printf(&af, "%s %lld %lld %zu\n", v->name, (long long)v->shape[0], (long long)v->shape[1],
                             v->offset))
            gm_die_last();
    }
    if (gm_atomic_commit(&af)) gm_die_last();
    gm_model_free(&m);
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    const char *out = NULL;
    for (int i = 1; i < argc;) {
        const char *key, *value;
        gm_arg_next(argc, argv, &i, &key, &value);
        if (strcmp(key, "out") == 0)
            out = value;
        else
            gm_die("--%s: unknown flag (dump_refmodel --out=DIR)", key);
    }
    if (!out) gm_die("--out: required (dump_refmodel --out=DIR)");
    if (sizeof(gm_real) != sizeof(float)) gm_die("dump_refmodel writes fp32: build it without GM_FP64");
    for (const char *const *p = gm_preset_names; *p; p++) dump(out, *p);
    return 0;
}
