// Flag values are plain decimal: a leading zero is not octal, "0x" is refused, blanks and '+' are
// refused, and each field of the run configuration (model and run tables) parses, range-checks
// and prints back through one table; flags the chosen recipe never reads are refused; two
// configurations' differences are listed field by field.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/io.h"
#include "train/run_config.h"
#include "helpers.h"

static gm_run_config preset(void) {
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "softcap", "tiny"), 0, "%s", gm_error());
    return rc;
}

static void refused(const char *key, const char *value, const char *fault) {
    gm_run_config rc = preset();
    cr_assert_eq(gm_run_config_set(&rc, key, value), -1, "--%s=%s was accepted", key, value);
    cr_assert(strstr(gm_error(), fault), "--%s=%s: expected '%s' in '%s'", key, value, fault, gm_error());
}

Test(flags, integers_are_decimal) {
    gm_run_config rc = preset();
    cr_assert_eq(gm_run_config_set(&rc, "steps", "010"), 0, "%s", gm_error());
    cr_assert_eq(rc.steps, 10, "--steps=010 gave %d steps", rc.steps);
    cr_assert_eq(gm_run_config_set(&rc, "seed", "0012"), 0, "%s", gm_error());
    cr_assert_eq(rc.seed, 12);
    refused("steps", "0x3", "--steps: '0x3' is not an integer");
    refused("steps", " 5", "--steps: ' 5' is not an integer");
    refused("steps", "+5", "--steps: '+5' is not an integer");
    refused("seed", "0x10", "--seed: '0x10' is not an unsigned integer");
    refused("seed", "-1", "--seed: '-1' is not an unsigned integer");
    refused("val_tokens", "1e6", "--val_tokens: '1e6' is not an integer");
}

Test(flags, numbers_are_decimal_and_finite) {
    gm_run_config rc = preset();
    cr_assert_eq(gm_run_config_set(&rc, "lr_matrix", ".05"), 0, "%s", gm_error());
    cr_assert_eq(rc.lr_matrix, 0.05);
    cr_assert_eq(gm_run_config_set(&rc, "adam_eps", "1e-10"), 0, "%s", gm_error());
    cr_assert_eq(rc.adam.eps, 1e-10);
    refused("lr_matrix", "0x1p-3", "--lr_matrix: '0x1p-3' is not a finite number");
    refused("lr_matrix", "inf", "--lr_matrix: 'inf' is not a finite number");
    refused("lr_matrix", "nan", "--lr_matrix: 'nan' is not a finite number");
    refused("lr_matrix", "-1", "--lr_matrix: -1 is out of range");
}

Test(flags, model_and_run_fields_share_one_path) {
    gm_run_config rc = preset();
    cr_assert_eq(gm_run_config_set(&rc, "d_model", "64"), 0, "%s", gm_error());  // a model field
    cr_assert_eq(rc.model.d_model, 64);
    cr_assert_eq(gm_run_config_set(&rc, "skip_attn_mask", "2147483648"), 0, "%s", gm_error());  // bit 31
    cr_assert_eq(rc.model.skip_attn_mask, 1u << 31);
    cr_assert_eq(gm_run_config_set(&rc, "mlp_act", "gelu"), 0, "%s", gm_error());
    cr_assert_eq(rc.model.mlp_act, GM_ACT_GELU);
    cr_assert_eq(gm_run_config_set(&rc, "out_dir", "a\"b\\c"), 0, "%s", gm_error());
    char *json = gm_run_config_json(&rc);
    cr_assert(strstr(json, "\"d_model\":64,"), "%s", json);
    cr_assert(strstr(json, "\"skip_attn_mask\":2147483648,"), "%s", json);
    cr_assert(strstr(json, "\"mlp_act\":\"gelu\","), "%s", json);
    cr_assert(strstr(json, "\"out_dir\":\"a\\\"b\\\\c\","), "string not escaped: %s", json);
    free(json);
    refused("mlp_act", "swish", "--mlp_act: 'swish' is not one of: gelu, relu2");
    refused("nope", "1", "--nope: unknown flag");
}

Test(flags, unknown_preset_and_scale_are_named) {
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, "gpt5", "tiny"), -1);
    cr_assert(strstr(gm_error(), "--preset: unknown preset 'gpt5'"), "%s", gm_error());
    cr_assert_eq(gm_run_config_preset(&rc, "softcap", "huge"), -1);
    cr_assert(strstr(gm_error(), "--scale: unknown scale 'huge' (full, small, tiny, test)"), "%s", gm_error());
}

