// Batches of (B, T) next-token pairs for rank r of W, as the speedrun's distributed loader cuts
// them: rank r reads the B*T+1 tokens starting at pos + r*B*T, then every rank advances pos by
// W*B*T; when the next step would not fit, all ranks move to the next shard (wrapping to the
// first) and start again at 0. The union over ranks of one step is one contiguous W*B*T window,
// so W ranks x B see exactly the tokens of 1 rank x W*B.
#ifndef GM_DATA_LOADER_H
#define GM_DATA_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "data/shard.h"

typedef struct {
    gm_shard *shards;
    int nshards;
    int B, T, rank, world;
    int shard;   // current shard index
    size_t pos;  // start of the current step's W*B*T window in that shard
} gm_loader;

// Position of a loader in its stream, saved in checkpoints for exact resume.
typedef struct {
    int64_t shard;
    int64_t pos;
} gm_loader_state;

// `pattern` is a glob (e.g. "data/gcide/train_*.bin"), expanded in sorted order. Every shard is
// validated (and its tokens checked against vocab_size when > 0) and must hold at least
// W*B*T+1 tokens.
int gm_loader_open(gm_loader *ld, const char *pattern, int B, int T, int rank, int world, int vocab_size);
void gm_loader_close(gm_loader *ld);
// x, y: (B, T) token ids; y is x shifted by one token.
void gm_loader_next(gm_loader *ld, int32_t *x, int32_t *y);
// Move past n batches without reading them (where a run stands after n gm_loader_next calls).
void gm_loader_skip(gm_loader *ld, long long n);
void gm_loader_reset(gm_loader *ld);
gm_loader_state gm_loader_get_state(const gm_loader *ld);
int gm_loader_set_state(gm_loader *ld, gm_loader_state st);

// The shards of `a` that are also shards of `b`, as files (device and inode: a link or another
// spelling of a path is the same file), listed into `list` as "a_path" or "a_path (as b_path)",
// comma-separated (cut short to fit); returns how many.
int gm_loader_shared(const gm_loader *a, const gm_loader *b, char *list, size_t len);

// Steps of W*B*T tokens the shards give before the stream wraps around to the first shard.
long long gm_loader_pass_steps(const gm_loader *ld);

// Validation: a fixed number of tokens from the start of the val stream, the same tokens for
// every world size. Requires val_tokens % (W*B*T) == 0; gm_val_steps gives the number of batches.
int gm_val_steps(long long val_tokens, int B, int T, int world, int *steps);

#endif
