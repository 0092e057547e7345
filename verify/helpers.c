#include "helpers.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "base/rng.h"
#include "data/shard.h"
#include "train/checkpoint.h"
#include "train/run_config.h"

char *th_tmpdir(void) {
    char *dir = strdup("/tmp/gmtest.XXXXXX");
    if (!dir || !mkdtemp(dir)) abort();
    return dir;
}

void th_rmtree(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

static const char *env_path(const char *var, const char *dflt, const char *rel, char *buf, size_t n) {
    const char *base = getenv(var);
    snprintf(buf, n, "%s/%s", base && *base ? base : dflt, rel);
    return buf;
}

const char *th_root_path(const char *rel) {
    static _Thread_local char buf[4200];
    return env_path("GM_ROOT", ".", rel, buf, sizeof buf);
}

const char *th_bin_path(const char *name) {
    static _Thread_local char buf[4200];
    return env_path("GM_BIN", "build", name, buf, sizeof buf);
}

const char *th_testprog_path(const char *name) {
    static _Thread_local char buf[4200];
    return env_path("GM_TESTPROG", "build/verify/prog", name, buf, sizeof buf);
}

const char *th_mpirun(int world) {
    static _Thread_local char buf[256];
    // Root in CI needs --allow-run-as-root; W > cores needs --oversubscribe. Shared memory
    // transport only: the ranks are on this machine. Under the sanitizer build, leak detection
    // is off in MPI ranks: Open MPI unloads its plugins at exit, so their by-design process-lifetime
    // allocations cannot even be attributed; ASan and UBSan stay on.
    snprintf(buf, sizeof buf,
             "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -x ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 -np %d",
             world);
    return buf;
}

static char *slurp(const char *path) {
    char *data;
    size_t len;
    if (gm_read_all(path, &data, &len)) return strdup("");
    return data;
}

int th_run(const char *cmd, char **out, char **err) {
    char *dir = th_tmpdir();
    char outp[4200], errp[4200];
    snprintf(outp, sizeof outp, "%s/out", dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    size_t n = strlen(cmd) + 2 * sizeof outp + 32;
    char *full = malloc(n);
    if (!full) abort();
    snprintf(full, n, "( %s ) > '%s' 2> '%s'", cmd, outp, errp);
    int st = system(full);
    free(full);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (out) *out = slurp(outp);
    if (err) *err = slurp(errp);
    th_rmtree(dir);
    free(dir);
    return code;
}

int32_t *th_tokens(size_t n, int vocab) {
    int32_t *ids = malloc(sizeof(int32_t) * (n ? n : 1));
    cr_assert(ids, "out of memory for %zu tokens", n);
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)((i * 7919u + 5u) % (unsigned)vocab);
    return ids;
}

int th_count_lines(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++)
        if (*p == '\n') n++;
    size_t len = strlen(s);
    if (len && s[len - 1] != '\n') n++;
    return n;
}

void th_expect_refused(const char *name, const char *args, const char *want, int quiet) {
    char cmd[8400], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' %s", th_bin_path(name), args);
    cr_expect_eq(th_run(cmd, &out, &err), 1, "%s %s: %s", name, args, err);
    cr_expect(strstr(err, want), "%s %s: no '%s' in: %s", name, args, want, err);
    cr_expect_eq(th_count_lines(err), 1, "%s %s: not one line: %s", name, args, err);
    if (quiet) cr_expect_str_eq(out, "", "%s %s: wrote to stdout: %s", name, args, out);
    free(out), free(err);
}

int th_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int th_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void write_tokens(const char *dir, const char *name, size_t n, uint64_t stream) {
    uint16_t *tok = malloc(n * sizeof *tok);
    if (!tok) abort();
    size_t doc_left = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = gm_rng_u32(7, stream, i);
        if (doc_left == 0) {
            tok[i] = 1;  // end-of-text: a new document starts
            doc_left = 20 + r % 131;
            continue;
        }
        doc_left--;
        // Mostly a pattern of period 7 shifted per document, sometimes noise.
        tok[i] = (uint16_t)(r % 5 == 0 ? 2 + (r >> 8) % 510 : 2 + (i * 37 + doc_left % 7 * 11) % 510);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (gm_shard_write(path, tok, n)) {
        fprintf(stderr, "%s\n", gm_error());
        abort();
    }
    free(tok);
}

void th_make_train_data(const char *dir) {
    write_tokens(dir, "train_000000.bin", 3000, 1);
    write_tokens(dir, "train_000001.bin", 3000, 2);
    write_tokens(dir, "val_000000.bin", 2000, 3);
}

const char *th_flags_override(char *buf, size_t n, const char *flags, const char *over) {
    char *copy = strdup(flags), *spaced_over = malloc(strlen(over) + 2), *save = NULL;
    if (!copy || !spaced_over) abort();
    sprintf(spaced_over, " %s", over);
    buf[0] = '\0';
    for (char *flag = strtok_r(copy, " ", &save); flag; flag = strtok_r(NULL, " ", &save)) {
        char key[300];
        snprintf(key, sizeof key, " %.*s=", (int)strcspn(flag, "="), flag);
        if (!strstr(spaced_over, key)) snprintf(buf + strlen(buf), n - strlen(buf), "%s ", flag);
    }
    snprintf(buf + strlen(buf), n - strlen(buf), "%s", over);
    free(copy), free(spaced_over);
    return buf;
}