// A flag the chosen recipe never reads is refused by gm_run_config_finish, naming what makes it
// unused (--warmup_frac on the cooldown-fraction schedule was once accepted and ignored).
static void unused(const char *preset_name, const char *flags, const char *fault) {
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, preset_name, "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, flags);
    cr_assert_eq(gm_run_config_finish(&rc), -1, "%s %s was accepted", preset_name, flags);
    cr_assert_str_eq(gm_error(), fault);
}

static void used(const char *preset_name, const char *flags) {
    gm_run_config rc;
    cr_assert_eq(gm_run_config_preset(&rc, preset_name, "tiny"), 0, "%s", gm_error());
    th_apply_flags(&rc, flags);
    cr_assert_eq(gm_run_config_finish(&rc), 0, "%s %s: %s", preset_name, flags, gm_error());
}

Test(flags, flags_without_effect_on_the_schedule_are_refused) {
    unused("softcap", "--warmup_frac=0.1",
           "--warmup_frac: has no effect on this run (--lr_schedule=cooldown-frac sets the lr from --cooldown_frac alone, "
           "preset softcap); leave it out");
    unused("softcap", "--warmdown_frac=0",
           "--warmdown_frac: has no effect on this run (--lr_schedule=cooldown-frac sets the lr from --cooldown_frac alone, "
           "preset softcap); leave it out");
    unused("muon-v2", "--cooldown_frac=0.3",
           "--cooldown_frac: has no effect on this run (--lr_schedule=warmup-warmdown sets the lr from --warmup_frac and "
           "--warmdown_frac, preset muon-v2); leave it out");
    unused("adamw", "--muon_momentum_warmup_frac=0.2",
           "--muon_momentum_warmup_frac: has no effect on this run (--matrix_opt=adam: no Muon momentum to warm up, preset "
           "adamw); leave it out");
    unused("muon-v2", "--window_end_tokens=1024",
           "--window_end_tokens: has no effect on this run (--window_start_tokens=0: no sliding window, preset muon-v2); "
           "leave it out");
    // The same flags where the recipe reads them.
    used("softcap", "--cooldown_frac=0.3");
    used("softcap", "--lr_schedule=warmup-warmdown --warmup_frac=0.1");
    used("muon-v2", "--lr_schedule=cooldown-frac --cooldown_frac=0.4");
    used("softcap", "--muon_momentum_warmup_frac=0.2 --window_end_tokens=1024");
}

// The message of an unknown coefficient set names the flag once (it was formatted from the error
// buffer into itself: "--ns_coeffs: --ns_coeffs: : unknown ...").
Test(flags, unknown_coefficient_set_is_named_once) {
    gm_run_config rc = preset();
    cr_assert_eq(gm_run_config_set(&rc, "ns_coeffs", "septic"), 0, "%s", gm_error());
    cr_assert_eq(gm_run_config_finish(&rc), -1);
    cr_assert_str_eq(gm_error(), "--ns_coeffs: newton-schulz: unknown coefficient set 'septic' (known: quintic, cubic, you5, "
                                 "polar-express)");
}

Test(flags, configuration_differences_are_listed_by_field) {
    char buf[512];
    gm_run_config_diff("{\"preset\":\"softcap\",\"lr_matrix\":0.05,\"out_dir\":\"a,b\",\"world_size\":1}",
                       "{\"preset\":\"softcap\",\"lr_matrix\":0.1,\"out_dir\":\"a,b\",\"world_size\":2,\"seed\":3}", buf, sizeof buf);
    cr_assert_str_eq(buf, "lr_matrix (0.05 -> 0.1), world_size (1 -> 2), seed (absent -> 3)");
    gm_run_config a = preset(), b = preset();
    char *ja = gm_run_config_json(&a), *jb;
    gm_run_config_diff(ja, ja, buf, sizeof buf);
    cr_assert_str_eq(buf, "", "a configuration differs from itself: %s", buf);
    cr_assert_eq(gm_run_config_set(&b, "out_dir", "x\",\"lr_matrix\":9"), 0);  // quotes inside a string value
    jb = gm_run_config_json(&b);
    gm_run_config_diff(ja, jb, buf, sizeof buf);
    cr_assert_str_eq(buf, "out_dir (\"runs/softcap-tiny\" -> \"x\\\",\\\"lr_matrix\\\":9\")");
    free(ja), free(jb);
    // More than the room: whole fields, then how many more (a value was once cut in the middle).
    char small[64];
    int n = gm_run_config_diff("{\"lr_matrix\":0.00036,\"seed\":1337,\"preset\":\"softcap\"}",
                               "{\"lr_matrix\":0.1,\"seed\":7,\"preset\":\"muon-v2\"}", small, sizeof small);
    cr_expect_eq(n, 3);
    cr_expect_str_eq(small, "lr_matrix (0.00036 -> 0.1), and 2 more");
}

