// FNV-1a, the one byte hash of the project: start-up consistency checks across ranks, checkpoint
// section checksums, data fingerprints (of the list of shards), per-tensor RNG streams and
// reference-data fingerprints.
// Chain calls to hash several buffers: h = gm_hash_bytes(gm_hash_bytes(GM_HASH_INIT, a, n), b, m).
#ifndef GM_BASE_HASH_H
#define GM_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GM_HASH_INIT 1469598103934665603ull

uint64_t gm_hash_bytes(uint64_t h, const void *data, size_t n);

// The same FNV-1a step on 64-bit words, in 4 interleaved lanes (bytes 32k..32k+7 feed lane 0, the
// next 8 lane 1, ...), the lanes and the tail of fewer than 32 bytes then hashed by gm_hash_bytes.
// For the content of data files: one multiply per 8 bytes in 4 independent chains reads every byte
// (any edit changes the value) at 7x gm_hash_bytes's speed: 0.04-0.055 s per 100 MB shard against
// 0.30-0.40 s (measured on 2 loaded cores; a run opening 103 FineWeb shards spends ~5 s, not ~35 s,
// beside the token-id scan that reads every page anyway).
uint64_t gm_hash_wide(const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