const char *th_test_flags(char *buf, size_t n, const char *dir, const char *extra) {
    char defaults[4096];
    snprintf(defaults, sizeof defaults,
             "--n_layer=4 --d_model=64 --n_head=2 --head_dim=32 --d_mlp=128 --seq_len=64 --batch=4 --vocab=512 "
             "--vocab_padded=512 --eot=1 --attn_block=16 --steps=6 --val_every=3 --val_tokens=512 --log_every=0 "
             "--train_data=%s/train_*.bin --val_data=%s/val_*.bin --out_dir=%s/run",
             dir, dir, dir);
    return th_flags_override(buf, n, defaults, extra);
}

void *th_ckpt_section(const char *path, const char *name, size_t *bytes) {
    gm_ckpt c;
    cr_assert_eq(gm_ckpt_read(&c, path), 0, "%s", gm_error());
    const void *p = gm_ckpt_get_any(&c, name, bytes);
    cr_assert_not_null(p, "%s", gm_error());
    void *copy = malloc(*bytes ? *bytes : 1);
    cr_assert_not_null(copy);
    memcpy(copy, p, *bytes);
    gm_ckpt_close(&c);
    return copy;
}

void th_ckpt_replace(const char *path, const char *name, const void *data, size_t bytes) {
    gm_ckpt c;
    cr_assert_eq(gm_ckpt_read(&c, path), 0, "%s", gm_error());
    gm_ckpt_section *s = calloc((size_t)c.n, sizeof *s);
    cr_assert_not_null(s);
    int n = 0, found = 0;
    for (int i = 0; i < c.n; i++) {
        if (strcmp(c.sections[i].name, name)) {
            s[n++] = c.sections[i];
            continue;
        }
        found = 1;
        if (data) s[n++] = (gm_ckpt_section){c.sections[i].name, data, bytes};
    }
    cr_assert(found, "%s has no section %s", path, name);
    cr_assert_eq(gm_ckpt_write(path, s, n), 0, "%s", gm_error());
    free(s);
    gm_ckpt_close(&c);
}

double th_rel_err(const gm_real *a, const gm_real *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        double d = (double)a[i] - b[i];
        num += d * d, den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

int th_train(const char *dir, const char *preset, const char *extra, char **out, char **err) {
    char flags[4096], cmd[8600];
    th_test_flags(flags, sizeof flags, dir, extra);
    snprintf(cmd, sizeof cmd, "'%s' --preset=%s --scale=tiny %s", th_bin_path("train"), preset, flags);
    return th_run(cmd, out, err);
}

void th_apply_flags(void *run_config, const char *flags) {
    gm_run_config *rc = run_config;
    char *copy = strdup(flags), *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || strncmp(tok, "--", 2) != 0 || gm_run_config_set(rc, (*eq = '\0', tok + 2), eq + 1)) {
            fprintf(stderr, "test flag %s: %s\n", tok, gm_error());
            abort();
        }
    }
    free(copy);
}

// The "train"/"val" records of a log, without timing fields: the loss curve.
void th_expect_train_refused(const char *dir, const char *preset, const char *extra, const char *want,
                             const char *not_created, const char *why) {
    char *out, *err;
    cr_assert_eq(th_train(dir, preset, extra, &out, &err), 1, "%s: not refused:\n%s", why, out);
    cr_expect_str_eq(err, want, "%s", why);
    cr_expect_not(th_file_exists(not_created), "%s: the refused run left %s behind", why, not_created);
    free(out), free(err);
}

char *th_log_curve(const char *log_path, int from_step) {
    char *data;
    size_t len;
    if (gm_read_all(log_path, &data, &len)) {
        fprintf(stderr, "th_log_curve: %s\n", gm_error());
        abort();
    }
    char *out = calloc(len + 1, 1), *save = NULL;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strstr(line, "\"event\":\"train\"") && !strstr(line, "\"event\":\"val\"")) continue;
        int step = atoi(strstr(line, "\"step\":") + 7);
        if (step < from_step) continue;
        char *cut = strstr(line, ",\"train_time_s\"");
        if (cut) *cut = '\0';
        strcat(out, line);
        strcat(out, "\n");
    }
    free(data);
    return out;
}

void th_py_check(const char *script, const char *check) {
    char cmd[4400], want[128];
    snprintf(cmd, sizeof cmd, "python3 '%s' %s", th_root_path(script), check);
    char *out, *err;
    int rc = th_run(cmd, &out, &err);
    snprintf(want, sizeof want, "ok %s\n", check);
    cr_expect_eq(rc, 0, "%s %s failed (exit %d): %s", script, check, rc, err);
    cr_expect_str_eq(out, want, "%s %s: %s", script, check, err);
    free(out);
    free(err);
}

int th_run_script(const char *dir, const char *prefix, const char *script, char **out, char **err) {
    char path[4300], cmd[4600];
    snprintf(path, sizeof path, "%s/s.sh", dir);
    cr_assert_eq(gm_write_file_atomic(path, script, strlen(script)), 0, "%s", gm_error());
    snprintf(cmd, sizeof cmd, "%s bash '%s'", prefix, path);
    return th_run(cmd, out, err);
}
