#include "model/table.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

void gm_table_init(gm_table *t) { memset(t, 0, sizeof *t); }

void gm_table_free(gm_table *t) {
    free(t->v);
    memset(t, 0, sizeof *t);
}

int gm_table_find(const gm_table *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, name) == 0) return i;
    return -1;
}

int gm_table_locate(const gm_table *t, size_t at) {
    for (int i = 0; i < t->n; i++)
        if (at >= t->v[i].offset && at - t->v[i].offset < t->v[i].numel) return i;
    return -1;
}

int gm_table_add(gm_table *t, const char *name, int64_t rows, int64_t cols, gm_group group, gm_init_kind init, double a,
                 double b) {
    if (strlen(name) >= sizeof t->v[0].name) return t->failed = 1, gm_fail("table: name too long: %s", name);
    if (gm_table_find(t, name) >= 0) return t->failed = 1, gm_fail("table: duplicate tensor name %s", name);
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        gm_view *v = realloc(t->v, sizeof(gm_view) * (size_t)cap);
        if (!v) return t->failed = 1, gm_fail("table: out of memory");
        t->v = v, t->cap = cap;
    }
    gm_view *v = &t->v[t->n];
    memset(v, 0, sizeof *v);
    strcpy(v->name, name);
    v->ndim = cols > 1 ? 2 : 1;
    v->shape[0] = rows, v->shape[1] = cols;
    v->numel = (size_t)rows * (size_t)cols;
    v->offset = (t->total + GM_TABLE_ALIGN - 1) / GM_TABLE_ALIGN * GM_TABLE_ALIGN;
    v->group = group, v->init = init, v->init_a = a, v->init_b = b;
    t->total = v->offset + v->numel;
    t->count += v->numel;
    return t->n++;
}
