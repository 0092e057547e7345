#include "base/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

int gm_read_all(const char *path, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return gm_fail("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {  // fopen opens a folder; reading it fails
        fclose(f);
        return gm_fail("%s: is a folder, not a file", path);
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return gm_fail("%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                fclose(f);
                return gm_fail("%s: out of memory", path);
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f) ? errno : 0;
    fclose(f);
    if (bad) {
        free(buf);
        return gm_fail("%s: read error: %s", path, strerror(bad));
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

int gm_atomic_open(gm_atomic_file *af, const char *path) {
    memset(af, 0, sizeof *af);
    if (strlen(path) + 16 >= sizeof af->path) return gm_fail("%s: path too long", path);
    strcpy(af->path, path);
    snprintf(af->tmp_path, sizeof af->tmp_path, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(af->tmp_path);
    if (fd < 0) return gm_fail("%s: cannot create temporary file: %s", path, strerror(errno));
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(af->tmp_path);
        return gm_fail("%s: fdopen: %s", path, strerror(errno));
    }
    return 0;
}

int gm_atomic_write(gm_atomic_file *af, const void *data, size_t n) {
    if (n && fwrite(data, 1, n, af->f) != n)
        return gm_fail("%s: write failed: %s", af->path, strerror(errno));
    return 0;
}

int gm_atomic_printf(gm_atomic_file *af, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(af->f, fmt, ap);
    va_end(ap);
    if (r < 0) return gm_fail("%s: write failed: %s", af->path, strerror(errno));
    return 0;
}

void gm_atomic_abort(gm_atomic_file *af) {
    if (af->f) fclose(af->f);
    af->f = NULL;
    unlink(af->tmp_path);
}

int gm_atomic_commit(gm_atomic_file *af) {
    int err = 0;
    if (fflush(af->f) != 0 || fsync(fileno(af->f)) != 0) err = errno ? errno : EIO;
    if (fclose(af->f) != 0 && !err) err = errno;
    af->f = NULL;
    if (!err) {
        // mkstemp creates 0600; give the file the usual permissions.
        chmod(af->tmp_path, 0644);
        if (rename(af->tmp_path, af->path) == 0) return 0;
        err = errno;
    }
    unlink(af->tmp_path);
    return gm_fail("%s: cannot write: %s", af->path, strerror(err));
}

int gm_write_file_atomic(const char *path, const void *data, size_t n) {
    gm_atomic_file af;
    if (gm_atomic_open(&af, path)) return -1;
    if (gm_atomic_write(&af, data, n)) {
        gm_atomic_abort(&af);
        return -1;
    }
    return gm_atomic_commit(&af);
}

int gm_map_file(const char *path, gm_mapping *m) {
    m->data = NULL;
    m->len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return gm_fail("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gm_fail("%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return gm_fail("%s: not a regular file", path);
    }
    m->len = (size_t)st.st_size;
    if (m->len > 0) {
        void *p = mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return gm_fail("%s: cannot map: %s", path, strerror(e));
        }
        m->data = p;
    }
    close(fd);
    return 0;
}

void gm_unmap(gm_mapping *m) {
    if (m->data) munmap(m->data, m->len);
    m->data = NULL;
    m->len = 0;
}

int gm_mkdir_p(const char *path, size_t *created) {
    char buf[4096];
    if (created) *created = 0;
    if (strlen(path) >= sizeof buf) return gm_fail("%s: path too long", path);
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) == 0) {
                if (created && !*created) *created = (size_t)(p - buf);
            } else if (errno != EEXIST) {
                return gm_fail("%s: cannot create: %s", buf, strerror(errno));
            }
            *p = c;
            if (c == '\0') break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return gm_fail("%s: not a folder", path);
    return 0;
}

void gm_rmdir_created(const char *path, size_t created) {
    char buf[4096];
    if (!created || strlen(path) >= sizeof buf) return;
    strcpy(buf, path);
    for (size_t n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--) buf[n - 1] = '\0';
    for (size_t len = strlen(buf); len >= created; len = strlen(buf)) {
        if (rmdir(buf) != 0) return;  // not empty (or gone): what is left is not ours to remove
        char *slash = strrchr(buf, '/');
        if (!slash) return;
        *slash = '\0';
    }
}
