#include "train/mem_plan.h"

#include <stdlib.h>
#include <string.h>

void gm_mem_plan_add(gm_mem_plan *p, const char *key, const char *what, size_t bytes) {
    if (p->n == GM_MEM_MAX_ROWS) abort();  // a fixed list of categories: a caller bug
    p->row[p->n++] = (gm_mem_row){key, what, bytes};
    p->total += bytes;
}

size_t gm_mem_plan_bytes(const gm_mem_plan *p, const char *key) {
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->row[i].key, key)) return p->row[i].bytes;
    return 0;
}

void gm_mem_plan_print(const gm_mem_plan *p, const char *title, double budget, FILE *f) {
    fprintf(f, "memory plan: %s\n", title);
    fprintf(f, "  %-64s %16s %9s %7s\n", "category", "bytes", "GB", "share");
    for (int i = 0; i < p->n; i++)
        fprintf(f, "  %-64s %16zu %9.3f %6.1f%%\n", p->row[i].what, p->row[i].bytes, p->row[i].bytes / 1e9,
                p->total ? 100.0 * p->row[i].bytes / p->total : 0.0);
    fprintf(f, "  %-64s %16zu %9.3f %6.1f%%\n", "total", p->total, p->total / 1e9, 100.0);
    if (budget <= 0) return;
    fprintf(f, "  budget %.0f GB per GPU (80 GB H100 less the backend's own workspace, not planned here): %s by %.3f GB\n",
            budget / 1e9, p->total <= budget ? "fits" : "EXCEEDS", (p->total <= budget ? budget - p->total : p->total - budget) / 1e9);
}

char *gm_mem_plan_json(const gm_mem_plan *p) {
    size_t cap = 64 + (size_t)p->n * 96;
    char *s = malloc(cap);
    if (!s) return NULL;
    size_t len = 0;
    len += (size_t)snprintf(s + len, cap - len, "{");
    for (int i = 0; i < p->n; i++)
        len += (size_t)snprintf(s + len, cap - len, "\"%s\":%zu,", p->row[i].key, p->row[i].bytes);
    snprintf(s + len, cap - len, "\"total\":%zu,\"budget\":%.0f}", p->total, GM_MEM_BUDGET_BYTES);
    return s;
}
