// The guarded backend (guard.h): mmap'd allocations, unlocked around each call of the CPU
// backend's kernels and relocked after it. Forwarders are generated from GM_BACKEND_KERNELS, so
// a kernel added to the interface is guarded without an edit here.
#include "backend/guard/guard.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/cpu/cpu.h"
#include "base/error.h"

typedef struct {
    void *p;
    size_t len;  // whole pages
} region;

static region *regions;
static int nregions, cap_regions;

static void protect_all(int prot) {
    for (int i = 0; i < nregions; i++)
        if (mprotect(regions[i].p, regions[i].len, prot) != 0) abort();  // cannot happen on our own mappings
}
static void unlock(void) { protect_all(PROT_READ | PROT_WRITE); }
static void lock(void) { protect_all(PROT_NONE); }

static size_t page_round(size_t bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return ((bytes ? bytes : 1) + page - 1) / page * page;
}

static void *guard_alloc(const gm_backend *be, size_t bytes) {
    (void)be;
    if (nregions == cap_regions) {
        int cap = cap_regions ? 2 * cap_regions : 64;
        region *r = realloc(regions, (size_t)cap * sizeof *r);
        if (!r) return gm_fail("guarded backend: out of host memory"), NULL;
        regions = r, cap_regions = cap;
    }
    size_t len = page_round(bytes);
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);  // zero-filled
    if (p == MAP_FAILED) return gm_fail("guarded backend: cannot map %zu bytes", bytes), NULL;
    regions[nregions++] = (region){p, len};
    return p;
}

static void guard_free(const gm_backend *be, void *p) {
    (void)be;
    if (!p) return;
    for (int i = 0; i < nregions; i++)
        if (regions[i].p == p) {
            munmap(p, regions[i].len);
            regions[i] = regions[--nregions];
            return;
        }
    abort();  // not ours: a caller bug that must not pass silently
}

static void guard_upload(const gm_backend *be, void *dst, const void *host_src, size_t bytes) {
    (void)be;
    unlock();
    if (bytes) memcpy(dst, host_src, bytes);
    lock();
}

static void guard_download(const gm_backend *be, void *host_dst, const void *src, size_t bytes) {
    (void)be;
    unlock();
    if (bytes) memcpy(host_dst, src, bytes);
    lock();
}

static int guard_sync(const gm_backend *be) {
    (void)be;
    return gm_backend_cpu()->sync(gm_backend_cpu());
}

#define GUARD_FORWARD(name, params, args)                                       \
    static void guard_##name(const gm_backend *be, GM_UNPACK params) {         \
        (void)be;                                                              \
        const gm_backend *cpu = gm_backend_cpu();                              \
        unlock();                                                              \
        cpu->name(cpu, GM_UNPACK args);                                        \
        lock();                                                                \
    }
GM_BACKEND_KERNELS(GUARD_FORWARD)
#undef GUARD_FORWARD

#define GUARD_FIELD(name, params, args) .name = guard_##name,
static const gm_backend guarded = {
    .name = "guarded",
    .ctx = NULL,
    .host_visible = 0,
    .act_size = sizeof(gm_real),  // the CPU backend's memory behind the guard
    .alloc = guard_alloc,
    .free = guard_free,
    .upload = guard_upload,
    .download = guard_download,
    .sync = guard_sync,
    GM_BACKEND_KERNELS(GUARD_FIELD)};
#undef GUARD_FIELD

const gm_backend *gm_backend_guarded(void) { return &guarded; }
