// Flag values are plain decimal: a leading zero is not octal, "0x" is refused, blanks and '+' are
// refused, and each field of the run configuration (model and run tables) parses, range-checks
// and prints back through one table.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "train/run_config.h"

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
