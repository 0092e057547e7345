#include "base/matfile.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"

static const char magic[8] = {'G', 'M', 'M', 'A', 'T', 'R', 'I', 'X'};

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int gm_matfile_write(const char *path, const char *name, const float *data, int rows, int cols) {
    if (rows < 1 || cols < 1) return gm_fail("%s: bad shape %d x %d", path, rows, cols);
    if (strlen(name) >= GM_MATFILE_NAME_MAX) return gm_fail("%s: name longer than %d bytes", path, GM_MATFILE_NAME_MAX - 1);
    const size_t n = (size_t)rows * cols, size = GM_MATFILE_HEADER + 4 * n;
    unsigned char *buf = calloc(size, 1);
    if (!buf) return gm_fail("%s: out of memory", path);
    memcpy(buf, magic, 8);
    put_u32(buf + 8, 1), put_u32(buf + 12, 1), put_u32(buf + 16, (uint32_t)rows), put_u32(buf + 20, (uint32_t)cols);
    memcpy(buf + 24, name, strlen(name));
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &data[i], 4);
        put_u32(buf + GM_MATFILE_HEADER + 4 * i, u);
    }
    int rc = gm_write_file_atomic(path, buf, size);
    free(buf);
    return rc;
}

int gm_matfile_read(const char *path, gm_matrix *m) {
    memset(m, 0, sizeof *m);
    char *raw;
    size_t len;
    if (gm_read_all(path, &raw, &len)) return -1;
    const unsigned char *b = (const unsigned char *)raw;
    int rc = -1;
    if (len < GM_MATFILE_HEADER) {
        gm_fail("%s: truncated header (%zu bytes, want %d)", path, len, GM_MATFILE_HEADER);
        goto done;
    }
    if (memcmp(b, magic, 8) != 0) {
        gm_fail("%s: bad magic (not a GMMATRIX file)", path);
        goto done;
    }
    uint32_t version = get_u32(b + 8), dtype = get_u32(b + 12), rows = get_u32(b + 16), cols = get_u32(b + 20);
    if (version != 1) {
        gm_fail("%s: unsupported version %u (want 1)", path, version);
        goto done;
    }
    if (dtype != 1) {
        gm_fail("%s: unsupported dtype %u (want 1 = float32)", path, dtype);
        goto done;
    }
    if (rows < 1 || cols < 1 || rows > INT32_MAX || cols > INT32_MAX) {
        gm_fail("%s: bad shape %u x %u", path, rows, cols);
        goto done;
    }
    if (len != GM_MATFILE_HEADER + 4 * (size_t)rows * cols) {
        gm_fail("%s: size %zu bytes does not match %u x %u float32 (want %zu)", path, len, rows, cols,
                GM_MATFILE_HEADER + 4 * (size_t)rows * cols);
        goto done;
    }
    if (memchr(b + 24, 0, GM_MATFILE_NAME_MAX) == NULL) {
        gm_fail("%s: name field not NUL-terminated", path);
        goto done;
    }
    const size_t n = (size_t)rows * cols;
    m->data = malloc(n * sizeof(float));
    if (!m->data) {
        gm_fail("%s: out of memory for %u x %u", path, rows, cols);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t u = get_u32(b + GM_MATFILE_HEADER + 4 * i);
        memcpy(&m->data[i], &u, 4);
        if (!isfinite(m->data[i])) {
            gm_fail("%s: non-finite entry at (%zu, %zu)", path, i / cols, i % cols);
            gm_matrix_free(m);
            goto done;
        }
    }
    m->rows = (int)rows, m->cols = (int)cols;
    memcpy(m->name, b + 24, GM_MATFILE_NAME_MAX);
    rc = 0;
done:
    free(raw);
    return rc;
}

void gm_matrix_free(gm_matrix *m) {
    free(m->data);
    m->data = NULL;
}
