// The data a run reads, as its identity holds it (checkpoints, log.jsonl's start record): one line
// per shard, train shards first, each in the order the loader reads them:
//   "<role> <file bytes> <content hash: 16 hex digits> <path>\n"
// role "train" or "val", the hash gm_shard's content_hash (every token), the path as the pattern
// matched it. The FNV-1a hash of that text is the run's data fingerprint (16 hex digits in the log):
// any shard added, removed, renamed, resized or edited changes it.
#ifndef GM_DATA_MANIFEST_H
#define GM_DATA_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/short_list.h"
#include "data/loader.h"

// malloc'd; NULL + gm_fail when out of memory.
char *gm_data_manifest(const gm_loader *train, const gm_loader *val);
uint64_t gm_data_fingerprint(const char *manifest);
// What changed from the manifest `was` (was_len bytes, e.g. a checkpoint's section) to `now`, shard
// by shard, into l: "train shard <path> added", "... removed", "... resized (A -> B bytes)",
// "... content changed (same size)", or "the same shards in another order". Returns how many
// changed (0: the same data).
int gm_data_manifest_diff(const char *was, size_t was_len, const char *now, gm_short_list *l);

#endif
