#include "train/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/build_info.h"
#include "base/error.h"
#include "base/io.h"

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

// Remove the folder's ckpt.bin.tmp.* files: a checkpoint write cut short (kill -9, power loss)
// leaves one behind, and the folder's lock says no other run is writing it now.
static int remove_stale_temporaries(const gm_run_dir *d, int verbose) {
    DIR *dir = fdopendir(dup(d->fd));
    if (!dir) return gm_fail("--out_dir: %s: cannot list: %s", d->path, strerror(errno));
    int removed = 0, rc = 0;
    const size_t stem = strlen("ckpt.bin.tmp.");  // gm_atomic_open's names: <file>.tmp.<6 mkstemp characters>
    for (struct dirent *e; rc == 0 && (e = readdir(dir));) {
        if (strncmp(e->d_name, "ckpt.bin.tmp.", stem) || strlen(e->d_name) != stem + 6) continue;
        if (unlinkat(d->fd, e->d_name, 0) != 0)
            rc = gm_fail("--out_dir: %s: cannot remove the stale %s: %s", d->path, e->d_name, strerror(errno));
        else
            removed++;
    }
    closedir(dir);
    if (removed && verbose)
        printf("train: removed %d stale temporary checkpoint file(s) from %s (a checkpoint write was cut short)\n", removed, d->path);
    return rc;
}

// What the folder's log says about the run that wrote it: whether it trained a step, and whether
// it ended ("end" record) at which step. A log that cannot be read counts as a run.
typedef struct {
    int trained, finished, end_step;
} log_summary;

static log_summary read_log(const char *path) {
    log_summary s = {1, 0, 0};
    char *data;
    size_t len;
    if (gm_read_all(path, &data, &len)) return s;
    s.trained = strstr(data, "{\"event\":\"train\"") != NULL;
    while (len && data[len - 1] == '\n') data[--len] = '\0';
    const char *last = strrchr(data, '\n');
    last = last ? last + 1 : data;
    const char *end = "{\"event\":\"end\",\"step\":";
    if (!strncmp(last, end, strlen(end))) s.finished = 1, s.end_step = atoi(last + strlen(end));
    free(data);
    return s;
}

// Refuse a folder that holds a run unless this run continues or replaces it.
static int check_holds_no_run(gm_run_dir *d, const gm_run_config *rc, const char *ckpt_path, int verbose) {
    char log_path[600];
    snprintf(log_path, sizeof log_path, "%s/log.jsonl", d->path);
    struct stat ck, rs;
    int has_log = access(log_path, F_OK) == 0, has_ckpt = stat(ckpt_path, &ck) == 0;
    d->continues = rc->resume[0] && has_ckpt && stat(rc->resume, &rs) == 0 && rs.st_dev == ck.st_dev && rs.st_ino == ck.st_ino;
    if (!(has_log || has_ckpt) || d->continues || rc->overwrite) return 0;
    log_summary log = has_log ? read_log(log_path) : (log_summary){0, 0, 0};
    if (!has_ckpt && !log.trained) {
        if (verbose) printf("train: %s holds the log of a run that trained no step; it is replaced\n", log_path);
        return 0;
    }
    const char *what = has_log && has_ckpt ? "log.jsonl and ckpt.bin" : has_log ? "log.jsonl" : "ckpt.bin";
    if (log.finished)
        return gm_fail("--out_dir: %s: already holds a finished run of %d steps (%s); replace it with --overwrite=1, or choose "
                       "another --out_dir (a run of more steps starts over: the schedules depend on --steps)",
                       d->path, log.end_step, what);
    if (!has_ckpt)
        return gm_fail("--out_dir: %s: already holds a run (log.jsonl, no checkpoint to continue from); replace it with "
                       "--overwrite=1, or choose another --out_dir", d->path);
    return gm_fail("--out_dir: %s: already holds a run (%s); continue it with --resume=%s, or replace it with --overwrite=1",
                   d->path, what, ckpt_path);
}

