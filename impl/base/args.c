#include "base/args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

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
        *key = keybuf;
        *value = eq + 1;
        *i += 1;
        return;
    }
    if (strlen(a + 2) >= sizeof keybuf) gm_die("%s: flag name too long", a);
    strcpy(keybuf, a + 2);
    *key = keybuf;
    if (*i + 1 >= argc) gm_die("--%s: missing value", keybuf);
    *value = argv[*i + 1];
    *i += 2;
}

long long gm_arg_int(const char *key, const char *value, long long lo, long long hi) {
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (errno || end == value || *end != '\0') gm_die("--%s: '%s' is not an integer", key, value);
    if (v < lo || v > hi) gm_die("--%s: %lld is out of range [%lld, %lld]", key, v, lo, hi);
    return v;
}

double gm_arg_double(const char *key, const char *value) {
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end != '\0' || !isfinite(v)) gm_die("--%s: '%s' is not a finite number", key, value);
    return v;
}
