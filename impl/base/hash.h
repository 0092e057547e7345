// FNV-1a, the one byte hash of the project: start-up consistency checks across ranks, checkpoint
// section checksums, data fingerprints, per-tensor RNG streams and reference-data fingerprints.
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

#ifdef __cplusplus
}
#endif
#endif
