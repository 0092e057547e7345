#include "data/tokenizer.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/hash.h"
#include "base/io.h"

static const char EOT_TEXT[] = "<|endoftext|>";

// ---- pre-tokenizer --------------------------------------------------------------------------

enum { CLS_SPACE, CLS_ALPHA, CLS_DIGIT, CLS_OTHER };

static int char_class(unsigned char c) {
    if (isspace(c)) return CLS_SPACE;
    if (isalpha(c) || c >= 0x80) return CLS_ALPHA;  // bytes of UTF-8 sequences stay in words
    if (isdigit(c)) return CLS_DIGIT;
    return CLS_OTHER;
}

size_t gm_tok_piece_len(const char *text, size_t len) {
    if (len == 0) return 0;
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    // A single space attaches to the run that follows it (" word"); other whitespace runs alone.
    if (s[0] == ' ' && len > 1 && char_class(s[1]) != CLS_SPACE) i = 1;
    int cls = char_class(s[i]);
    if (cls == CLS_SPACE) {
        // Keep the last space of a whitespace run for the next word, as GPT-2 does.
        while (i < len && char_class(s[i]) == CLS_SPACE) i++;
        if (i < len && i > 1 && s[i - 1] == ' ') i--;
        return i;
    }
    while (i < len && char_class(s[i]) == cls) i++;
    return i;
}

// ---- pair table -----------------------------------------------------------------------------

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static int build_derived(gm_tokenizer *t) {
    t->bytes = calloc((size_t)t->vocab, sizeof *t->bytes);
    t->nbytes = calloc((size_t)t->vocab, sizeof *t->nbytes);
    t->pair_cap = 16;
    while (t->pair_cap < (size_t)t->nmerges * 2 + 16) t->pair_cap *= 2;
    t->pair_keys = calloc(t->pair_cap, sizeof *t->pair_keys);
    t->pair_rank = calloc(t->pair_cap, sizeof *t->pair_rank);
    if (!t->bytes || !t->nbytes || !t->pair_keys || !t->pair_rank) return gm_fail("tokenizer: out of memory");
    for (int i = 0; i < 256; i++) {
        t->bytes[i] = malloc(1);
        if (!t->bytes[i]) return gm_fail("tokenizer: out of memory");
        t->bytes[i][0] = (char)i;
        t->nbytes[i] = 1;
    }
    t->bytes[GM_TOK_EOT] = strdup(EOT_TEXT);
    if (!t->bytes[GM_TOK_EOT]) return gm_fail("tokenizer: out of memory");
    t->nbytes[GM_TOK_EOT] = (int)strlen(EOT_TEXT);
    for (int m = 0; m < t->nmerges; m++) {
        int a = t->merges[m][0], b = t->merges[m][1], id = GM_TOK_FIRST_MERGE + m;
        if (a < 0 || b < 0 || a >= id || b >= id || a == GM_TOK_EOT || b == GM_TOK_EOT)
            return gm_fail("tokenizer: merge %d joins ids (%d, %d) that do not exist before it", m, a, b);
        if (t->nbytes[a] + t->nbytes[b] > GM_TOK_MAX_BYTES)
            return gm_fail("tokenizer: merge %d joins ids (%d, %d) into a token of %d bytes, longer than %d", m, a, b,
                           t->nbytes[a] + t->nbytes[b], GM_TOK_MAX_BYTES);
        t->nbytes[id] = t->nbytes[a] + t->nbytes[b];
        t->bytes[id] = malloc((size_t)t->nbytes[id]);
        if (!t->bytes[id]) return gm_fail("tokenizer: out of memory");
        memcpy(t->bytes[id], t->bytes[a], (size_t)t->nbytes[a]);
        memcpy(t->bytes[id] + t->nbytes[a], t->bytes[b], (size_t)t->nbytes[b]);
        uint64_t key = pair_key(a, b);
        size_t h = mix64(key) & (t->pair_cap - 1);
        while (t->pair_rank[h] && t->pair_keys[h] != key) h = (h + 1) & (t->pair_cap - 1);
        if (t->pair_rank[h]) return gm_fail("tokenizer: merge %d repeats pair (%d, %d)", m, a, b);
        t->pair_keys[h] = key;
        t->pair_rank[h] = m + 1;
    }
    return 0;
}

