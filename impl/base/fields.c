#include "base/fields.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/args.h"
#include "base/error.h"
#include "base/fmt_double.h"

const gm_field *gm_field_find(const gm_field *table, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(table[i].key, key)) return &table[i];
    return NULL;
}

int gm_field_set(const gm_field *f, void *base, const char *value) {
    char *p = (char *)base + f->offset;
    long long v;
    switch (f->type) {
    case GM_F_INT:
    case GM_F_UINT:
    case GM_F_LLONG:
        if (gm_parse_int(f->key, value, (long long)f->lo, (long long)f->hi, &v)) return -1;
        if (f->type == GM_F_INT) *(int *)p = (int)v;
        else if (f->type == GM_F_UINT) *(unsigned *)p = (unsigned)v;
        else *(long long *)p = v;
        return 0;
    case GM_F_U64: {
        unsigned long long u;
        if (gm_parse_u64(f->key, value, &u)) return -1;
        *(uint64_t *)p = u;
        return 0;
    }
    case GM_F_DOUBLE: return gm_parse_double(f->key, value, f->lo, f->hi, (double *)p);
    case GM_F_STR:
        if (strlen(value) >= f->size) return gm_fail("--%s: value longer than %zu characters", f->key, f->size - 1);
        memcpy(p, value, strlen(value) + 1);
        return 0;
    case GM_F_ENUM: {
        char known[256];
        for (int i = 0; f->names[i]; i++) {
            if (!strcmp(f->names[i], value)) {
                *(int *)p = i;
                return 0;
            }
        }
        return gm_fail("--%s: '%s' is not one of: %s", f->key, value, gm_names_join(f->names, ", ", known, sizeof known));
    }
    }
    return gm_fail("--%s: internal: bad field type", f->key);
}

// s as the body of a JSON string into buf at *at; -1 when it does not fit.
static int put_escaped(char *buf, size_t len, size_t *at, const char *s) {
    for (; *s; s++) {
        char tmp[8];
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') snprintf(tmp, sizeof tmp, "\\%c", c);
        else if (c < 0x20) snprintf(tmp, sizeof tmp, "\\u%04x", c);
        else tmp[0] = (char)c, tmp[1] = '\0';
        size_t n = strlen(tmp);
        if (*at + n + 1 > len) return -1;
        memcpy(buf + *at, tmp, n + 1);
        *at += n;
    }
    return 0;
}

int gm_field_format(const gm_field *f, const void *base, int json, char *buf, size_t len) {
    const char *p = (const char *)base + f->offset;
    const char *text = NULL;
    int n = 0;
    switch (f->type) {
    case GM_F_INT: n = snprintf(buf, len, "%d", *(const int *)p); break;
    case GM_F_UINT: n = snprintf(buf, len, "%u", *(const unsigned *)p); break;
    case GM_F_LLONG: n = snprintf(buf, len, "%lld", *(const long long *)p); break;
    case GM_F_U64: n = snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case GM_F_DOUBLE: {
        char d[GM_FMT_DOUBLE_LEN];  // exact, and as given: "0.05", not "0.050000000000000003"
        n = snprintf(buf, len, "%s", gm_fmt_double(*(const double *)p, d));
        break;
    }
    case GM_F_STR: text = p; break;
    case GM_F_ENUM: text = f->names[*(const int *)p]; break;
    }
    if (text && !json) {
        size_t t = strlen(text);
        if (t + 1 > len) return gm_fail("%s: value does not fit in %zu bytes", f->key, len);
        memcpy(buf, text, t + 1);
        return (int)t;
    }
    if (text) {
        // "..." with the body escaped; len - 1 keeps room for the closing quote.
        size_t at = 0;
        if (len < 3) return gm_fail("%s: value does not fit in %zu bytes", f->key, len);
        buf[at++] = '"';
        if (put_escaped(buf, len - 1, &at, text)) return gm_fail("%s: value does not fit in %zu bytes", f->key, len);
        buf[at++] = '"';
        buf[at] = '\0';
        return (int)at;
    }
    return n < 0 || (size_t)n >= len ? gm_fail("%s: value does not fit in %zu bytes", f->key, len) : n;
}

const char *gm_names_join(const char *const *names, const char *sep, char *buf, size_t len) {
    size_t at = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; names[i] && at + 1 < len; i++) {
        int n = snprintf(buf + at, len - at, "%s%s", i ? sep : "", names[i]);
        at = n < 0 || (size_t)n >= len - at ? len - 1 : at + (size_t)n;
    }
    return buf;
}

void gm_field_help(const gm_field *table, size_t n, const void *defaults) {
    for (size_t i = 0; i < n; i++) {
        const gm_field *f = &table[i];
        char value[1024];
        if (gm_field_format(f, defaults, 0, value, sizeof value) < 0) snprintf(value, sizeof value, "(too long to show)");
        printf("  --%-26s %s", f->key, f->help);
        char names[256];
        if (f->type == GM_F_ENUM) printf(" (%s)", gm_names_join(f->names, ", ", names, sizeof names));
        printf(" (default %s)\n", value[0] ? value : "empty");
    }
}
