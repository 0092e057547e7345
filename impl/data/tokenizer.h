// Our tokenizer: bytes, plus byte-pair merges learned from the corpus.
//   ids 0..255  the raw bytes
//   id  256     <|endoftext|>, the document separator (as GPT-2's 50256 in FineWeb shards)
//   ids 257..   merge i joins the pair merges[i] into id 257 + i
// With no merges it is the plain byte-level tokenizer (vocab 257). Text is first split into
// pieces (an optional leading space followed by a run of letters, of digits, or of other
// symbols; or a run of whitespace) and merges never cross a piece boundary, as in GPT-2.
// File format (text): "gptmuon-tokenizer 1\nvocab <V>\neot 256\nmerges <M>\n" then M lines "<a> <b>\n", read
// strictly: unsigned decimal fields, single spaces, every line ended, nothing after the last merge.
#ifndef GM_DATA_TOKENIZER_H
#define GM_DATA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#define GM_TOK_EOT 256
#define GM_TOK_FIRST_MERGE 257
// Longest token, in bytes. Training never makes a longer one (the corpus's longest is 32 bytes) and
// loading refuses one, so a file of a few hundred bytes cannot ask for gigabytes: each merge may
// double a length, and 30 chained merges would make a 2 GB token.
#define GM_TOK_MAX_BYTES 256

typedef struct {
    int vocab;           // 257 + nmerges
    int nmerges;
    int32_t (*merges)[2];  // (nmerges, 2)
    // Derived: bytes of every id, for decoding.
    char **bytes;
    int *nbytes;
    // Derived: pair -> merge rank, an open-addressing table of (pair key, rank + 1).
    uint64_t *pair_keys;
    int32_t *pair_rank;
    size_t pair_cap;
} gm_tokenizer;

void gm_tok_init_bytes(gm_tokenizer *t);
// Learn merges from `text` until the vocabulary has `vocab` ids (>= 257). Deterministic: ties
// between equally frequent pairs go to the smallest (a, b).
int gm_tok_train(gm_tokenizer *t, const char *text, size_t len, int vocab);
int gm_tok_save(const gm_tokenizer *t, const char *path);
int gm_tok_load(gm_tokenizer *t, const char *path);
void gm_tok_free(gm_tokenizer *t);
// Encode text (no EOT added). Returns the number of ids written, or -1 when `cap` is too small.
long gm_tok_encode(const gm_tokenizer *t, const char *text, size_t len, int32_t *out, size_t cap);
// Decode ids into out (NUL-terminated). Returns the byte length, or -1 when `cap` is too small or
// an id is out of range. EOT decodes as "<|endoftext|>".
long gm_tok_decode(const gm_tokenizer *t, const int32_t *ids, size_t n, char *out, size_t cap);
// Length of the piece that starts text[0] (the pre-tokenizer), > 0 when len > 0.
size_t gm_tok_piece_len(const char *text, size_t len);

#endif