static int merge_rank(const gm_tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = pair_key(a, b);
    size_t h = mix64(key) & (t->pair_cap - 1);
    while (t->pair_rank[h]) {
        if (t->pair_keys[h] == key) return t->pair_rank[h] - 1;
        h = (h + 1) & (t->pair_cap - 1);
    }
    return -1;
}

void gm_tok_free(gm_tokenizer *t) {
    if (t->bytes)
        for (int i = 0; i < t->vocab; i++) free(t->bytes[i]);
    free(t->bytes);
    free(t->nbytes);
    free(t->merges);
    free(t->pair_keys);
    free(t->pair_rank);
    memset(t, 0, sizeof *t);
}

void gm_tok_init_bytes(gm_tokenizer *t) {
    memset(t, 0, sizeof *t);
    t->vocab = GM_TOK_FIRST_MERGE;
    if (build_derived(t)) gm_die_last();
}

// ---- training -------------------------------------------------------------------------------

// A distinct piece of the corpus as a sequence of ids, with its number of occurrences.
typedef struct {
    int32_t *ids;
    int n;
    long long count;
} word;

typedef struct {
    uint64_t *keys;  // pair key, or for the word set: string hash
    long long *vals; // pair count, or word index + 1
    size_t cap, used;
} table;

static int table_init(table *tb, size_t cap) {
    tb->cap = cap;
    tb->used = 0;
    tb->keys = calloc(cap, sizeof *tb->keys);
    tb->vals = calloc(cap, sizeof *tb->vals);
    return (tb->keys && tb->vals) ? 0 : gm_fail("tokenizer: out of memory");
}

static void table_free(table *tb) {
    free(tb->keys);
    free(tb->vals);
}

// Slot of `key` in a pair-count table, or the empty slot where it belongs. A pair whose count
// falls to zero keeps its slot (key != 0 marks a taken slot).
static size_t pair_slot(table *tb, uint64_t key) {
    size_t h = mix64(key) & (tb->cap - 1);
    while (tb->keys[h] != 0) {
        if (tb->keys[h] == key) return h;
        h = (h + 1) & (tb->cap - 1);
    }
    return h;
}

static int pairs_add(table *tb, int32_t a, int32_t b, long long delta) {
    uint64_t key = pair_key(a, b) + 1;  // +1 so that no real key is 0
    size_t h = pair_slot(tb, key);
    if (tb->keys[h] == 0) {
        if ((tb->used + 1) * 2 > tb->cap) {
            // Grow and rehash.
            table big;
            if (table_init(&big, tb->cap * 2)) return -1;
            for (size_t i = 0; i < tb->cap; i++)
                if (tb->keys[i]) {
                    size_t j = pair_slot(&big, tb->keys[i]);
                    big.keys[j] = tb->keys[i];
                    big.vals[j] = tb->vals[i];
                    big.used++;
                }
            table_free(tb);
            *tb = big;
            h = pair_slot(tb, key);
        }
        tb->keys[h] = key;
        tb->used++;
    }
    tb->vals[h] += delta;
    return 0;
}

static uint64_t hash_bytes(const char *s, size_t n) {
    return mix64(gm_hash_bytes(GM_HASH_INIT, s, n) + n);
}

