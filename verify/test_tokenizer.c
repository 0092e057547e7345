// Tokenizer: lossless round trip, deterministic BPE training, save/load equivalence, pre-token
// boundaries, and refusal of bad input.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/io.h"
#include "base/rng.h"
#include "data/tokenizer.h"
#include "helpers.h"

static const char SAMPLE[] =
    "Aback \\A*back\"\\, adv. Toward the back or rear; backward. \"Therewith aback she started.\" --Chaucer.\n"
    "Abacus \\Ab\"a*cus\\, n.; pl. Latin Abaci. A table or tray strewn with sand, anciently used for drawing, "
    "calculating, etc. A calculating table or frame; an instrument for performing arithmetical calculations by "
    "balls sliding on wires, or counters in grooves, the lowest line representing units, the second line, tens, "
    "etc. It is still employed in China. In 1913 the abacus was 2,500 years old.   Tabs\tand\r\nnewlines.\n";

static void round_trip(const gm_tokenizer *t, const char *text, size_t len) {
    int32_t *ids = malloc((len + 1) * sizeof *ids);
    char *back = malloc(len + 1);
    long n = gm_tok_encode(t, text, len, ids, len + 1);
    cr_assert_geq(n, 0);
    cr_assert_leq((size_t)n, len, "a token covers at least one byte");
    for (long i = 0; i < n; i++) cr_assert(ids[i] >= 0 && ids[i] < t->vocab && ids[i] != GM_TOK_EOT);
    cr_assert_eq(gm_tok_decode(t, ids, (size_t)n, back, len + 1), (long)len);
    cr_assert_arr_eq(back, text, len, "decode(encode(text)) == text");
    free(ids);
    free(back);
}

Test(tokenizer, byte_level_is_identity) {
    gm_tokenizer t;
    gm_tok_init_bytes(&t);
    cr_assert_eq(t.vocab, 257);
    int32_t ids[sizeof SAMPLE];
    long n = gm_tok_encode(&t, SAMPLE, strlen(SAMPLE), ids, sizeof SAMPLE);
    cr_assert_eq(n, (long)strlen(SAMPLE));
    for (long i = 0; i < n; i++) cr_assert_eq(ids[i], (unsigned char)SAMPLE[i]);
    gm_tok_free(&t);
}

Test(tokenizer, bpe_round_trips_text_and_random_bytes) {
    gm_tokenizer t;
    cr_assert_eq(gm_tok_train(&t, SAMPLE, strlen(SAMPLE), 320), 0, "%s", gm_error());
    cr_assert_gt(t.nmerges, 20);
    round_trip(&t, SAMPLE, strlen(SAMPLE));
    // Arbitrary bytes (including NUL and invalid UTF-8) survive too.
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(gm_rng_u32(11, 0, i) & 0xff);
    round_trip(&t, junk, sizeof junk);
    // Merges compress: the sample needs fewer tokens than bytes.
    int32_t ids[sizeof SAMPLE];
    long n = gm_tok_encode(&t, SAMPLE, strlen(SAMPLE), ids, sizeof SAMPLE);
    cr_assert_lt(n, (long)strlen(SAMPLE) * 2 / 3, "%ld tokens for %zu bytes", n, strlen(SAMPLE));
    gm_tok_free(&t);
}

Test(tokenizer, training_is_deterministic_and_save_load_is_exact) {
    gm_tokenizer a, b, c;
    cr_assert_eq(gm_tok_train(&a, SAMPLE, strlen(SAMPLE), 300), 0);
    cr_assert_eq(gm_tok_train(&b, SAMPLE, strlen(SAMPLE), 300), 0);
    cr_assert_eq(a.nmerges, b.nmerges);
    cr_assert_arr_eq(a.merges, b.merges, (size_t)a.nmerges * sizeof a.merges[0]);
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/tok.txt", dir);
    cr_assert_eq(gm_tok_save(&a, path), 0, "%s", gm_error());
    cr_assert_eq(gm_tok_load(&c, path), 0, "%s", gm_error());
    cr_assert_eq(c.vocab, a.vocab);
    int32_t ia[sizeof SAMPLE], ic[sizeof SAMPLE];
    long na = gm_tok_encode(&a, SAMPLE, strlen(SAMPLE), ia, sizeof SAMPLE);
    long nc = gm_tok_encode(&c, SAMPLE, strlen(SAMPLE), ic, sizeof SAMPLE);
    cr_assert_eq(na, nc);
    cr_assert_arr_eq(ia, ic, (size_t)na * sizeof ia[0]);
    gm_tok_free(&a), gm_tok_free(&b), gm_tok_free(&c);
    th_rmtree(dir);
    free(dir);
}

