// The attention mask rule at token level, shared by every backend and by the dense reference.
// Documents: doc[t] counts the EOT tokens at or before t (inclusive cumulative sum), so an EOT
// belongs to the document it opens, as in the records.
#ifndef GM_BACKEND_ATTN_MASK_H
#define GM_BACKEND_ATTN_MASK_H

#include <stdint.h>

#include "backend/backend.h"
#include "base/hostdev.h"

// May query q see key k? doc_q/doc_k are the tokens' document ids (ignored when the mask has no
// doc array).
GM_HD static inline int gm_attn_allowed(const gm_attn_mask *m, int q, int k, int32_t doc_q, int32_t doc_k) {
    if (k > q) return 0;
    if (m->doc && doc_q != doc_k) return 0;
    if (m->window_blocks > 0 && q / m->block - k / m->block >= m->window_blocks) return 0;
    return 1;
}

// The window clause as a bound per row, for a kernel that tests many pairs of one query or one key
// (no division per pair): with documents compared separately and k <= q,
//   gm_attn_allowed(m, q, k, dq, dk) == (k >= gm_attn_first_key(m, q) && doc test)
//                                    == (q < gm_attn_query_end(m, k) && doc test),
// because q / block - k / block < window <=> k / block >= q / block - window + 1 <=> q / block <
// k / block + window, for q, k >= 0 (verify/test_attn_mask.c checks both against the rule).
// The first key query q's window admits (0 without a window).
GM_HD static inline long long gm_attn_first_key(const gm_attn_mask *m, int q) {
    if (m->window_blocks <= 0) return 0;
    const long long lo = ((long long)(q / m->block) - m->window_blocks + 1) * m->block;
    return lo > 0 ? lo : 0;
}
// One past the last query whose window admits key k (no bound without a window).
GM_HD static inline long long gm_attn_query_end(const gm_attn_mask *m, int k) {
    if (m->window_blocks <= 0) return (long long)INT32_MAX + 1;
    return ((long long)(k / m->block) + m->window_blocks) * m->block;
}

// doc (B, T) from token ids (B, T): per row, the running count of `eot` tokens (inclusive).
static inline void gm_doc_ids(int32_t *doc, const int32_t *ids, int B, int T, int32_t eot) {
    for (int b = 0; b < B; b++) {
        int32_t d = 0;
        for (int t = 0; t < T; t++) {
            d += ids[(int64_t)b * T + t] == eot;
            doc[(int64_t)b * T + t] = d;
        }
    }
}

#endif