// Collect the distinct pieces of `text` with their counts. Pieces are compared byte by byte,
// so hash collisions cannot merge two different words.
static int collect_words(const char *text, size_t len, word **out, int *nout) {
    table set;
    if (table_init(&set, 1 << 16)) return -1;
    word *words = NULL;
    int n = 0, cap = 0;
    for (size_t i = 0; i < len;) {
        size_t pl = gm_tok_piece_len(text + i, len - i);
        const char *p = text + i;
        i += pl;
        uint64_t h = hash_bytes(p, pl) | 1;
        size_t slot = h & (set.cap - 1);
        int found = -1;
        while (set.keys[slot]) {
            if (set.keys[slot] == h) {
                word *w = &words[set.vals[slot] - 1];
                int same = w->n == (int)pl;
                for (int k = 0; same && k < w->n; k++) same = w->ids[k] == (unsigned char)p[k];
                if (same) {
                    found = (int)(set.vals[slot] - 1);
                    break;
                }
            }
            slot = (slot + 1) & (set.cap - 1);
        }
        if (found >= 0) {
            words[found].count++;
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            word *grown = realloc(words, (size_t)cap * sizeof *words);
            if (!grown) goto oom;
            words = grown;
        }
        words[n].ids = malloc(pl * sizeof(int32_t));
        if (!words[n].ids) goto oom;
        for (size_t k = 0; k < pl; k++) words[n].ids[k] = (unsigned char)p[k];
        words[n].n = (int)pl;
        words[n].count = 1;
        n++;
        set.keys[slot] = h;
        set.vals[slot] = n;
        if ((size_t)n * 2 > set.cap) {
            table big;
            if (table_init(&big, set.cap * 2)) goto oom;
            for (size_t s = 0; s < set.cap; s++)
                if (set.keys[s]) {
                    size_t j = set.keys[s] & (big.cap - 1);
                    while (big.keys[j]) j = (j + 1) & (big.cap - 1);
                    big.keys[j] = set.keys[s];
                    big.vals[j] = set.vals[s];
                }
            table_free(&set);
            set = big;
        }
    }
    table_free(&set);
    *out = words;
    *nout = n;
    return 0;
oom:
    table_free(&set);
    for (int k = 0; k < n; k++) free(words[k].ids);
    free(words);
    return gm_fail("tokenizer: out of memory collecting words");
}

int gm_tok_train(gm_tokenizer *t, const char *text, size_t len, int vocab) {
    memset(t, 0, sizeof *t);
    if (vocab < GM_TOK_FIRST_MERGE || vocab > 65536)
        return gm_fail("tokenizer: vocab %d out of range [%d, 65536] (ids are stored as uint16)", vocab, GM_TOK_FIRST_MERGE);
    if (len == 0) return gm_fail("tokenizer: empty corpus, nothing to train on");
    word *words = NULL;
    int nwords = 0;
    if (collect_words(text, len, &words, &nwords)) return -1;
    table pairs;
    int rc = table_init(&pairs, 1 << 16);
    for (int w = 0; rc == 0 && w < nwords; w++)
        for (int k = 0; rc == 0 && k + 1 < words[w].n; k++)
            rc = pairs_add(&pairs, words[w].ids[k], words[w].ids[k + 1], words[w].count);
    int want = vocab - GM_TOK_FIRST_MERGE;
    t->merges = malloc((size_t)(want > 0 ? want : 1) * sizeof *t->merges);
    int *bytes = malloc((size_t)vocab * sizeof *bytes);  // token lengths, to respect GM_TOK_MAX_BYTES
    if ((!t->merges || !bytes) && rc == 0) rc = gm_fail("tokenizer: out of memory");
    for (int i = 0; rc == 0 && i < GM_TOK_FIRST_MERGE; i++) bytes[i] = 1;  // EOT is never merged
    while (rc == 0 && t->nmerges < want) {
        // Most frequent pair whose token would not be too long; ties to the smallest key for determinism.
        long long best = 0;
        uint64_t best_key = 0;
        for (size_t i = 0; i < pairs.cap; i++)
            if (pairs.keys[i] && (pairs.vals[i] > best || (pairs.vals[i] == best && best > 0 && pairs.keys[i] < best_key)) &&
                bytes[(pairs.keys[i] - 1) >> 32] + bytes[(pairs.keys[i] - 1) & 0xffffffffu] <= GM_TOK_MAX_BYTES) {
                best = pairs.vals[i];
                best_key = pairs.keys[i];
            }
        if (best < 2) break;  // nothing left worth merging: the vocab ends smaller
        int32_t a = (int32_t)((best_key - 1) >> 32), b = (int32_t)((best_key - 1) & 0xffffffffu);
        int32_t id = GM_TOK_FIRST_MERGE + t->nmerges;
        bytes[id] = bytes[a] + bytes[b];
        t->merges[t->nmerges][0] = a;
        t->merges[t->nmerges][1] = b;
        t->nmerges++;
        // Apply the merge in every word that holds the pair, updating neighbouring pair counts.
        for (int w = 0; rc == 0 && w < nwords; w++) {
            word *wd = &words[w];
            int j = 0;
            for (int k = 0; k < wd->n; k++) {
                if (k + 1 < wd->n && wd->ids[k] == a && wd->ids[k + 1] == b) {
                    long long c = wd->count;
                    if (j > 0) rc |= pairs_add(&pairs, wd->ids[j - 1], a, -c) | pairs_add(&pairs, wd->ids[j - 1], id, c);
                    if (k + 2 < wd->n) rc |= pairs_add(&pairs, b, wd->ids[k + 2], -c) | pairs_add(&pairs, id, wd->ids[k + 2], c);
                    rc |= pairs_add(&pairs, a, b, -c);
                    wd->ids[j++] = id;
                    k++;
                } else {
                    wd->ids[j++] = wd->ids[k];
                }
            }
            wd->n = j;
        }
    }
    table_free(&pairs);
    free(bytes);
    for (int w = 0; w < nwords; w++) free(words[w].ids);
    free(words);
    t->vocab = GM_TOK_FIRST_MERGE + t->nmerges;
    if (rc == 0) rc = build_derived(t);
    if (rc) gm_tok_free(t);
    return rc;
}