Test(tokenizer, pieces_follow_word_boundaries) {
    const char *s = "Hello,  world 42x\n\nend";
    const char *want[] = {"Hello", ",", " ", " world", " 42", "x", "\n\n", "end"};
    size_t at = 0, len = strlen(s);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        size_t pl = gm_tok_piece_len(s + at, len - at);
        cr_assert_eq(pl, strlen(want[k]), "piece %zu: got '%.*s'", k, (int)pl, s + at);
        cr_assert(strncmp(s + at, want[k], pl) == 0);
        at += pl;
    }
    cr_assert_eq(at, len);
}

Test(tokenizer, eot_decodes_and_bad_ids_are_refused) {
    gm_tokenizer t;
    gm_tok_init_bytes(&t);
    int32_t ids[] = {72, 105, GM_TOK_EOT};
    char out[64];
    cr_assert_eq(gm_tok_decode(&t, ids, 3, out, sizeof out), 15);
    cr_assert_str_eq(out, "Hi<|endoftext|>");
    int32_t bad[] = {72, 257};
    cr_assert_eq(gm_tok_decode(&t, bad, 2, out, sizeof out), -1);
    gm_tok_free(&t);
}

Test(tokenizer, bad_input_is_refused_with_a_reason) {
    gm_tokenizer t;
    cr_assert_neq(gm_tok_train(&t, "", 0, 300), 0);
    cr_assert(strstr(gm_error(), "empty corpus"), "%s", gm_error());
    cr_assert_neq(gm_tok_train(&t, SAMPLE, strlen(SAMPLE), 70000), 0);
    cr_assert(strstr(gm_error(), "vocab 70000 out of range"), "%s", gm_error());
    char *dir = th_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/tok.txt", dir);
    const char *files[][2] = {
        {"hello\n", "not a tokenizer file"},
        {"gptmuon-tokenizer 2\nvocab 257\neot 256\nmerges 0\n", "unsupported tokenizer version 2"},
        {"gptmuon-tokenizer 1\nvocab 300\neot 256\nmerges 0\n", "inconsistent header"},
        {"gptmuon-tokenizer 1\nvocab 259\neot 256\nmerges 2\n97 98\n98 zz\n", "merge line 2 is malformed"},
        {"gptmuon-tokenizer 1\nvocab 259\neot 256\nmerges 2\n97 98\n98 -7\n", "merge line 2 is malformed"},
        // A file cut inside its last number ("98 97\n" cut to "98 9") once loaded as merge (98, 9).
        {"gptmuon-tokenizer 1\nvocab 259\neot 256\nmerges 2\n97 98\n98 9", "merge line 2 is cut short (the file ends inside it)"},
        {"gptmuon-tokenizer 1\nvocab 259\neot 256\nmerges 2\n97 98\n98 97\n\n\n", "2 bytes after the last of its 2 merges"},
        // 4294967393 = 2^32 + 97 once read as 97, and 2^32 + 1 merges as 1.
        {"gptmuon-tokenizer 1\nvocab 258\neot 256\nmerges 1\n97 4294967393\n", "merge line 1 is out of range"},
        {"gptmuon-tokenizer 1\nvocab 258\neot 256\nmerges 4294967297\n97 98\n", "bad header: a line is out of range"},
        {"gptmuon-tokenizer 1\nvocab 258\neot 256\nmerges 1\n97 98\nxyz\n", "4 bytes after the last of its 1 merges"},
        {"gptmuon-tokenizer 1\nvocab 258\neot 256\nmerges 1\n97  98\n", "merge line 1 is malformed"},
        {"gptmuon-tokenizer 1\nvocab 258\neot 256\nmerges 1", "bad header: a line is cut short"},
        {"gptmuon-tokenizer 1\nvocab 65536\neot 256\nmerges 65279\n97 98\n", "header says 65279 merges, but the 6 bytes after it hold at most 1 merge lines"},
        {"gptmuon-tokenizer 1\nvocab 258\neot 256\nmerges 1\n97 400\n", "do not exist before it"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        cr_assert_eq(gm_write_file_atomic(path, files[i][0], strlen(files[i][0])), 0);
        cr_assert_neq(gm_tok_load(&t, path), 0, "case %zu accepted", i);
        cr_assert(strstr(gm_error(), files[i][1]) && strstr(gm_error(), path), "case %zu: %s", i, gm_error());
    }
    cr_assert_neq(gm_tok_load(&t, "/tmp/no-such-tokenizer.txt"), 0);
    cr_assert(strstr(gm_error(), "cannot open"), "%s", gm_error());
    th_rmtree(dir);
    free(dir);
}

// The message of a merge refused while loading names the file once, then the fault (gm_fail adds
// the path to a message it formats from gm_error(): the two once overlapped and garbled it).
Test(tokenizer, load_errors_name_the_file_once) {
    char *dir = th_tmpdir(), path[4200], want[4600];
    snprintf(path, sizeof path, "%s/tok.txt", dir);
    const char *text = "gptmuon-tokenizer 1\nvocab 258\neot 256\nmerges 1\n97 400\n";
    cr_assert_eq(gm_write_file_atomic(path, text, strlen(text)), 0);
    gm_tokenizer t;
    cr_assert_neq(gm_tok_load(&t, path), 0);
    snprintf(want, sizeof want, "%s: tokenizer: merge 0 joins ids (97, 400) that do not exist before it", path);
    cr_assert_str_eq(gm_error(), want);
    th_rmtree(dir);
    free(dir);
}

// A file of about 300 bytes whose merges each join the previous token with itself: lengths double
// (2, 4, ..., 2^31 bytes), which once made gm_tok_load allocate gigabytes and overflow an int.
// Refused at the first token longer than GM_TOK_MAX_BYTES, having allocated little.
Test(tokenizer, crafted_doubling_merges_are_refused) {
    char *dir = th_tmpdir(), path[4200], want[4600], text[512];
    const int nmerges = 31;
    int n = snprintf(text, sizeof text, "gptmuon-tokenizer 1\nvocab %d\neot 256\nmerges %d\n97 97\n", GM_TOK_FIRST_MERGE + nmerges, nmerges);
    for (int m = 1; m < nmerges; m++) n += snprintf(text + n, sizeof text - (size_t)n, "%d %d\n", 256 + m, 256 + m);
    cr_assert_leq(n, 302, "the crafted file is %d bytes", n);
    snprintf(path, sizeof path, "%s/tok.txt", dir);
    cr_assert_eq(gm_write_file_atomic(path, text, (size_t)n), 0);
    gm_tokenizer t;
    cr_assert_neq(gm_tok_load(&t, path), 0, "a tokenizer with a 2 GB token was accepted");
    // merge 7 makes 2^8 = 256 bytes (allowed), merge 8 would make 512.
    snprintf(want, sizeof want, "%s: tokenizer: merge 8 joins ids (264, 264) into a token of 512 bytes, longer than %d", path,
             GM_TOK_MAX_BYTES);
    cr_assert_str_eq(gm_error(), want);
    th_rmtree(dir);
    free(dir);
}

// Training respects the same bound: a corpus of one long run of a single letter would otherwise
// merge it into ever longer tokens.
Test(tokenizer, training_never_makes_a_token_longer_than_the_bound) {
    size_t len = 4096;
    char *text = malloc(len);
    memset(text, 'a', len);
    gm_tokenizer t;
    cr_assert_eq(gm_tok_train(&t, text, len, 300), 0, "%s", gm_error());
    int longest = 0;
    for (int id = 0; id < t.vocab; id++) longest = t.nbytes[id] > longest ? t.nbytes[id] : longest;
    cr_assert_eq(longest, GM_TOK_MAX_BYTES, "longest token %d bytes", longest);
    round_trip(&t, text, len);
    gm_tok_free(&t);
    free(text);
}
