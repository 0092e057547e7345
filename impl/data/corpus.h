// The embedded default corpus: the GNU Collaborative International Dictionary of English
// (Debian package dict-gcide, /usr/share/dictd/gcide.dict.dz), real English prose: definitions,
// etymologies and quotations. Each dictionary entry becomes one document.
#ifndef GM_DATA_CORPUS_H
#define GM_DATA_CORPUS_H

#include <stddef.h>

#define GM_GCIDE_DEFAULT_PATH "/usr/share/dictd/gcide.dict.dz"

typedef struct {
    char *text;       // all documents, each NUL-terminated, back to back
    size_t len;       // bytes in text, including the NULs
    size_t *offsets;  // start of document i in text
    size_t ndocs;
} gm_corpus;

// Read a dictd text (gzip/dictzip-compressed or plain) and split it into documents: an entry
// starts at a non-indented line after a blank line; the database's own "00-database-*" entries
// are skipped; provenance lines such as "[1913 Webster]" and the {cross-reference} braces are
// dropped; wrapped lines are joined with single spaces, paragraphs with a newline.
// Fails with the path when the file cannot be read, is not a dictd database (binary data, or no
// "00-database-*" entry, which dictfmt writes into every database) or holds no document.
int gm_corpus_load_dictd(gm_corpus *c, const char *path);
void gm_corpus_free(gm_corpus *c);

#endif