// ---- file format ----------------------------------------------------------------------------

int gm_tok_save(const gm_tokenizer *t, const char *path) {
    gm_atomic_file af;
    if (gm_atomic_open(&af, path)) return -1;
    int rc = gm_atomic_printf(&af, "gptmuon-tokenizer 1\nvocab %d\neot %d\nmerges %d\n", t->vocab, GM_TOK_EOT, t->nmerges);
    for (int m = 0; rc == 0 && m < t->nmerges; m++) rc = gm_atomic_printf(&af, "%d %d\n", t->merges[m][0], t->merges[m][1]);
    if (rc) {
        gm_atomic_abort(&af);
        return -1;
    }
    return gm_atomic_commit(&af);
}

// The file read strictly, field by field: sscanf's %d skipped any blanks, took a sign, read a
// 33-bit number modulo 2^32, and read a number cut short by the end of the file as a whole one, so
// a truncated or damaged file loaded as another tokenizer.
typedef struct {
    const char *p, *end;
} cursor;

// `word` (may be empty), then an unsigned decimal number up to INT_MAX, then the character `then`.
// NULL when read, else the fault.
static const char *read_field(cursor *c, const char *word, char then, int *out) {
    size_t wl = strlen(word);
    if ((size_t)(c->end - c->p) < wl || memcmp(c->p, word, wl)) return "malformed";
    const char *d = c->p + wl;
    long long v = 0;
    for (; d < c->end && *d >= '0' && *d <= '9'; d++)
        if ((v = v * 10 + (*d - '0')) > INT_MAX) return "out of range (a number above 2147483647)";
    if (d == c->p + wl) return d == c->end ? "missing (the file ends there)" : "malformed";
    if (d == c->end) return "cut short (the file ends inside it)";
    if (*d != then) return "malformed";
    c->p = d + 1;
    *out = (int)v;
    return NULL;
}

