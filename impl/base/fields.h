// Tables of named fields of a struct: the configurations (model/config.c, train/run_config.c)
// are declared once as a table, and setting a field from a flag, printing it as JSON or as
// "key = value" text, and the --help listing all walk the table, so no field is listed twice.
#ifndef GM_BASE_FIELDS_H
#define GM_BASE_FIELDS_H

#include <stddef.h>

typedef enum { GM_F_INT, GM_F_UINT, GM_F_LLONG, GM_F_U64, GM_F_DOUBLE, GM_F_STR, GM_F_ENUM } gm_field_type;

typedef struct {
    const char *key;
    gm_field_type type;
    size_t offset;             // from the start of the struct
    size_t size;               // GM_F_STR: the char array's size
    const char *const *names;  // GM_F_ENUM: value names (index = value), NULL-terminated; stored as int
    double lo, hi;             // numeric range (GM_F_INT, GM_F_UINT, GM_F_LLONG, GM_F_DOUBLE)
    const char *help;
} gm_field;

// Row constructors: T is the struct, m the member (a path like adam.eps is fine).
#define GM_FIELD_INT(key, T, m, lo, hi, help) {key, GM_F_INT, offsetof(T, m), 0, NULL, lo, hi, help}
#define GM_FIELD_UINT(key, T, m, lo, hi, help) {key, GM_F_UINT, offsetof(T, m), 0, NULL, lo, hi, help}
#define GM_FIELD_LLONG(key, T, m, lo, hi, help) {key, GM_F_LLONG, offsetof(T, m), 0, NULL, lo, hi, help}
#define GM_FIELD_U64(key, T, m, help) {key, GM_F_U64, offsetof(T, m), 0, NULL, 0, 0, help}
#define GM_FIELD_DOUBLE(key, T, m, lo, hi, help) {key, GM_F_DOUBLE, offsetof(T, m), 0, NULL, lo, hi, help}
#define GM_FIELD_STR(key, T, m, help) {key, GM_F_STR, offsetof(T, m), sizeof(((T *)0)->m), NULL, 0, 0, help}
#define GM_FIELD_ENUM(key, T, m, names, help) {key, GM_F_ENUM, offsetof(T, m), 0, names, 0, 0, help}

// The row called key, or NULL.
const gm_field *gm_field_find(const gm_field *table, size_t n, const char *key);
// Parse value into the field of *base; -1 + gm_fail "--key: <fault>" (malformed, out of range,
// too long, not one of the names).
int gm_field_set(const gm_field *f, void *base, const char *value);
// The field's value as text into buf: json = 1 quotes (and escapes) strings and enum names.
// Returns the length, or -1 + gm_fail when buf is too small.
int gm_field_format(const gm_field *f, const void *base, int json, char *buf, size_t len);
// The NULL-terminated `names` joined by sep ("a, b, c" or "a|b|c") into buf (cut short to fit);
// returns buf, for use as a printf argument.
const char *gm_names_join(const char *const *names, const char *sep, char *buf, size_t len);
// "  --key   help (enum names) (default <value in *defaults>)" per row, to stdout.
void gm_field_help(const gm_field *table, size_t n, const void *defaults);

#endif
