// JSON-lines logger: each record is one JSON object on one line, written with one write() when
// ended, so a log that is cut off (crash, Ctrl-C) still parses line by line. A record that cannot be
// written whole (disk full, file size limit) is an error, and its partial bytes are cut off again.
//   gm_jsonl_begin(&log); gm_jsonl_str(&log, "event", "step"); gm_jsonl_num(&log, "loss", 3.2);
//   gm_jsonl_end(&log);
#ifndef GM_BASE_JSONL_H
#define GM_BASE_JSONL_H

#include <stddef.h>

typedef struct {
    int opened;   // 0: records are built but dropped (e.g. on non-zero ranks; also a zeroed struct)
    int fd;       // the file, when opened
    char path[4096];
    char *buf;    // the record being built
    size_t len, cap;
    int fields;   // fields written into the current record
    int failed;   // an allocation failed; the record is dropped
} gm_jsonl;

// Open `path` for appending (mode "a") or truncation ("w"). path NULL: a logger that drops records.
int gm_jsonl_open(gm_jsonl *l, const char *path, const char *mode);
void gm_jsonl_close(gm_jsonl *l);
void gm_jsonl_begin(gm_jsonl *l);
void gm_jsonl_str(gm_jsonl *l, const char *key, const char *value);
// Non-finite numbers are written as null (JSON has no NaN); finite ones round-trip exactly.
void gm_jsonl_num(gm_jsonl *l, const char *key, double value);
void gm_jsonl_int(gm_jsonl *l, const char *key, long long value);
void gm_jsonl_bool(gm_jsonl *l, const char *key, int value);
// Insert already-formatted JSON (an object or array) as the value of `key`.
void gm_jsonl_raw(gm_jsonl *l, const char *key, const char *json);
// Write the record as one line. Returns -1 (gm_fail naming the file and the reason) when it could
// not be written whole; the file then ends with the last complete record.
int gm_jsonl_end(gm_jsonl *l);
// The record built so far (valid until the next call), for tests and for echoing to stdout.
const char *gm_jsonl_text(const gm_jsonl *l);

#endif
