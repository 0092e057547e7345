#include "data/loader.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

static size_t step_tokens(const gm_loader *ld) { return (size_t)ld->world * ld->B * ld->T; }

int gm_loader_open(gm_loader *ld, const char *pattern, int B, int T, int rank, int world, int vocab_size) {
    memset(ld, 0, sizeof *ld);
    if (B <= 0 || T <= 0) return gm_fail("loader: batch %d x %d must be positive", B, T);
    if (world <= 0 || rank < 0 || rank >= world) return gm_fail("loader: rank %d out of range for world size %d", rank, world);
    glob_t g;
    int grc = glob(pattern, 0, NULL, &g);
    if (grc == GLOB_NOMATCH) {
        char cwd[4096];
        if (pattern[0] == '/' || !getcwd(cwd, sizeof cwd)) return gm_fail("%s: no shard matches this pattern", pattern);
        return gm_fail("%s: no shard matches this pattern (relative to the current folder %s)", pattern, cwd);
    }
    if (grc != 0) return gm_fail("%s: cannot expand pattern", pattern);
    ld->B = B;
    ld->T = T;
    ld->rank = rank;
    ld->world = world;
    ld->shards = calloc(g.gl_pathc, sizeof *ld->shards);
    if (!ld->shards) {
        globfree(&g);
        return gm_fail("loader: out of memory");
    }
    int rc = 0;
    for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
        rc = gm_shard_open(&ld->shards[i], g.gl_pathv[i], vocab_size);
        if (rc) break;
        ld->nshards++;
        if (ld->shards[i].count < step_tokens(ld) + 1)
            rc = gm_fail("%s: %zu tokens, fewer than one step of W*B*T+1 = %zu", g.gl_pathv[i], ld->shards[i].count, step_tokens(ld) + 1);
    }
    globfree(&g);
    if (rc) gm_loader_close(ld);
    return rc;
}

int gm_loader_shared(const gm_loader *a, const gm_loader *b, char *list, size_t len) {
    int n = 0;
    if (len) list[0] = '\0';
    for (int i = 0; i < a->nshards; i++) {
        struct stat sa, sb;
        if (stat(a->shards[i].path, &sa) != 0) continue;  // opened a moment ago; gone now is not a shared file
        for (int j = 0; j < b->nshards; j++) {
            if (stat(b->shards[j].path, &sb) != 0 || sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino) continue;
            size_t used = strlen(list);
            int same = !strcmp(a->shards[i].path, b->shards[j].path);
            snprintf(list + used, len - used, "%s%s%s%s%s", n ? ", " : "", a->shards[i].path, same ? "" : " (as ",
                     same ? "" : b->shards[j].path, same ? "" : ")");
            n++;
            break;
        }
    }
    return n;
}

void gm_loader_close(gm_loader *ld) {
    for (int i = 0; i < ld->nshards; i++) gm_shard_close(&ld->shards[i]);
    free(ld->shards);
    memset(ld, 0, sizeof *ld);
}

void gm_loader_reset(gm_loader *ld) {
    ld->shard = 0;
    ld->pos = 0;
}

// Past the current window: to the next one, or to the start of the next shard.
static void advance(gm_loader *ld) {
    ld->pos += step_tokens(ld);
    if (ld->pos + step_tokens(ld) + 1 > ld->shards[ld->shard].count) {
        ld->shard = (ld->shard + 1) % ld->nshards;
        ld->pos = 0;
    }
}

void gm_loader_next(gm_loader *ld, int32_t *x, int32_t *y) {
    size_t n = (size_t)ld->B * ld->T;
    const uint16_t *tok = ld->shards[ld->shard].tokens + ld->pos + (size_t)ld->rank * n;
    for (size_t i = 0; i < n; i++) {
        x[i] = tok[i];
        y[i] = tok[i + 1];
    }
    advance(ld);
}

void gm_loader_skip(gm_loader *ld, long long n) {
    for (long long i = 0; i < n; i++) advance(ld);
}

long long gm_loader_pass_steps(const gm_loader *ld) {
    // A window starting at pos is read while pos + W*B*T + 1 fits in the shard (gm_loader_next).
    long long steps = 0;
    for (int i = 0; i < ld->nshards; i++) steps += (long long)((ld->shards[i].count - 1) / step_tokens(ld));
    return steps;
}

gm_loader_state gm_loader_get_state(const gm_loader *ld) {
    gm_loader_state st = {ld->shard, (int64_t)ld->pos};
    return st;
}

int gm_loader_set_state(gm_loader *ld, gm_loader_state st) {
    if (st.shard < 0 || st.shard >= ld->nshards || st.pos < 0 ||
        (size_t)st.pos + step_tokens(ld) + 1 > ld->shards[st.shard].count)
        return gm_fail("loader: saved position (shard %lld, token %lld) does not fit these shards",
                       (long long)st.shard, (long long)st.pos);
    ld->shard = (int)st.shard;
    ld->pos = (size_t)st.pos;
    return 0;
}

int gm_val_steps(long long val_tokens, int B, int T, int world, int *steps) {
    long long per_step = (long long)world * B * T;
    if (val_tokens <= 0 || per_step <= 0 || val_tokens % per_step)
        return gm_fail("val_tokens %lld is not a positive multiple of world*B*T = %d*%d*%d = %lld", val_tokens, world, B, T, per_step);
    *steps = (int)(val_tokens / per_step);
    return 0;
}
