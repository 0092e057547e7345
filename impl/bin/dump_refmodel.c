// dump_refmodel --out=DIR: the inputs of the PyTorch reference data (refdata/gen/ref_model.py).
// For every preset at test scale, DIR/<preset>/ receives
//   meta.txt    the configuration (key = value), the init seed, the attention window in blocks
//               and an FNV-1a hash of the fp32 parameter buffer (the test's staleness check)
//   params.txt  one line per tensor: name rows cols offset (elements)
//   params.bin  the fp32 parameter buffer (test-mode init: every tensor non-zero)
//   tokens.bin  batch*seq_len + 1 int32 token ids (inputs = [0, N), targets = [1, N])
// and DIR/rotary_bf16.txt lists "head_dim base" of every preset and scale whose rotary
// frequencies are rounded to bf16 (refdata/gen/rotary_ref.py computes them with torch, and
// rotary_eager_ref.py the tables eager torch builds from them).
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

// Document [start, start + len): an EOT at start, none inside, and the next one right after.
static void put_doc(const gm_config *cfg, int32_t *tokens, int start, int len) {
    tokens[start] = cfg->eot;
    for (int i = start + 1; i < start + len; i++)
        if (tokens[i] == cfg->eot) tokens[i] = (cfg->eot + 1) % cfg->vocab;
    tokens[start + len] = cfg->eot;
}

// Random ids, about 1 in 6 an EOT (documents shorter than a block), plus the documents that make
// the document and window masks matter (block b, window w = REF_WINDOW_BLOCKS):
//   row 0: one document of (w + 1.5) b tokens starting mid-block, so it spans w + 2 blocks and its
//          queries lose keys under window w - 1, w and w + 1 alike: three different outputs;
//   row 1: a document of b/2 tokens starting on a block edge, and one of b/2 straddling the next.
static void make_tokens(const gm_config *cfg, int32_t *tokens) {
    int N = cfg->batch * cfg->seq_len, T = cfg->seq_len, b = cfg->attn_block;
    for (int i = 0; i <= N; i++) {
        uint32_t r = gm_rng_u32(REF_SEED, 1, (uint64_t)i);
        tokens[i] = r % 6 == 0 ? cfg->eot : (int32_t)(1 + (r >> 8) % (uint32_t)(cfg->vocab - 1));
    }
    if (!cfg->doc_mask) return;
    int start = b / 4, len = (REF_WINDOW_BLOCKS + 1) * b + b / 2;
    if (cfg->batch < 2 || start + len >= T || 3 * b >= T || b < 4)
        gm_die("%s: test scale (batch %d, seq_len %d, attn_block %d) too small for the mask documents", cfg->name,
               cfg->batch, T, b);
    put_doc(cfg, tokens, start, len);
    put_doc(cfg, tokens, T + b, b / 2);
    put_doc(cfg, tokens, T + 2 * b - b / 4, b / 2);
}

static void dump(const char *root, const char *preset) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, preset);
    if (mkdir(dir, 0755) && errno != EEXIST) gm_die("%s: cannot create folder", dir);
    gm_config cfg;
    gm_model m;
    if (gm_preset_model(&cfg, preset, "test") || gm_model_create(&m, &cfg, gm_backend_cpu()) ||
        gm_model_init(&m, REF_SEED, GM_INIT_TEST))
        gm_die_last();
    int N = cfg.batch * cfg.seq_len;
    int32_t tokens[4096];
    if (N + 1 > 4096) gm_die("test scale too large for the token buffer");
    make_tokens(&cfg, tokens);
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

// "head_dim base" of every preset and scale with rotary_bf16, each pair once.
static void dump_rotary_list(const char *root) {
    char path[4200];
    snprintf(path, sizeof path, "%s/rotary_bf16.txt", root);
    gm_atomic_file af;
    if (gm_atomic_open(&af, path)) gm_die_last();
    int seen_dim[64], n = 0;
    double seen_base[64];
    for (const char *const *p = gm_preset_names; *p; p++)
        for (const char *const *s = gm_scale_names; *s; s++) {
            gm_config cfg;
            if (gm_preset_model(&cfg, *p, *s)) gm_die_last();
            int dup = !cfg.rotary_bf16;
            for (int i = 0; i < n && !dup; i++) dup = seen_dim[i] == cfg.head_dim && seen_base[i] == cfg.rotary_base;
            if (dup) continue;
            if (n == 64) gm_die("%s: more than 64 rotary tables", path);
            seen_dim[n] = cfg.head_dim, seen_base[n++] = cfg.rotary_base;
            if (gm_atomic_printf(&af, "%d %.17g\n", cfg.head_dim, cfg.rotary_base)) gm_die_last();
        }
    if (gm_atomic_commit(&af)) gm_die_last();
}

static void usage(void) {
    printf(
        "usage: dump_refmodel --out=DIR\n"
        "  Writes the inputs of the PyTorch reference data (`make refdata` runs refdata/gen/make_refdata.sh):\n"
        "  DIR/<preset>/ meta.txt, params.txt, params.bin, tokens.bin for every preset at test scale, and\n"
        "  DIR/rotary_bf16.txt (head_dim and base of every preset and scale with rotary_bf16 = 1).\n"
        "  Needs the fp32 build.\n"
        "  --out       output folder, which must exist (required, no default)\n");
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    const char *out = NULL;
    for (int i = 1; i < argc;) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
        const char *key, *value;
        gm_arg_next(argc, argv, &i, &key, &value);
        if (strcmp(key, "out") == 0)
            out = value;
        else
            gm_die("--%s: unknown flag (see --help)", key);
    }
    if (!out) gm_die("--out: required (see --help)");
    if (sizeof(gm_real) != sizeof(float)) gm_die("dump_refmodel writes fp32: build it without GM_FP64");
    for (const char *const *p = gm_preset_names; *p; p++) dump(out, *p);
    dump_rotary_list(out);
    return 0;
}