// A new scratch folder, made the working directory, with GM_BIN made absolute first (th_bin_path
// may be relative to the checkout): a program that takes a flag as a folder name writes there, not
// into the checkout. malloc'd path.
static char *enter_scratch_folder(void) {
    char *bin = realpath(th_bin_path("."), NULL), *dir = th_tmpdir();
    cr_assert(bin, "%s: no such folder", th_bin_path("."));
    setenv("GM_BIN", bin, 1);
    free(bin);
    cr_assert_eq(chdir(dir), 0, "%s", dir);
    return dir;
}

// `--out_dir --steps=3` once trained into a folder named "--steps=3" for the default step count: a
// flag given without "=" took the next argument as its value even when that was the next flag.
// Every program parses its flags with gm_arg_next, so each one refuses such a value, and says how
// a path that really begins with "--" is passed. (The sanitizer build has only some of the benches.)
Test(flags, a_value_never_swallows_the_next_flag) {
    static const struct {
        const char *prog, *args, *want;
    } CASES[] = {
        {"train", "--preset=softcap --scale=tiny --out_dir --steps=3",
         "train: error: --out_dir: '--steps=3' begins with -- as a flag does (its value missing?); a value that really "
         "does is given as --out_dir=./--steps=3"},
        {"train", "--preset=softcap --scale=tiny --out_dir=--weird", "--out_dir: '--weird' begins with -- as a flag does"},
        {"make_data", "--out --vocab=300", "make_data: error: --out: '--vocab=300' begins with -- as a flag does"},
        {"dump_refmodel", "--out --help", "dump_refmodel: error: --out: '--help' begins with -- as a flag does"},
        {"bench/kernels", "--out --steps=2", "kernels: error: --out: '--steps=2' begins with -- as a flag does"},
        {"bench/model_report", "--backend --reps=1", "model_report: error: --backend: '--reps=1' begins with -- as a flag does"},
        {"bench/ns_report", "--out --reps=1", "ns_report: error: --out: '--reps=1' begins with -- as a flag does"},
        {"bench/ns_time", "--coeffs --reps=1", "ns_time: error: --coeffs: '--reps=1' begins with -- as a flag does"},
        {"bench/attention_gpu", "--out --reps=1", "attention_gpu: error: --out: '--reps=1' begins with -- as a flag does"},
    };
    // A program that swallows the flag writes into a folder named after it: in a scratch folder,
    // not the checkout (a run of this test against the unfixed programs left such folders there).
    char *dir = enter_scratch_folder();
    int ran = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        if (!th_file_exists(th_bin_path(CASES[i].prog))) continue;
        th_expect_refused(CASES[i].prog, CASES[i].args, CASES[i].want, 1);
        ran++;
    }
    cr_assert_geq(ran, 6, "only %d of the programs were found under GM_BIN", ran);
    th_rmtree(dir);
    free(dir);
}

