#include "train/checkpoint.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "base/hash.h"

static const char MAGIC[8] = {'G', 'M', 'C', 'K', 'P', 'T', 0, 1};
enum { VERSION = 1, HEADER = 8 + 4 + 4 + 8, SECTION_HEADER = GM_CKPT_NAME_LEN + 8 + 8 };

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

size_t gm_ckpt_file_bytes(const gm_ckpt_section *s, int n) {
    size_t total = HEADER;
    for (int i = 0; i < n; i++) total += SECTION_HEADER + pad8(s[i].bytes);
    return total;
}

int gm_ckpt_write(const char *path, const gm_ckpt_section *s, int n) {
    for (int i = 0; i < n; i++)
        if (strlen(s[i].name) >= GM_CKPT_NAME_LEN) return gm_fail("%s: section name '%s' too long", path, s[i].name);
    uint64_t total = gm_ckpt_file_bytes(s, n);
    gm_atomic_file af;
    if (gm_atomic_open(&af, path)) return -1;
    uint32_t version = VERSION, count = (uint32_t)n;
    int rc = gm_atomic_write(&af, MAGIC, 8) || gm_atomic_write(&af, &version, 4) || gm_atomic_write(&af, &count, 4) ||
             gm_atomic_write(&af, &total, 8);
    static const char zeros[8];
    for (int i = 0; rc == 0 && i < n; i++) {
        char name[GM_CKPT_NAME_LEN] = {0};
        strcpy(name, s[i].name);
        uint64_t bytes = s[i].bytes, hash = gm_hash_bytes(GM_HASH_INIT, s[i].data, s[i].bytes);
        rc = gm_atomic_write(&af, name, sizeof name) || gm_atomic_write(&af, &bytes, 8) || gm_atomic_write(&af, &hash, 8) ||
             gm_atomic_write(&af, s[i].data, s[i].bytes) || gm_atomic_write(&af, zeros, pad8(s[i].bytes) - s[i].bytes);
    }
    if (rc) {
        gm_atomic_abort(&af);
        return -1;
    }
    return gm_atomic_commit(&af);
}

int gm_ckpt_read(gm_ckpt *c, const char *path) {
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    if (gm_read_all(path, &c->blob, &c->len)) return -1;
    int rc = 0;
    uint32_t version = 0, count = 0;
    uint64_t total = 0;
    if (c->len < HEADER || memcmp(c->blob, MAGIC, 8) != 0) {
        rc = gm_fail("%s: not a checkpoint (bad magic)", path);
    } else {
        memcpy(&version, c->blob + 8, 4);
        memcpy(&count, c->blob + 12, 4);
        memcpy(&total, c->blob + 16, 8);
        if (version != VERSION)
            rc = gm_fail("%s: unsupported checkpoint version %u", path, version);
        else if (total != c->len)
            rc = gm_fail("%s: truncated or padded checkpoint: header says %llu bytes, file has %zu", path, (unsigned long long)total, c->len);
        else if (count > 4096)
            rc = gm_fail("%s: corrupt checkpoint (%u sections)", path, count);
    }
    if (rc == 0) c->sections = calloc(count ? count : 1, sizeof *c->sections);
    if (rc == 0 && !c->sections) rc = gm_fail("%s: out of memory", path);
    size_t at = HEADER;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        if (at + SECTION_HEADER > c->len) {
            rc = gm_fail("%s: corrupt checkpoint: section %u header past the end", path, i);
            break;
        }
        char *name = c->blob + at;
        uint64_t bytes, hash;
        memcpy(&bytes, c->blob + at + GM_CKPT_NAME_LEN, 8);
        memcpy(&hash, c->blob + at + GM_CKPT_NAME_LEN + 8, 8);
        if (memchr(name, 0, GM_CKPT_NAME_LEN) == NULL) {
            rc = gm_fail("%s: corrupt checkpoint: section %u has no name", path, i);
            break;
        }
        at += SECTION_HEADER;
        if (bytes > c->len - at || pad8(bytes) > c->len - at) {
            rc = gm_fail("%s: corrupt checkpoint: section '%s' runs past the end", path, name);
            break;
        }
        if (gm_hash_bytes(GM_HASH_INIT, c->blob + at, bytes) != hash) {
            rc = gm_fail("%s: corrupt checkpoint: section '%s' fails its checksum", path, name);
            break;
        }
        c->sections[i].name = name;
        c->sections[i].data = c->blob + at;
        c->sections[i].bytes = bytes;
        c->n++;
        at += pad8(bytes);
    }
    if (rc == 0 && at != c->len) rc = gm_fail("%s: corrupt checkpoint: %zu trailing bytes", path, c->len - at);
    if (rc) gm_ckpt_close(c);
    return rc;
}

void gm_ckpt_close(gm_ckpt *c) {
    free(c->blob);
    free(c->sections);
    c->blob = NULL;
    c->sections = NULL;
    c->n = 0;
}

const void *gm_ckpt_find(const gm_ckpt *c, const char *name, size_t *bytes) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->sections[i].name, name)) {
            *bytes = c->sections[i].bytes;
            return c->sections[i].data;
        }
    return NULL;
}

const void *gm_ckpt_get_any(const gm_ckpt *c, const char *name, size_t *bytes) {
    const void *p = gm_ckpt_find(c, name, bytes);
    if (!p) gm_fail("%s: checkpoint has no section '%s'", c->path, name);
    return p;
}

const void *gm_ckpt_get(const gm_ckpt *c, const char *name, size_t bytes) {
    size_t have;
    const void *p = gm_ckpt_get_any(c, name, &have);
    if (p && have != bytes) {
        gm_fail("%s: section '%s' holds %zu bytes, this run needs %zu (different preset or overrides?)", c->path, name, have, bytes);
        return NULL;
    }
    return p;
}
