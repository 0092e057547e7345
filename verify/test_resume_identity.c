// A resume continues the run it names, on the data it was written on: the shards are part of a
// run's identity (their paths, sizes and a hash of every token: data/manifest.h), stored in its
// checkpoints and, as data_fingerprint, in its log's start record; a resume on other shards is
// refused, naming each shard that changed. A checkpoint of a build that recorded no data resumes
// with a note, and so does one written on a backend of other arithmetic. (A halted run whose shard
// was replaced, or given one that sorts first, resumed with exit 0 and trained other tokens.)
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "data/manifest.h"
#include "data/shard.h"
#include "helpers.h"

// The value of "data_fingerprint" in the k-th start record of log (a static copy), or "".
static const char *fingerprint(const char *log, int k) {
    static char hex[17];
    char *text;
    size_t len;
    cr_assert_eq(gm_read_all(log, &text, &len), 0, "%s", gm_error());
    const char *p = text;
    hex[0] = '\0';
    for (int i = 0; i <= k && p; i++)
        if ((p = strstr(p, "{\"event\":\"start\""))) p++;
    if (p && (p = strstr(p, "\"data_fingerprint\":\""))) snprintf(hex, sizeof hex, "%.16s", p + strlen("\"data_fingerprint\":\""));
    free(text);
    return hex;
}

// Resuming dir/run/ckpt.bin must be refused with "written on other data: <changes>", leaving no folder.
static void expect_other_data(const char *dir, const char *changes) {
    char extra[4400], want[9000], path[4200], why[4200];
    snprintf(extra, sizeof extra, "--resume=%s/run/ckpt.bin --out_dir=%s/r", dir, dir);
    snprintf(want, sizeof want, "train: error: rank 0: %s/run/ckpt.bin: written on other data: %s (checkpoint -> this run); "
             "resume needs the shards it was written on\n", dir, changes);
    snprintf(path, sizeof path, "%s/r", dir);
    snprintf(why, sizeof why, "resuming on other data (%s)", changes);
    th_expect_train_refused(dir, "muon-v2", extra, want, path, why);
}

// Shard dir/name rewritten with n tokens, the first `keep` of them from the shard as it is and the
// rest 7 (a valid id), or a copy of dir/from when from is not NULL.
static void write_shard(const char *dir, const char *name, const char *from, size_t n, size_t keep) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, from ? from : name);
    gm_shard s;
    cr_assert_eq(gm_shard_open(&s, path, 0), 0, "%s", gm_error());
    uint16_t *tok = malloc(n * sizeof *tok);
    cr_assert_not_null(tok);
    for (size_t i = 0; i < n; i++) tok[i] = i < keep && i < s.count ? s.tokens[i] : 7;
    gm_shard_close(&s);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(gm_shard_write(path, tok, n), 0, "%s", gm_error());
    free(tok);
}

Test(resume_identity, a_resume_on_changed_shards_is_refused_naming_each_change, .timeout = 240) {
    char *dir = th_tmpdir(), *out, *err, path[4200], log[4200], changes[4096];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=3", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    char first[17];
    snprintf(first, sizeof first, "%s", fingerprint(log, 0));
    cr_expect_eq(strlen(first), 16, "no data_fingerprint in the start record of %s", log);
    // One token of the last batch the run has not reached yet: the same size, other content.
    write_shard(dir, "train_000001.bin", NULL, 3000, 2999);
    snprintf(changes, sizeof changes, "train shard %s/train_000001.bin content changed (same size)", dir);
    expect_other_data(dir, changes);
    th_make_train_data(dir);
    // A shard that sorts first: the loader would start its stream there.
    write_shard(dir, "train_00000.bin", "train_000001.bin", 3000, 3000);
    snprintf(changes, sizeof changes, "train shard %s/train_00000.bin added", dir);
    expect_other_data(dir, changes);
    snprintf(path, sizeof path, "%s/train_00000.bin", dir);
    cr_assert_eq(remove(path), 0);
    // Resized and removed, and a validation shard changed: every change is named.
    write_shard(dir, "train_000000.bin", NULL, 2000, 2000);
    snprintf(path, sizeof path, "%s/train_000001.bin", dir);
    cr_assert_eq(remove(path), 0);
    write_shard(dir, "val_000000.bin", NULL, 2000, 10);
    snprintf(changes, sizeof changes, "train shard %s/train_000000.bin resized (7024 -> 5024 bytes), train shard "
             "%s/train_000001.bin removed, val shard %s/val_000000.bin content changed (same size)", dir, dir, dir);
    expect_other_data(dir, changes);
    // The same data again: the run continues, its log's second start record with the same fingerprint.
    th_make_train_data(dir);
    snprintf(path, sizeof path, "--resume=%s/run/ckpt.bin", dir);
    cr_assert_eq(th_train(dir, "muon-v2", path, &out, &err), 0, "%s", err);
    free(out), free(err);
    cr_expect_str_eq(fingerprint(log, 1), first);
    th_rmtree(dir);
    free(dir);
}

