// The counting backend (count.h): allocations are slices of one reservation, handed out in order
// and never reused (a step allocates at start, so the reservation bounds a run, not a step), and
// every kernel is a no-op generated from GM_BACKEND_KERNELS.
#include "backend/count/count.h"

#include <string.h>
#include <sys/mman.h>

#include "base/error.h"

#define RESERVED ((size_t)1 << 40)  // 1 TiB of address space: far above any plan
#define ALIGN 256

static char *base;
static size_t used;

static void *count_alloc(const gm_backend *be, size_t bytes) {
    (void)be;
    const size_t len = (bytes + ALIGN - 1) / ALIGN * ALIGN + ALIGN;  // distinct pointers for 0 bytes too
    if (len > RESERVED - used) return gm_fail("counting backend: more than %zu bytes allocated", RESERVED), NULL;
    void *p = base + used;
    used += len;
    return p;
}

static void count_free(const gm_backend *be, void *p) { (void)be, (void)p; }

static void count_upload(const gm_backend *be, void *dst, const void *host_src, size_t bytes) {
    (void)be, (void)dst, (void)host_src, (void)bytes;
}

static void count_download(const gm_backend *be, void *host_dst, const void *src, size_t bytes) {
    (void)be, (void)src;
    memset(host_dst, 0, bytes);
}

static int count_sync(const gm_backend *be) {
    (void)be;
    return 0;
}

// No-ops: their parameters are unused by design.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define COUNT_NOOP(name, params, args) \
    static void count_##name(const gm_backend *be, GM_UNPACK params) {}
GM_BACKEND_KERNELS(COUNT_NOOP)
#undef COUNT_NOOP
#pragma GCC diagnostic pop

const gm_backend *gm_backend_counting(size_t act_size) {
    static gm_backend be;
    be.act_size = act_size;
    if (!base) {
        void *p = mmap(NULL, RESERVED, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return gm_fail("counting backend: cannot reserve %zu bytes of address space", RESERVED), NULL;
        base = p;
        be = (gm_backend){.name = "count", .act_size = act_size, .alloc = count_alloc, .free = count_free, .upload = count_upload,
                          .download = count_download, .sync = count_sync};
#define COUNT_FIELD(name, params, args) be.name = count_##name;
        GM_BACKEND_KERNELS(COUNT_FIELD)
#undef COUNT_FIELD
    }
    return &be;
}
