#include "base/hash.h"

#include <string.h>

static const uint64_t FNV_PRIME = 1099511628211ull;

uint64_t gm_hash_bytes(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

uint64_t gm_hash_wide(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t lane[4] = {GM_HASH_INIT, GM_HASH_INIT + 1, GM_HASH_INIT + 2, GM_HASH_INIT + 3};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * k, 8);  // any alignment; little-endian words (the only hosts built for)
            lane[k] = (lane[k] ^ w) * FNV_PRIME;
        }
    return gm_hash_bytes(gm_hash_bytes(GM_HASH_INIT, lane, sizeof lane), p + i, n - i);
}
