#include "data/shard.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/hash.h"

// The format is little-endian; this project builds only for little-endian hosts (x86-64, arm64).
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "token shards are little-endian");

int gm_shard_open(gm_shard *s, const char *path, int vocab_size) {
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    if (gm_map_file(path, &s->map)) return -1;
    size_t len = s->map.len;
    int rc = 0;
    if (len == 0) {
        rc = gm_fail("%s: empty file (not a token shard)", path);
    } else if (len < GM_SHARD_HEADER_BYTES) {
        rc = gm_fail("%s: truncated header: %zu bytes, a shard header is %d bytes", path, len, GM_SHARD_HEADER_BYTES);
    } else {
        int32_t header[3];
        memcpy(header, s->map.data, sizeof header);
        size_t body = len - GM_SHARD_HEADER_BYTES;
        if (header[0] != GM_SHARD_MAGIC)
            rc = gm_fail("%s: bad magic number %d (expected %d)", path, header[0], GM_SHARD_MAGIC);
        else if (header[1] != GM_SHARD_VERSION)
            rc = gm_fail("%s: unsupported version %d (expected %d)", path, header[1], GM_SHARD_VERSION);
        else if (header[2] <= 0)
            rc = gm_fail("%s: header token count %d is not positive", path, header[2]);
        else if (body % 2)
            rc = gm_fail("%s: truncated: body of %zu bytes is not a whole number of uint16 tokens", path, body);
        else if ((size_t)header[2] != body / 2)
            rc = gm_fail("%s: header says %d tokens but the file holds %zu", path, header[2], body / 2);
        else {
            s->count = (size_t)header[2];
            s->tokens = (const uint16_t *)((const char *)s->map.data + GM_SHARD_HEADER_BYTES);
        }
    }
    for (size_t i = 0; rc == 0 && vocab_size > 0 && i < s->count; i++)
        if (s->tokens[i] >= vocab_size)
            rc = gm_fail("%s: token %u at index %zu is >= vocab size %d", path, s->tokens[i], i, vocab_size);
    if (rc == 0) s->content_hash = gm_hash_wide(s->tokens, s->count * sizeof *s->tokens);
    if (rc) gm_shard_close(s);
    return rc;
}

void gm_shard_close(gm_shard *s) {
    gm_unmap(&s->map);
    s->tokens = NULL;
    s->count = 0;
}

int gm_shard_write(const char *path, const uint16_t *tokens, size_t count) {
    if (count == 0 || count > INT32_MAX) return gm_fail("%s: cannot write a shard of %zu tokens", path, count);
    int32_t header[GM_SHARD_HEADER_INTS] = {GM_SHARD_MAGIC, GM_SHARD_VERSION, (int32_t)count};
    gm_atomic_file af;
    if (gm_atomic_open(&af, path)) return -1;
    if (gm_atomic_write(&af, header, sizeof header) || gm_atomic_write(&af, tokens, count * sizeof *tokens)) {
        gm_atomic_abort(&af);
        return -1;
    }
    return gm_atomic_commit(&af);
}