// bench/attention_gpu --skip leaves forms out of the timing (the GPU report, where a form failed
// its check on the node): a name that is no form, the base (mma) or the reference (naive), or an
// empty item is one line naming the flag and the item, before the GPU is looked for.
Test(flags, attention_bench_skips_only_forms_it_may) {
    if (!th_file_exists(th_bin_path("bench/attention_gpu"))) cr_skip_test("bench/attention_gpu not built");
    static const struct {
        const char *args, *want;
    } CASES[] = {
        {"--skip=bogus", "attention_gpu: error: --skip=bogus: 'bogus' is not a form it may leave out (mma32, "},
        {"--skip=wgmma,mma", "--skip=wgmma,mma: 'mma' is not a form it may leave out"},
        {"--skip=naive", "'naive' is not a form it may leave out"},
        {"--skip=auto", "'auto' is not a form it may leave out"},
        {"--skip=", "--skip=: '' is not a form it may leave out"},
        {"--skip=wgmma,,cudnn", "--skip=wgmma,,cudnn: '' is not a form it may leave out"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        th_expect_refused("bench/attention_gpu", CASES[i].args, CASES[i].want, 1);
}

// `--steps=3 ... --steps=30` trained 30 steps and `make_data --vocab=300 ... --vocab=512` built a
// vocab of 512, without a word: every program refuses a flag given twice, in either spelling and
// either form (--key=value, --key value), naming it and both values, before doing anything.
Test(flags, a_flag_given_twice_is_refused) {
    static const struct {
        const char *prog, *args, *want;
    } CASES[] = {
        {"train", "--preset=softcap --scale=tiny --steps=3 --plan_memory=1 --steps=30",
         "train: error: --steps: given twice ('3', then '30'); give it once\n"},
        {"train", "--preset=softcap --scale=tiny --val-every=3 --plan_memory=1 --val_every 4",
         "train: error: --val_every: given twice ('3', then '4'); give it once\n"},
        {"train", "--preset=softcap --scale=tiny --preset=adamw", "train: error: --preset: given twice ('softcap', then 'adamw'); give it once\n"},
        {"make_data", "--vocab=300 --out=ds --vocab=512", "make_data: error: --vocab: given twice ('300', then '512'); give it once\n"},
        {"dump_refmodel", "--out=a --out b", "dump_refmodel: error: --out: given twice ('a', then 'b'); give it once\n"},
        {"bench/kernels", "--steps=2 --steps=3", "kernels: error: --steps: given twice ('2', then '3'); give it once\n"},
    };
    char *dir = enter_scratch_folder();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        if (th_file_exists(th_bin_path(CASES[i].prog))) th_expect_refused(CASES[i].prog, CASES[i].args, CASES[i].want, 1);
    cr_expect_eq(th_dir_entries(dir), 0, "a refused program wrote something");
    th_rmtree(dir);
    free(dir);
}

// `--warmup_frac=0.7 --warmdown_frac=0.5` was refused at --steps=100 but accepted at --steps=2,
// where both rounded to one step: the fractions are checked, at every step count; fractions that
// fit are accepted at every step count, their rounded steps never overlapping.
Test(flags, schedule_fractions_are_checked_not_their_rounded_steps) {
    for (int steps = 1; steps <= 120; steps++) {
        char flags[160];
        snprintf(flags, sizeof flags, "--lr_schedule=warmup-warmdown --warmup_frac=0.7 --warmdown_frac=0.5 --steps=%d", steps);
        unused("softcap", flags, "--warmup_frac/--warmdown_frac: 0.7 + 0.5 exceed 1");
        gm_run_config rc;
        cr_assert_eq(gm_run_config_preset(&rc, "softcap", "tiny"), 0, "%s", gm_error());
        snprintf(flags, sizeof flags, "--lr_schedule=warmup-warmdown --warmup_frac=0.5 --warmdown_frac=0.5 --steps=%d", steps);
        th_apply_flags(&rc, flags);
        cr_assert_eq(gm_run_config_finish(&rc), 0, "%s: %s", flags, gm_error());
        cr_assert_leq(rc.lr.warmup + rc.lr.warmdown, steps, "%s: %d + %d steps", flags, rc.lr.warmup, rc.lr.warmdown);
    }
}

// The scales were listed four ways (README full|small|tiny|test, --help full|small|tiny, the
// missing-flag error without test, the typo error with it): every message, --help and the README
// list the names of the table that defines them, and so do they the presets.
static void join(const char *const *names, const char *sep, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; names[i]; i++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? sep : "", names[i]);
}

Test(flags, scales_and_presets_are_listed_from_their_tables) {
    char scales[128], bars[128], presets[256], want[512], *out, *readme;
    join(gm_scale_names, ", ", scales, sizeof scales);
    join(gm_scale_names, "|", bars, sizeof bars);
    join(gm_preset_names, ", ", presets, sizeof presets);
    cr_assert_str_eq(bars, "full|small|tiny|test");
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' --help", th_bin_path("train"));
    cr_assert_eq(th_run(cmd, &out, NULL), 0);
    snprintf(want, sizeof want, "--scale %s ", bars);
    cr_expect(strstr(out, want), "no '%s' in train --help: %s", want, out);
    snprintf(want, sizeof want, "presets: %s\n", presets);
    cr_expect(strstr(out, want), "no '%s' in train --help: %s", want, out);
    free(out);
    snprintf(want, sizeof want, "train: error: --scale: missing (%s)", scales);
    th_expect_refused("train", "--preset=softcap", want, 1);
    snprintf(want, sizeof want, "train: error: --scale: unknown scale 'huge' (%s)", scales);
    th_expect_refused("train", "--preset=softcap --scale=huge", want, 1);
    snprintf(want, sizeof want, "train: error: --preset: missing (%s)", presets);
    th_expect_refused("train", "--scale=tiny", want, 1);
    snprintf(want, sizeof want, "train: error: --preset: unknown preset 'gpt5' (%s)", presets);
    th_expect_refused("train", "--preset=gpt5 --scale=tiny", want, 1);
    size_t len;
    cr_assert_eq(gm_read_all(th_root_path("README.md"), &readme, &len), 0, "%s", gm_error());
    snprintf(want, sizeof want, "--scale %s ", bars);
    cr_expect(strstr(readme, want), "README.md does not list the scales as '%s'", want);
    free(readme);
}