// Room for the checkpoints and the log, checked now rather than at the end of the run.
static int check_room(const gm_run_dir *d, const gm_run_config *rc, size_t ckpt_bytes, int has_ckpt) {
    double ckpt = (double)ckpt_bytes;
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY && ckpt > (double)fsize.rlim_cur)
        return gm_fail("--out_dir: %s: a checkpoint of this run is %.2f MiB, above the file size limit of %.2f MiB (ulimit -f)",
                       d->path, mib(ckpt), mib((double)fsize.rlim_cur));
    // A checkpoint is written beside the one it replaces, so a run that writes several needs room
    // for two (one more, when the folder's own checkpoint already takes the room of the first).
    int several = rc->ckpt_every >= 0 && ((rc->ckpt_every > 0 && rc->ckpt_every < rc->steps) || rc->ckpt_every_s > 0);
    int copies = !has_ckpt && several ? 2 : 1;
    double log_bytes = (double)strlen(gm_build_source) + 65536.0 + 512.0 * (rc->steps + 1);
    struct statvfs fs;
    if (fstatvfs(d->fd, &fs) == 0 && (double)fs.f_bavail * fs.f_frsize < copies * ckpt + log_bytes)
        return gm_fail("--out_dir: %s: %.2f MiB free, this run needs %.2f MiB (%s%.2f MiB checkpoint and its log)", d->path,
                       mib((double)fs.f_bavail * fs.f_frsize), mib(copies * ckpt + log_bytes), copies == 2 ? "two copies of its " : "its ",
                       mib(ckpt));
    return 0;
}

int gm_run_dir_open(gm_run_dir *d, const gm_run_config *rc, size_t ckpt_bytes, int verbose) {
    *d = (gm_run_dir){.path = rc->out_dir, .fd = -1};
    if (gm_mkdir_p(d->path, &d->created)) return gm_fail("--out_dir: %s", gm_error());
    // Locked for the whole run, so two train processes (another terminal, or the ranks of a
    // --comm=single job) never write one folder.
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY);
    if (d->fd < 0) return gm_fail("--out_dir: %s: cannot open: %s", d->path, strerror(errno));
    // A file system without locks (some network mounts) runs unlocked, and its temporaries stay.
    int locked = flock(d->fd, LOCK_EX | LOCK_NB) == 0;
    if (!locked && errno == EWOULDBLOCK)
        return gm_fail("--out_dir: %s: in use by another train process (it holds the folder's lock)", d->path);
    char ckpt_path[600];
    snprintf(ckpt_path, sizeof ckpt_path, "%s/ckpt.bin", d->path);
    if (check_holds_no_run(d, rc, ckpt_path, verbose)) return -1;
    if (locked && remove_stale_temporaries(d, verbose)) return -1;
    if (check_room(d, rc, ckpt_bytes, access(ckpt_path, F_OK) == 0)) return -1;
    // And the folder takes new files (a read-only mount, permissions).
    gm_atomic_file probe;
    if (gm_atomic_open(&probe, ckpt_path)) return gm_fail("--out_dir: %s", gm_error());
    gm_atomic_abort(&probe);
    return 0;
}

void gm_run_dir_close(gm_run_dir *d) {
    if (d->fd >= 0) close(d->fd);  // releases the lock
    d->fd = -1;
}

void gm_run_dir_abandon(gm_run_dir *d) {
    gm_run_dir_close(d);
    if (d->path) gm_rmdir_created(d->path, d->created);
}

// Whether the folder `real` (a resolved path) or one of its ancestors is the file st (device and
// inode: another path to the same folder, a link or a bind mount, is the same folder).
static int at_or_above(const char *real, const struct stat *st) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", real);
    for (;;) {
        struct stat sp;
        if (stat(p, &sp) == 0 && sp.st_dev == st->st_dev && sp.st_ino == st->st_ino) return 1;
        char *slash = strrchr(p, '/');
        if (!slash || p[1] == '\0') return 0;
        slash[slash == p] = '\0';  // "/a" -> "/", "/a/b" -> "/a"
    }
}

int gm_run_dir_check_apart(const char *out_dir, const char *flag, const char *data_file) {
    char data_dir[PATH_MAX], real_data[PATH_MAX];
    snprintf(data_dir, sizeof data_dir, "%s", data_file);
    char *slash = strrchr(data_dir, '/');
    if (!slash) snprintf(data_dir, sizeof data_dir, ".");
    else slash[slash == data_dir] = '\0';
    struct stat so, sd;
    // An out_dir that does not exist yet is neither folder; nor holds one.
    if (stat(out_dir, &so) != 0 || stat(data_dir, &sd) != 0 || !realpath(data_dir, real_data)) return 0;
    if (!at_or_above(real_data, &so)) return 0;
    return gm_fail("--out_dir: %s: %s the folder of the %s shard %s; a run's log and checkpoints go in a folder of their own, "
                   "apart from the data", out_dir, so.st_dev == sd.st_dev && so.st_ino == sd.st_ino ? "is" : "holds", flag,
                   data_file);
}