int gm_tok_load(gm_tokenizer *t, const char *path) {
    memset(t, 0, sizeof *t);
    char *text;
    size_t len;
    if (gm_read_all(path, &text, &len)) return -1;
    cursor c = {text, text + len};
    int version, vocab, eot, nmerges;
    const char *fault;
    int rc = 0;
    if ((fault = read_field(&c, "gptmuon-tokenizer ", '\n', &version)) || (fault = read_field(&c, "vocab ", '\n', &vocab)) ||
        (fault = read_field(&c, "eot ", '\n', &eot)) || (fault = read_field(&c, "merges ", '\n', &nmerges)))
        rc = gm_fail("%s: not a tokenizer file (bad header: a line is %s)", path, fault);
    else if (version != 1)
        rc = gm_fail("%s: unsupported tokenizer version %d", path, version);
    else if (eot != GM_TOK_EOT || nmerges > 65536 - GM_TOK_FIRST_MERGE || vocab != GM_TOK_FIRST_MERGE + nmerges)
        rc = gm_fail("%s: inconsistent header (vocab %d, eot %d, merges %d)", path, vocab, eot, nmerges);
    else if ((size_t)nmerges > (size_t)(c.end - c.p) / 4)  // a merge line is at least "a b\n"
        rc = gm_fail("%s: header says %d merges, but the %zu bytes after it hold at most %zu merge lines", path, nmerges,
                     (size_t)(c.end - c.p), (size_t)(c.end - c.p) / 4);
    if (rc == 0) {
        t->merges = malloc((size_t)(nmerges ? nmerges : 1) * sizeof *t->merges);
        if (!t->merges) rc = gm_fail("%s: out of memory", path);
        for (int m = 0; rc == 0 && m < nmerges; m++)
            if ((fault = read_field(&c, "", ' ', &t->merges[m][0])) || (fault = read_field(&c, "", '\n', &t->merges[m][1])))
                rc = gm_fail("%s: merge line %d is %s", path, m + 1, fault);
        // What follows the last merge is no part of the tokenizer: a damaged or concatenated file.
        if (rc == 0 && c.p != c.end)
            rc = gm_fail("%s: %zu bytes after the last of its %d merges (a damaged file?)", path, (size_t)(c.end - c.p), nmerges);
        t->nmerges = nmerges;
        t->vocab = vocab;
        if (rc == 0 && build_derived(t)) rc = gm_fail("%s: %s", path, gm_error());
    }
    free(text);
    if (rc) gm_tok_free(t);
    return rc;
}

// ---- encode / decode ------------------------------------------------------------------------

// Apply merges to one piece, lowest rank first, in place; returns the new length.
static int encode_piece(const gm_tokenizer *t, int32_t *ids, int n) {
    while (n > 1) {
        int best = -1, at = -1;
        for (int k = 0; k + 1 < n; k++) {
            int r = merge_rank(t, ids[k], ids[k + 1]);
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                at = k;
            }
        }
        if (best < 0) break;
        int32_t id = GM_TOK_FIRST_MERGE + best;
        int32_t a = ids[at], b = ids[at + 1];
        int j = 0;
        for (int k = 0; k < n; k++) {
            if (k + 1 < n && ids[k] == a && ids[k + 1] == b) {
                ids[j++] = id;
                k++;
            } else {
                ids[j++] = ids[k];
            }
        }
        n = j;
    }
    return n;
}

long gm_tok_encode(const gm_tokenizer *t, const char *text, size_t len, int32_t *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t pl = gm_tok_piece_len(text + i, len - i);
        if (n + pl > cap) return -1;
        for (size_t k = 0; k < pl; k++) out[n + k] = (unsigned char)text[i + k];
        n += (size_t)encode_piece(t, out + n, (int)pl);
        i += pl;
    }
    return (long)n;
}

long gm_tok_decode(const gm_tokenizer *t, const int32_t *ids, size_t n, char *out, size_t cap) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab) return -1;
        size_t nb = (size_t)t->nbytes[ids[i]];
        if (len + nb + 1 > cap) return -1;
        memcpy(out + len, t->bytes[ids[i]], nb);
        len += nb;
    }
    if (cap == 0) return -1;
    out[len] = '\0';
    return (long)len;
}
