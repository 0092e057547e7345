// Token shards in the llm.c / modded-nanogpt format, byte for byte:
//   header: 256 little-endian int32 = {magic 20240520, version 1, token count, 0...}
//   body:   `count` uint16 tokens
// Shards are memory-mapped; opening validates the header against the file size and, when a
// vocabulary size is given, every token id, so a bad file stops with one line naming it, and hashes
// the tokens (what a run reads of it: the header is checked against them, its other words are unused).
#ifndef GM_DATA_SHARD_H
#define GM_DATA_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"

#define GM_SHARD_MAGIC 20240520
#define GM_SHARD_VERSION 1
#define GM_SHARD_HEADER_INTS 256
#define GM_SHARD_HEADER_BYTES (GM_SHARD_HEADER_INTS * 4)

typedef struct {
    gm_mapping map;
    const uint16_t *tokens;  // (count,) points into the mapping
    size_t count;
    uint64_t content_hash;   // gm_hash_wide of the tokens: what a run's data fingerprint holds of the file
    char path[4096];
} gm_shard;

// vocab_size > 0: refuse any token id >= vocab_size. 0: skip the token scan.
int gm_shard_open(gm_shard *s, const char *path, int vocab_size);
void gm_shard_close(gm_shard *s);
// Write `count` tokens atomically (temp file + rename).
int gm_shard_write(const char *path, const uint16_t *tokens, size_t count);

#endif