// A checkpoint of a build before data fingerprints (no "data" or "backend" section) still resumes,
// saying that its data went unchecked.
Test(resume_identity, a_checkpoint_without_a_data_record_resumes_with_a_note, .timeout = 120) {
    char *dir = th_tmpdir(), *out, *err, ckpt[4200], extra[4400], want[9000], log[4200];
    th_make_train_data(dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=3", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    th_ckpt_replace(ckpt, "data", NULL, 0);
    th_ckpt_replace(ckpt, "backend", NULL, 0);
    snprintf(extra, sizeof extra, "--resume=%s", ckpt);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 0, "%s", err);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    snprintf(want, sizeof want, "train: note: --resume: %s was written by a build that did not record its data or backend: "
             "it continues on these shards (data fingerprint %s) unchecked\n", ckpt, fingerprint(log, 1));
    cr_expect(strstr(out, want), "no note '%s' in:\n%s", want, out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// Halted on one backend and resumed on another: bench/gpu_step_compare.py moves checkpoints between
// cuda and the CPU backends on purpose, so this is not refused; where the arithmetic differs
// (cpu-bf16mm rounds matmul operands to bf16) the run says that it is neither backend's run, and its
// log's start record names the checkpoint's backend. cpu and guarded run the same kernels: no note.
Test(resume_identity, a_checkpoint_of_other_arithmetic_resumes_with_a_note, .timeout = 240) {
    char *dir = th_tmpdir(), *out, *err, ckpt[4200], extra[4400], want[9000], log[4200], *text;
    size_t len;
    th_make_train_data(dir);
    snprintf(ckpt, sizeof ckpt, "%s/run/ckpt.bin", dir);
    snprintf(log, sizeof log, "%s/run/log.jsonl", dir);
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=3 --backend=cpu-bf16mm", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(extra, sizeof extra, "--resume=%s --backend=cpu", ckpt);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 0, "%s", err);
    snprintf(want, sizeof want, "train: note: --resume: %s was written on --backend=cpu-bf16mm (the CPU's kernels with bf16 "
             "matmul operands); this run computes on --backend=cpu (the CPU's fp32 kernels): what follows is neither "
             "backend's uninterrupted run\n", ckpt);
    cr_expect(strstr(out, want), "no note '%s' in:\n%s", want, out);
    free(out), free(err);
    cr_assert_eq(gm_read_all(log, &text, &len), 0, "%s", gm_error());
    cr_expect(strstr(text, "\"checkpoint_backend\":\"cpu-bf16mm\""), "the resumed run's start record does not name the backend");
    free(text);
    cr_assert_eq(th_train(dir, "muon-v2", "--halt_at=3 --backend=cpu --overwrite=1", &out, &err), 130, "%s", err);
    free(out), free(err);
    snprintf(extra, sizeof extra, "--resume=%s --backend=guarded", ckpt);
    cr_assert_eq(th_train(dir, "muon-v2", extra, &out, &err), 0, "%s", err);
    cr_expect(!strstr(out, "train: note: --resume"), "cpu -> guarded noted:\n%s", out);
    free(out), free(err);
    th_rmtree(dir);
    free(dir);
}

// The comparison itself, on manifests as text: paths with spaces, and the same shards listed in
// another order (glob sorts by the locale's collation; the loader would read another stream).
Test(resume_identity, manifest_differences_are_named_shard_by_shard) {
    const char *was = "train 7024 00000000000000aa d/x y.bin\ntrain 7024 00000000000000bb d/z.bin\n";
    const char *resized = "train 5024 00000000000000aa d/x y.bin\ntrain 7024 00000000000000bb d/z.bin\n";
    const char *swapped = "train 7024 00000000000000bb d/z.bin\ntrain 7024 00000000000000aa d/x y.bin\n";
    char buf[256];
    gm_short_list l;
    gm_short_list_init(&l, buf, sizeof buf);
    cr_expect_eq(gm_data_manifest_diff(was, strlen(was), was, &l), 0);
    cr_expect_str_eq(gm_short_list_end(&l), "");
    gm_short_list_init(&l, buf, sizeof buf);
    cr_expect_eq(gm_data_manifest_diff(was, strlen(was), resized, &l), 1);
    cr_expect_str_eq(gm_short_list_end(&l), "train shard d/x y.bin resized (7024 -> 5024 bytes)");
    gm_short_list_init(&l, buf, sizeof buf);
    cr_expect_eq(gm_data_manifest_diff(was, strlen(was), swapped, &l), 1);
    cr_expect_str_eq(gm_short_list_end(&l), "the same shards in another order");
}
