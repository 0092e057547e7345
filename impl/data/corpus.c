#include "data/corpus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "base/error.h"

// Read a whole file through zlib, which also reads uncompressed files unchanged.
static int read_gz(const char *path, char **out, size_t *len) {
    FILE *probe = fopen(path, "rb");
    if (!probe) return gm_fail("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int folder = fstat(fileno(probe), &st) == 0 && S_ISDIR(st.st_mode);
    fclose(probe);
    if (folder) return gm_fail("%s: is a folder, not a file", path);
    gzFile gz = gzopen(path, "rb");
    if (!gz) return gm_fail("%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : gm_fail("%s: out of memory", path);
    while (rc == 0) {
        if (n + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                rc = gm_fail("%s: out of memory", path);
                break;
            }
            buf = grown;
            cap *= 2;
        }
        unsigned want = (unsigned)((cap - n - 1) > (1u << 30) ? (1u << 30) : (cap - n - 1));
        int got = gzread(gz, buf + n, want);
        if (got < 0) {
            int zerr;
            rc = gm_fail("%s: corrupt compressed data: %s", path, gzerror(gz, &zerr));
        } else if (got == 0) {
            break;
        } else {
            n += (size_t)got;
        }
    }
    gzclose(gz);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

// "[1913 Webster]", "[PJC]", "[Webster 1913 Suppl.]": a whole line in brackets.
static int is_provenance(const char *s, size_t n) {
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    return n >= 2 && s[0] == '[' && s[n - 1] == ']' && memchr(s + 1, '[', n - 2) == NULL;
}

int gm_corpus_load_dictd(gm_corpus *c, const char *path) {
    memset(c, 0, sizeof *c);
    char *raw = NULL;
    size_t rawlen = 0;
    if (read_gz(path, &raw, &rawlen)) return -1;
    // dictfmt writes its own "00-database-..." entries first; a file without one, or with binary
    // bytes, is not a dictd database, whatever entries a text parser could find in it.
    const char *nul = memchr(raw, '\0', rawlen);
    if (nul) {
        size_t at = (size_t)(nul - raw);
        free(raw);
        return gm_fail("%s: not a dictd database (binary data: a NUL byte at offset %zu)", path, at);
    }
    // Output is never longer than input plus one NUL per document.
    c->text = malloc(rawlen + rawlen / 2 + 2);
    size_t cap_docs = 1024;
    c->offsets = malloc(cap_docs * sizeof *c->offsets);
    if (!c->text || !c->offsets) {
        free(raw);
        gm_corpus_free(c);
        return gm_fail("%s: out of memory", path);
    }
    size_t out = 0;
    int in_doc = 0, skip_doc = 0, prev_blank = 1, para_break = 0, has_header = 0;
    for (size_t i = 0; i < rawlen;) {
        const char *line = raw + i;
        const char *nl = memchr(line, '\n', rawlen - i);
        size_t n = nl ? (size_t)(nl - line) : rawlen - i;
        i += n + 1;
        if (is_blank(line, n)) {
            prev_blank = 1;
            para_break = in_doc;
            continue;
        }
        int starts_entry = prev_blank && line[0] != ' ' && line[0] != '\t';
        prev_blank = 0;
        if (starts_entry) {
            if (in_doc && !skip_doc) c->text[out++] = '\0';
            skip_doc = strncmp(line, "00-database", 11) == 0 || strncmp(line, "00database", 10) == 0;
            has_header |= skip_doc;
            in_doc = 1;
            para_break = 0;
            if (!skip_doc) {
                if (c->ndocs == cap_docs) {
                    size_t *grown = realloc(c->offsets, cap_docs * 2 * sizeof *c->offsets);
                    if (!grown) {
                        free(raw);
                        gm_corpus_free(c);
                        return gm_fail("%s: out of memory", path);
                    }
                    c->offsets = grown;
                    cap_docs *= 2;
                }
                c->offsets[c->ndocs++] = out;
            }
        } else if (!in_doc) {
            continue;
        }
        if (skip_doc || is_provenance(line, n)) continue;
        // Separator from the previous line of the same document.
        if (out > c->offsets[c->ndocs - 1]) c->text[out++] = para_break ? '\n' : ' ';
        para_break = 0;
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t')) k++;
        for (; k < n; k++)
            if (line[k] != '{' && line[k] != '}' && line[k] != '\r') c->text[out++] = line[k];
    }
    if (in_doc && !skip_doc) c->text[out++] = '\0';
    free(raw);
    c->len = out;
    if (rawlen > 0 && !has_header) {
        gm_corpus_free(c);
        return gm_fail("%s: not a dictd database (no 00-database-* entry, which dictfmt writes first); "
                       "--corpus takes a dictd .dict or .dict.dz file", path);
    }
    if (c->ndocs == 0) {
        gm_corpus_free(c);
        return gm_fail("%s: empty corpus: no dictionary entry found", path);
    }
    return 0;
}

void gm_corpus_free(gm_corpus *c) {
    free(c->text);
    free(c->offsets);
    memset(c, 0, sizeof *c);
}
