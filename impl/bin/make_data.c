// make_data: build the embedded default dataset offline.
//   corpus (dict-gcide) -> documents -> tokenizer (BPE trained on a prefix of the train
//   documents, or plain bytes with --vocab=257) -> train and val shards in the llm.c format,
//   documents separated by the end-of-text token as in FineWeb shards.
// Everything is written into a temporary folder that replaces --out only once complete (one left by
// a make_data that was stopped is removed by the next one into the same --out). --out may
// be new, empty, or a dataset this program wrote (its make_data.txt lists its files); any other
// folder is refused, and replacing a dataset deletes only the files its list names.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/args.h"
#include "base/error.h"
#include "base/io.h"
#include "data/corpus.h"
#include "data/shard.h"
#include "data/tokenizer.h"

static void usage(void) {
    printf("usage: make_data [--corpus=PATH] [--out=DIR] [--vocab=N] [--bpe_train_bytes=N]\n"
           "                 [--val_every=N] [--shard_tokens=N]\n"
           "  --corpus           dictd corpus file (default %s)\n"
           "  --out              output folder (default data/gcide; missing parents are created): new, empty,\n"
           "                     or a dataset of make_data\n"
           "                     (its make_data.txt lists its files, which are replaced; other folders are refused)\n"
           "  --vocab            tokenizer size: 257 = bytes only, more = BPE (default 4096)\n"
           "  --bpe_train_bytes  train the BPE on this many bytes of train text (default 8000000)\n"
           "  --val_every        every N-th document goes to the val shard (default 100)\n"
           "  --shard_tokens     tokens per train shard (default 4000000)\n"
           "  (as in every program here, --a_flag and --a-flag are the same flag)\n",
           GM_GCIDE_DEFAULT_PATH);
}

typedef struct {
    uint16_t *tok;
    size_t n, cap;
} tokbuf;

static void push(tokbuf *b, const int32_t *ids, size_t n) {
    if (b->n + n > b->cap) {
        while (b->n + n > b->cap) b->cap = b->cap ? b->cap * 2 : 1 << 20;
        b->tok = realloc(b->tok, b->cap * sizeof *b->tok);
        if (!b->tok) gm_die("out of memory");
    }
    for (size_t i = 0; i < n; i++) b->tok[b->n + i] = (uint16_t)ids[i];
    b->n += n;
}

static char written[64][4200];
static int nwritten;

static void remember(const char *path) {
    if (nwritten == 64) gm_die("too many output files");
    snprintf(written[nwritten++], sizeof written[0], "%s", path);
}

// --out's parent folder and how much of it this run created (gm_mkdir_p), removed again on failure.
static char parent[4096];
static size_t parent_created;

static void remove_tmp(const char *dir) {
    for (int i = 0; i < nwritten; i++) unlink(written[i]);
    rmdir(dir);
    gm_rmdir_created(parent, parent_created);
}

static const char MANIFEST[] = "make_data.txt";

// The names listed ("file <name>" lines) in dir's make_data.txt, as one "\n<name>\n..." string
// for strstr; NULL when there is none.
static char *listed_files(const char *dir) {
    char path[4200], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
    if (gm_read_all(path, &text, &len)) return NULL;
    char *names = calloc(len + 2, 1), *save = NULL;
    if (!names) gm_die("out of memory");
    strcpy(names, "\n");
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (!strncmp(line, "file ", 5) && !strchr(line + 5, '/')) strcat(strcat(names, line + 5), "\n");
    free(text);
    return names;
}

static int is_listed(const char *names, const char *name) {
    char key[300];
    if (strlen(name) + 3 > sizeof key) return 0;
    snprintf(key, sizeof key, "\n%s\n", name);
    return strstr(names, key) != NULL;
}

// --out must be absent, an empty folder, or a dataset of make_data holding nothing it did not
// write; returns 1 when it exists (to be replaced), 0 when absent. Dies, changing nothing, otherwise.
static int check_out(const char *out) {
    struct stat st;
    if (stat(out, &st) != 0) {
        if (errno == ENOENT) return 0;
        gm_die("--out: %s: %s", out, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) gm_die("--out: %s exists and is not a folder; nothing was changed", out);
    DIR *d = opendir(out);
    if (!d) gm_die("--out: %s: cannot list: %s", out, strerror(errno));
    char *names = listed_files(out);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!names)
            gm_die("--out: %s is not empty and has no %s, so it is not a dataset of make_data; give a new or empty folder "
                   "(nothing was changed)", out, MANIFEST);
        if (strcmp(e->d_name, MANIFEST) && !is_listed(names, e->d_name))
            gm_die("--out: %s holds %s, which make_data did not write; give a new or empty folder (nothing was changed)", out,
                   e->d_name);
    }
    closedir(d);
    free(names);
    return 1;
}

// Delete the dataset folder `dir` (checked by check_out): the files its list names, the list, the folder.
static void remove_dataset(const char *dir) {
    char *names = listed_files(dir), path[4400];
    for (char *p = names ? names + 1 : NULL, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = '\0';
        snprintf(path, sizeof path, "%s/%s", dir, p);
        unlink(path);
    }
    free(names);
    snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
    unlink(path);
    if (rmdir(dir) != 0) gm_report("warning", "could not remove the old dataset %s: %s", dir, strerror(errno));
}

