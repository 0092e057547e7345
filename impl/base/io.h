// Checked file I/O. Every failure is reported through gm_fail() with the path and the reason.
// Files that other programs read (shards, tokenizers, checkpoints, reports) are written
// atomically: into a temporary file in the same folder, fsync'd, then renamed over the target,
// so a reader sees the old file or the complete new one, never half of one.
#ifndef GM_BASE_IO_H
#define GM_BASE_IO_H

#include <stddef.h>
#include <stdio.h>

// Read a whole file into a malloc'd buffer (NUL-terminated for text convenience; *len excludes
// the NUL). A file that does not exist or cannot be read fails with its path and strerror.
int gm_read_all(const char *path, char **data, size_t *len);

typedef struct {
    FILE *f;         // open stream on tmp_path
    char path[4096];  // final destination
    char tmp_path[4096];
} gm_atomic_file;

int gm_atomic_open(gm_atomic_file *af, const char *path);
int gm_atomic_write(gm_atomic_file *af, const void *data, size_t n);
int gm_atomic_printf(gm_atomic_file *af, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Flush, fsync, close and rename into place. On failure the temporary file is removed.
int gm_atomic_commit(gm_atomic_file *af);
// Close and remove the temporary file; the destination is untouched.
void gm_atomic_abort(gm_atomic_file *af);
// One-shot atomic write of a buffer.
int gm_write_file_atomic(const char *path, const void *data, size_t n);

// Create a folder and its missing parents (mkdir -p); an existing folder is fine. *created (when
// not NULL): the length of the shortest prefix of path this call created, 0 when it created none.
int gm_mkdir_p(const char *path, size_t *created);
// Undo gm_mkdir_p where nothing was put in: remove path and then its parents down to the prefix of
// length `created`, each only while empty. created == 0: nothing.
void gm_rmdir_created(const char *path, size_t created);

// Read-only memory mapping of a whole file (a zero-length file maps to data == NULL, len == 0).
typedef struct {
    void *data;
    size_t len;
} gm_mapping;
int gm_map_file(const char *path, gm_mapping *m);
void gm_unmap(gm_mapping *m);

#endif
