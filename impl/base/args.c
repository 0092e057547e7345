#include "base/args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fmt_double.h"

// Flag names are spelled with underscores; hyphens are accepted for them (--val-every = --val_every).
static char *underscores(char *key) {
    for (char *p = key; *p; p++)
        if (*p == '-') *p = '_';
    return key;
}

// A value is never another flag: "--out_dir --steps=3" once trained into a folder named
// "--steps=3". A path that does begin with "--" is still reachable as ./--name.
static void refuse_flag_as_value(const char *key, const char *value) {
    if (strncmp(value, "--", 2) == 0)
        gm_die("--%s: '%s' begins with -- as a flag does (its value missing?); a value that really does is given as --%s=./%s",
               key, value, key, value);
}

// A later argument that gives the flag `key` again (its index), or 0. The arguments after argv[from]
// are read as gm_arg_next reads them, without dying: what is not a flag is skipped (the caller's
// loop refuses it when it gets there), and a flag without "=" takes the next argument as its value
// unless that is a flag too.
static int given_again(int argc, char **argv, int from, const char *key) {
    size_t kl = strlen(key);
    for (int j = from; j < argc; j++) {
        const char *a = argv[j];
        if (strncmp(a, "--", 2) != 0) continue;
        const char *eq = strchr(a, '='), *end = eq ? eq : a + strlen(a);
        int same = (size_t)(end - a - 2) == kl;
        for (size_t c = 0; same && c < kl; c++) same = (a[2 + c] == '-' ? '_' : a[2 + c]) == key[c];
        if (same) return j;
        if (!eq && j + 1 < argc && strncmp(argv[j + 1], "--", 2) != 0) j++;
    }
    return 0;
}

// A flag given twice once silently took its last value (`--steps=3 ... --steps=30` trained 30).
static void refuse_repeat(int argc, char **argv, int from, const char *key, const char *value) {
    int j = given_again(argc, argv, from, key);
    if (!j) return;
    const char *eq = strchr(argv[j], '='), *again = eq ? eq + 1 : j + 1 < argc ? argv[j + 1] : "";
    gm_die("--%s: given twice ('%s', then '%s'); give it once", key, value, again);
}

void gm_arg_next(int argc, char **argv, int *i, const char **key, const char **value) {
    static char keybuf[256];
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0') gm_die("%s: unexpected argument (flags look like --key=value)", a);
    const char *eq = strchr(a, '=');
    if (eq) {
        size_t n = (size_t)(eq - a - 2);
        if (n >= sizeof keybuf) gm_die("%s: flag name too long", a);
        memcpy(keybuf, a + 2, n);
        keybuf[n] = '\0';
        *key = underscores(keybuf);
        *value = eq + 1;
        *i += 1;
        refuse_flag_as_value(keybuf, *value);
        refuse_repeat(argc, argv, *i, keybuf, *value);
        return;
    }
    if (strlen(a + 2) >= sizeof keybuf) gm_die("%s: flag name too long", a);
    strcpy(keybuf, a + 2);
    *key = underscores(keybuf);
    if (*i + 1 >= argc) gm_die("--%s: missing value", keybuf);
    *value = argv[*i + 1];
    *i += 2;
    refuse_flag_as_value(keybuf, *value);
    refuse_repeat(argc, argv, *i, keybuf, *value);
}

// strtoll and strtod skip leading blanks and accept a sign, "0x" prefixes (strtod: hex floats) and,
// in strtod, "inf"/"nan": a flag value is plain decimal, so its first character must be a digit,
// a '-' or (numbers only) a '.', and no 'x' may follow.
static int plain_decimal(const char *v, int fraction) {
    const char *d = v[0] == '-' ? v + 1 : v;
    return ((d[0] >= '0' && d[0] <= '9') || (fraction && d[0] == '.')) && !strpbrk(v, "xX");
}

int gm_parse_int(const char *key, const char *value, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    if (!plain_decimal(value, 0)) return gm_fail("--%s: '%s' is not an integer", key, value);
    long long v = strtoll(value, &end, 10);
    if (errno || end == value || *end != '\0') return gm_fail("--%s: '%s' is not an integer", key, value);
    if (v < lo || v > hi) return gm_fail("--%s: %lld is out of range [%lld, %lld]", key, v, lo, hi);
    *out = v;
    return 0;
}

int gm_parse_double(const char *key, const char *value, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = plain_decimal(value, 1) ? strtod(value, &end) : (end = (char *)value, 0.0);
    if (errno || end == value || *end != '\0' || !isfinite(v))
        return gm_fail("--%s: '%s' is not a finite number", key, value);
    char vs[GM_FMT_DOUBLE_LEN], los[GM_FMT_DOUBLE_LEN], his[GM_FMT_DOUBLE_LEN];
    if (v < lo || v > hi)
        return gm_fail("--%s: %s is out of range [%s, %s]", key, gm_fmt_double(v, vs), gm_fmt_double(lo, los),
                       gm_fmt_double(hi, his));
    *out = v;
    return 0;
}

int gm_parse_u64(const char *key, const char *value, unsigned long long *out) {
    char *end;
    errno = 0;
    // strtoull accepts a sign (and negates): refuse it, and anything but decimal digits first.
    if (value[0] < '0' || value[0] > '9') return gm_fail("--%s: '%s' is not an unsigned integer", key, value);
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || *end != '\0') return gm_fail("--%s: '%s' is not an unsigned integer", key, value);
    *out = v;
    return 0;
}

long long gm_arg_int(const char *key, const char *value, long long lo, long long hi) {
    long long v;
    if (gm_parse_int(key, value, lo, hi, &v)) gm_die_last();
    return v;
}

double gm_arg_double(const char *key, const char *value) {
    double v;
    if (gm_parse_double(key, value, -HUGE_VAL, HUGE_VAL, &v)) gm_die_last();
    return v;
}