// Whether a file in make_data's temporary folder is one it writes there: the tokenizer, a shard,
// the list, or gm_atomic_open's temporary of one (<name>.tmp.<6 characters>).
static int is_own_file(const char *name) {
    size_t n = strlen(name);
    const char *tmp = strstr(name, ".tmp.");
    if (tmp && strlen(tmp) == strlen(".tmp.XXXXXX")) n = (size_t)(tmp - name);
    if ((n == strlen("tokenizer.txt") && !strncmp(name, "tokenizer.txt", n)) || (n == strlen(MANIFEST) && !strncmp(name, MANIFEST, n)))
        return 1;
    size_t stem = !strncmp(name, "train_", 6) ? 6 : !strncmp(name, "val_", 4) ? 4 : 0;
    return stem && n == stem + 10 && strspn(name + stem, "0123456789") == 6 && !strncmp(name + stem + 6, ".bin", 4);
}

// A make_data stopped while it wrote (kill -9, Ctrl-C, a power loss) left its <out>.tmp.<pid>/
// beside --out, for good: each one whose process is gone (or whose pid is this process's, so no
// other's) is removed, with the files make_data writes in it; one holding anything else is kept.
static void remove_stale_temporaries(const char *out) {
    char dir[4096], prefix[4200], path[8400];
    const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
    snprintf(dir, sizeof dir, "%.*s", slash ? (slash == out ? 1 : (int)(slash - out)) : 1, slash ? out : ".");
    snprintf(prefix, sizeof prefix, "%s.tmp.", base);
    DIR *d = opendir(dir);
    if (!d) return;  // --out's parent does not exist yet: nothing beside it
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *pid_text = e->d_name + strlen(prefix);
        if (strncmp(e->d_name, prefix, strlen(prefix)) || !*pid_text || strspn(pid_text, "0123456789") != strlen(pid_text)) continue;
        long pid = strtol(pid_text, NULL, 10);
        if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;  // its make_data still runs
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        DIR *tmp = opendir(path);
        if (!tmp) continue;
        for (struct dirent *f; (f = readdir(tmp));)
            if (is_own_file(f->d_name)) unlinkat(dirfd(tmp), f->d_name, 0);
        closedir(tmp);
        if (rmdir(path) == 0) removed++;
        else gm_report("warning", "%s: a stale temporary folder of make_data, kept: %s", path, strerror(errno));
    }
    closedir(d);
    if (removed) printf("make_data: removed %d stale temporary folder(s) %s.tmp.<pid> of a make_data that was stopped while writing\n", removed, out);
}

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    const char *corpus_path = GM_GCIDE_DEFAULT_PATH, *out = "data/gcide";
    int vocab = 4096, val_every = 100;
    long long bpe_bytes = 8000000, shard_tokens = 4000000;
    for (int i = 1; i < argc;) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
        const char *k, *v;
        gm_arg_next(argc, argv, &i, &k, &v);
        if (!strcmp(k, "corpus")) corpus_path = v;
        else if (!strcmp(k, "out")) out = v;
        else if (!strcmp(k, "vocab")) vocab = (int)gm_arg_int(k, v, GM_TOK_FIRST_MERGE, 65536);
        else if (!strcmp(k, "bpe_train_bytes")) bpe_bytes = gm_arg_int(k, v, 1, 1LL << 40);
        else if (!strcmp(k, "val_every")) val_every = (int)gm_arg_int(k, v, 2, 1000000);
        else if (!strcmp(k, "shard_tokens")) shard_tokens = gm_arg_int(k, v, 1024, 1LL << 30);
        else gm_die("--%s: unknown flag (see --help)", k);
    }
    if (!*out) gm_die("--out: empty path");
    // "ds/" names the folder ds: without the slash, "ds/.tmp.<pid>" and rename("ds/", ...) would
    // name something else (found only after all the work).
    char out_buf[4000];  // leaves room for the ".tmp.<pid>" and ".old.<pid>" names beside it
    if (strlen(out) >= sizeof out_buf) gm_die("--out: path too long");
    strcpy(out_buf, out);
    for (size_t n = strlen(out_buf); n > 1 && out_buf[n - 1] == '/'; n--) out_buf[n - 1] = '\0';
    out = out_buf;
    int replaces = check_out(out);
    remove_stale_temporaries(out);

    gm_corpus corpus;
    if (gm_corpus_load_dictd(&corpus, corpus_path)) gm_die_last();
    if (corpus.ndocs < (size_t)val_every) gm_die("%s: only %zu documents, too few for one val document every %d", corpus_path, corpus.ndocs, val_every);

    // The BPE learns from train documents only, so val stays unseen text.
    gm_tokenizer tok;
    if (vocab == GM_TOK_FIRST_MERGE) {
        gm_tok_init_bytes(&tok);
    } else {
        char *sample = malloc((size_t)bpe_bytes + 1);
        if (!sample) gm_die("out of memory");
        size_t n = 0;
        for (size_t d = 0; d < corpus.ndocs && n < (size_t)bpe_bytes; d++) {
            if (d % (size_t)val_every == (size_t)val_every - 1) continue;
            const char *doc = corpus.text + corpus.offsets[d];
            size_t dl = strlen(doc);
            if (n + dl + 1 > (size_t)bpe_bytes) break;
            memcpy(sample + n, doc, dl);
            n += dl;
            sample[n++] = '\n';
        }
        if (gm_tok_train(&tok, sample, n, vocab)) gm_die("%s: %s", corpus_path, gm_error());
        free(sample);
        if (tok.vocab < vocab) gm_report("note", "BPE stopped at %d ids (no pair occurs twice)", tok.vocab);
    }

    tokbuf train = {0}, val = {0};
    size_t maxdoc = 0;
    for (size_t d = 0; d < corpus.ndocs; d++) {
        size_t dl = strlen(corpus.text + corpus.offsets[d]);
        if (dl > maxdoc) maxdoc = dl;
    }
    int32_t *ids = malloc((maxdoc + 1) * sizeof *ids);
    if (!ids) gm_die("out of memory");
    const int32_t eot = GM_TOK_EOT;
    for (size_t d = 0; d < corpus.ndocs; d++) {
        const char *doc = corpus.text + corpus.offsets[d];
        long n = gm_tok_encode(&tok, doc, strlen(doc), ids, maxdoc + 1);
        if (n < 0) gm_die("internal: encode buffer too small");
        tokbuf *dst = d % (size_t)val_every == (size_t)val_every - 1 ? &val : &train;
        push(dst, &eot, 1);  // every document starts after an end-of-text, as in FineWeb shards
        push(dst, ids, (size_t)n);
    }
    free(ids);

    char tmpdir[4096], path[4200];
    snprintf(tmpdir, sizeof tmpdir, "%s.tmp.%ld", out, (long)getpid());
    // --out's missing parents are created (make bench writes data/gcide on a clone without data/).
    const char *slash = strrchr(out, '/');
    if (slash && slash > out) {
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - out), out);
        if (gm_mkdir_p(parent, &parent_created)) gm_die("--out: %s", gm_error());
    }
    if (mkdir(tmpdir, 0755) != 0) {
        int e = errno;
        gm_rmdir_created(parent, parent_created);
        gm_die("%s: cannot create folder: %s", tmpdir, strerror(e));
    }
    snprintf(path, sizeof path, "%s/tokenizer.txt", tmpdir);
    int rc = gm_tok_save(&tok, path);
    if (rc == 0) remember(path);
    snprintf(path, sizeof path, "%s/val_000000.bin", tmpdir);
    if (rc == 0 && (rc = gm_shard_write(path, val.tok, val.n)) == 0) remember(path);
    int nshards = 0;
    for (size_t start = 0; rc == 0 && start < train.n; start += (size_t)shard_tokens) {
        size_t n = train.n - start < (size_t)shard_tokens ? train.n - start : (size_t)shard_tokens;
        snprintf(path, sizeof path, "%s/train_%06d.bin", tmpdir, ++nshards);
        if ((rc = gm_shard_write(path, train.tok + start, n)) == 0) remember(path);
    }
    // The list of what this program wrote, so that a later run may replace exactly that.
    gm_atomic_file list;
    snprintf(path, sizeof path, "%s/%s", tmpdir, MANIFEST);
    if (rc == 0 && (rc = gm_atomic_open(&list, path)) == 0) {
        rc = gm_atomic_printf(&list, "make_data dataset: corpus %s, vocab %d; make_data replaces this folder only while it "
                                     "holds nothing but these files\n", corpus_path, tok.vocab);
        for (int i = 0; rc == 0 && i < nwritten; i++) rc = gm_atomic_printf(&list, "file %s\n", strrchr(written[i], '/') + 1);
        if (rc) gm_atomic_abort(&list);
        else if ((rc = gm_atomic_commit(&list)) == 0) remember(path);
    }
    if (rc) {
        remove_tmp(tmpdir);
        gm_die_last();
    }
    // Swap the finished folder into place; the older dataset is removed only after that.
    char old[4200];
    snprintf(old, sizeof old, "%s.old.%ld", out, (long)getpid());
    if (replaces && rename(out, old) != 0) {
        int e = errno;
        remove_tmp(tmpdir);
        gm_die("--out: %s: cannot move the old dataset aside: %s", out, strerror(e));
    }
    if (rename(tmpdir, out) != 0) {
        int e = errno;
        if (replaces) rename(old, out);
        remove_tmp(tmpdir);
        gm_die("--out: %s: cannot move the new dataset into place: %s", out, strerror(e));
    }
    if (replaces) remove_dataset(old);
    printf("make_data: %s: %zu documents -> %zu train tokens in %d shards, %zu val tokens, vocab %d\n", corpus_path,
           corpus.ndocs, train.n, nshards, val.n, tok.vocab);
    gm_tok_free(&tok);
    gm_corpus_free(&corpus);
    free(train.tok);
    free(val.tok);
    return 0;
}
