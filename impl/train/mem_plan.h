// A memory plan: the backend bytes a training run allocates, per category, computed from the
// same layout code that allocates them (gm_model_plan, gm_adam_state_bytes, gm_muon_state_bytes)
// without allocating. `train --plan_memory` prints it; the start record of log.jsonl carries it.
#ifndef GM_TRAIN_MEM_PLAN_H
#define GM_TRAIN_MEM_PLAN_H

#include <stddef.h>
#include <stdio.h>

// What must fit on one GPU at the record's per-GPU shape (B = 1, T = 65,536): an 80 GB H100 less
// room for the backend's own workspace (cuBLAS, bf16 operand copies), which is not planned here.
#define GM_MEM_BUDGET_BYTES 60e9

enum { GM_MEM_MAX_ROWS = 16 };

typedef struct {
    const char *key;   // JSON key
    const char *what;  // one line for the printed table
    size_t bytes;
} gm_mem_row;

typedef struct {
    gm_mem_row row[GM_MEM_MAX_ROWS];
    int n;
    size_t total;
} gm_mem_plan;

void gm_mem_plan_add(gm_mem_plan *p, const char *key, const char *what, size_t bytes);
// The bytes of row `key` (0 when the plan has no such row).
size_t gm_mem_plan_bytes(const gm_mem_plan *p, const char *key);
// The table (bytes, GB, share of the total per row), the total and, where `budget` > 0 (the GPU
// budget, GM_MEM_BUDGET_BYTES), the budget line.
void gm_mem_plan_print(const gm_mem_plan *p, const char *title, double budget, FILE *f);
// What a run on a host backend (cpu, guarded) needs in host memory beyond its backend plan,
// measured (README, "Memory"): `filled` is memory the process writes, held against MemAvailable and
// the cgroup's limit; `mapped` is address space it maps but leaves (mostly) untouched, counted, with
// the rest, against `ulimit -v` only.
typedef struct {
    gm_mem_plan filled, mapped;
} gm_host_plan;

// {"<key>": bytes, ..., "total": bytes, "budget": bytes} (malloc'd; NULL when out of memory).
char *gm_mem_plan_json(const gm_mem_plan *p);

#endif
