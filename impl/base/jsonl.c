#include "base/jsonl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

int gm_jsonl_open(gm_jsonl *l, const char *path, const char *mode) {
    memset(l, 0, sizeof *l);
    if (!path) return 0;
    if (strlen(path) >= sizeof l->path) return gm_fail("%s: path too long", path);
    strcpy(l->path, path);
    l->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | (mode[0] == 'w' ? O_TRUNC : 0), 0644);
    if (l->fd < 0) return gm_fail("%s: cannot open log: %s", path, strerror(errno));
    l->opened = 1;
    return 0;
}

void gm_jsonl_close(gm_jsonl *l) {
    if (l->opened) close(l->fd);
    free(l->buf);
    memset(l, 0, sizeof *l);
}

static void put(gm_jsonl *l, const char *s, size_t n) {
    if (l->failed) return;
    if (l->len + n + 2 > l->cap) {
        size_t cap = l->cap ? l->cap : 256;
        while (l->len + n + 2 > cap) cap *= 2;
        char *grown = realloc(l->buf, cap);
        if (!grown) {
            l->failed = 1;
            return;
        }
        l->buf = grown;
        l->cap = cap;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    l->buf[l->len] = '\0';
}

static void put_escaped(gm_jsonl *l, const char *s) {
    put(l, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': put(l, "\\\"", 2); break;
        case '\\': put(l, "\\\\", 2); break;
        case '\n': put(l, "\\n", 2); break;
        case '\r': put(l, "\\r", 2); break;
        case '\t': put(l, "\\t", 2); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                put(l, esc, 6);
            } else {
                put(l, (const char *)p, 1);
            }
        }
    }
    put(l, "\"", 1);
}

static void put_key(gm_jsonl *l, const char *key) {
    if (l->fields++) put(l, ",", 1);
    put_escaped(l, key);
    put(l, ":", 1);
}

void gm_jsonl_begin(gm_jsonl *l) {
    l->len = 0;
    l->fields = 0;
    l->failed = 0;
    put(l, "{", 1);
}

void gm_jsonl_str(gm_jsonl *l, const char *key, const char *value) {
    put_key(l, key);
    put_escaped(l, value);
}

void gm_jsonl_num(gm_jsonl *l, const char *key, double value) {
    char tmp[40];
    put_key(l, key);
    int n = isfinite(value) ? snprintf(tmp, sizeof tmp, "%.17g", value) : snprintf(tmp, sizeof tmp, "null");
    put(l, tmp, (size_t)n);
}

void gm_jsonl_int(gm_jsonl *l, const char *key, long long value) {
    char tmp[32];
    put_key(l, key);
    put(l, tmp, (size_t)snprintf(tmp, sizeof tmp, "%lld", value));
}

void gm_jsonl_bool(gm_jsonl *l, const char *key, int value) {
    put_key(l, key);
    put(l, value ? "true" : "false", value ? 4 : 5);
}

void gm_jsonl_raw(gm_jsonl *l, const char *key, const char *json) {
    put_key(l, key);
    put(l, json, strlen(json));
}

const char *gm_jsonl_text(const gm_jsonl *l) { return l->buf ? l->buf : ""; }

int gm_jsonl_end(gm_jsonl *l) {
    put(l, "}\n", 2);
    if (l->failed) return gm_fail("%s: out of memory building a log record", l->opened ? l->path : "log");
    if (!l->opened) return 0;
    off_t end = lseek(l->fd, 0, SEEK_END);
    for (size_t done = 0; done < l->len;) {
        ssize_t n = write(l->fd, l->buf + done, l->len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : ENOSPC;
            // No half record in the log: cut it back to where this record began (a device such
            // as /dev/full cannot be cut; the error stands either way).
            int cut = end >= 0 && ftruncate(l->fd, end) == 0;
            (void)cut;
            return gm_fail("%s: cannot write the log: %s", l->path, strerror(e));
        }
        done += (size_t)n;
    }
    return 0;
}
