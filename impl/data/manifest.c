#include "data/manifest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/hash.h"

// Appends one loader's lines to *text (*len used, *cap allocated); -1 when out of memory.
static int add_lines(char **text, size_t *len, size_t *cap, const gm_loader *ld, const char *role) {
    for (int i = 0; i < ld->nshards; i++) {
        const gm_shard *s = &ld->shards[i];
        size_t need = strlen(role) + strlen(s->path) + 64;
        if (*len + need > *cap) {
            size_t grown_cap = 2 * *cap + need;
            char *grown = realloc(*text, grown_cap);
            if (!grown) return -1;
            *text = grown, *cap = grown_cap;
        }
        *len += (size_t)snprintf(*text + *len, *cap - *len, "%s %zu %016" PRIx64 " %s\n", role, s->map.len, s->content_hash, s->path);
    }
    return 0;
}

char *gm_data_manifest(const gm_loader *train, const gm_loader *val) {
    size_t len = 0, cap = 0;
    char *text = NULL;
    if (add_lines(&text, &len, &cap, train, "train") || add_lines(&text, &len, &cap, val, "val") ||
        !(text = text ? text : calloc(1, 1))) {
        free(text);
        return gm_fail("data manifest: out of memory"), NULL;
    }
    return text;
}

uint64_t gm_data_fingerprint(const char *manifest) { return gm_hash_bytes(GM_HASH_INIT, manifest, strlen(manifest)); }

// One line of a manifest, as pointers into it (a line that does not parse keeps its whole text as
// the path, so that it shows in the message as what it is).
typedef struct {
    const char *role, *hash, *path;
    int role_len, hash_len, path_len;
    unsigned long long bytes;
} entry;

// The line at *p (up to end), and *p moved past it; 0 at the end.
static int next_entry(const char **p, const char *end, entry *e) {
    if (*p >= end) return 0;
    const char *line = *p, *nl = memchr(line, '\n', (size_t)(end - line));
    const char *stop = nl ? nl : end;
    *p = nl ? nl + 1 : end;
    *e = (entry){line, "", line, 0, 0, (int)(stop - line), 0};
    const char *sp1 = memchr(line, ' ', (size_t)(stop - line));
    if (!sp1) return 1;
    char *after;
    unsigned long long bytes = strtoull(sp1 + 1, &after, 10);
    if (after == sp1 + 1 || after + 18 > stop || after[0] != ' ' || after[17] != ' ') return 1;
    *e = (entry){line, after + 1, after + 18, (int)(sp1 - line), 16, (int)(stop - after - 18), bytes};
    return 1;
}

static int same_shard(const entry *a, const entry *b) {
    return a->role_len == b->role_len && !memcmp(a->role, b->role, (size_t)a->role_len) && a->path_len == b->path_len &&
           !memcmp(a->path, b->path, (size_t)a->path_len);
}

// The entry of `list` (up to end) for e's shard; 0 when none.
static int find(const char *list, const char *end, const entry *e, entry *found) {
    for (const char *p = list; next_entry(&p, end, found);)
        if (same_shard(found, e)) return 1;
    return 0;
}

int gm_data_manifest_diff(const char *was, size_t was_len, const char *now, gm_short_list *l) {
    const char *was_end = was + was_len, *now_end = now + strlen(now), *p;
    entry e, f;
    int changes = 0;
    for (p = was; next_entry(&p, was_end, &e); changes++) {
        if (!find(now, now_end, &e, &f))
            gm_short_list_add(l, "%.*s shard %.*s removed", e.role_len, e.role, e.path_len, e.path);
        else if (f.bytes != e.bytes)
            gm_short_list_add(l, "%.*s shard %.*s resized (%llu -> %llu bytes)", e.role_len, e.role, e.path_len, e.path, e.bytes,
                              f.bytes);
        else if (f.hash_len != e.hash_len || memcmp(f.hash, e.hash, (size_t)e.hash_len))
            gm_short_list_add(l, "%.*s shard %.*s content changed (same size)", e.role_len, e.role, e.path_len, e.path);
        else
            changes--;
    }
    for (p = now; next_entry(&p, now_end, &e);)
        if (!find(was, was_end, &e, &f)) {
            gm_short_list_add(l, "%.*s shard %.*s added", e.role_len, e.role, e.path_len, e.path);
            changes++;
        }
    // The same shards listed in another order (glob sorts by the locale's collation): the loader
    // would read them in that order.
    if (changes == 0 && (was_len != (size_t)(now_end - now) || memcmp(was, now, was_len))) {
        gm_short_list_add(l, "the same shards in another order");
        changes = 1;
    }
    return changes;
}
