// The Hopper parts of the tensor-core attention (attention_mma.cu) one at a time
// (gm_cuda_attn_wgmma_parts; the GPU test cuda_attn_wgmma/parts_one_at_a_time): one block of
// BWD_THREADS, each part checked alone on exact integers, so that a failing wgmma test is named.
//
// x: a (1, 128, 2, HD) activation of small integers (every product and sum below exact in fp32,
// in any order), read at head 1: rows r of the checks are its tokens. Writes, for parts_compare:
// raw_tma, raw_copy (128 HD each): the bytes of a 128-row sw128 tile filled by TMA (the map's T
// PARTS_T: the second box cut there) and by load_rows; raw_vec (2 PARTS_VEC halves): x's
// elements from HD on as a vector copy brought them (tma_load_vec: PARTS_VEC fp32 elements of a
// map as the dk/dv kernel's lse2 and D are read); abt (128 x 64): each warpgroup's S = A B^T
// with A its 64 rows of the copied tile and B the first 64 (wg_abt_issue); xb (128 x HD): O = P V,
// P the warp's rows of x's first 64 columns packed as A fragments, V the tile's first 64 rows
// (wg_xb_issue); dq (64 x HD): dS K (wg_dq_issue), dS^T the tile's 128 rows x its first 64
// columns stored by store_ds_t, K the whole tile.
#ifndef GM_BACKEND_CUDA_ATTENTION_MMA_PARTS_CUH
#define GM_BACKEND_CUDA_ATTENTION_MMA_PARTS_CUH

#include "backend/cuda/attention_mma_dkdv.cuh"
#include "backend/cuda/attention_mma_products.cuh"
#include "backend/cuda/attention_mma_ring.cuh"
#include "backend/cuda/attention_mma_tiles.cuh"

#define PARTS_T 100
#define PARTS_VEC 64
static __device__ __forceinline__ void parts_body(const gm_cuda_act *__restrict__ x, const attn_tmaps *tm,
                                                  uint16_t *raw_tma, uint16_t *raw_copy, uint16_t *raw_vec,
                                                  float *abt, float *xb, float *dq, const int HD) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int R = BLOCK_ROWS, h = 1, lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const size_t rs = (size_t)2 * HD;
    __nv_bfloat16 *tT = (__nv_bfloat16 *)swizzle_base(smem), *tC = tT + R * HD, *sDS = tC + R * HD;
    uint64_t *bars = (uint64_t *)(sDS + R * 64);
    float *sVec = (float *)(bars + WG_MBARS);  // 128-byte aligned: bars are on 1024
    const int wg = warpgroup(), row0 = wg * 64 + warp % 4 * 16 + g;  // this lane's first row of the checks
    const auto value = [&](int r, int c) { return gm_act_widen(x[h * HD + r * rs + c]); };
    wg_bars_init(bars);
    if (WG_TMA && threadIdx.x == 0) {
        wg_expect(bars, 0, WG_TILE_BYTES(R, HD) + WG_VEC_BYTES(PARTS_VEC));
        wg_fetch(tT, &tm->q, x + h * HD, bars, 0, 0, h, 0, R, PARTS_T, rs, HD, BWD_THREADS);
        tma_load_vec(sVec, &tm->lse2, bars, 0, 0);
    }
    load_rows(tC, x + h * HD, 0, R, R, rs, HD, BWD_THREADS, true);
    cp_async_wait_all();
    fence_proxy_async();
    __syncthreads();  // the barriers initialized, the copied tile the block's
    if constexpr (WG_TMA) mbar_wait(bars, 0);
    for (int i = threadIdx.x; i < R * HD; i += BWD_THREADS)
        raw_tma[i] = WG_TMA ? ((const uint16_t *)tT)[i] : 0, raw_copy[i] = ((const uint16_t *)tC)[i];
    for (int i = threadIdx.x; i < 2 * PARTS_VEC; i += BWD_THREADS)
        raw_vec[i] = WG_TMA ? ((const uint16_t *)sVec)[i] : 0;

    float s[KEY_TILE / 8][4], p[KEY_TILE / 8][4], o[MAX_HD / 8][4], dqp[MAX_HD / 16][4];
    wg_abt_issue(s, tC + wg * 64 * HD, tC, HD);
    wgmma_wait<0>();
    wgmma_hold(&s[0][0], KEY_TILE / 2);
    for (int n = 0; n < KEY_TILE / 8; n++)
        for (int e = 0; e < 4; e++) {
            const int r = row0 + 8 * (e / 2), c = 8 * n + 2 * t + (e & 1);
            abt[r * 64 + c] = s[n][e], p[n][e] = value(r, c);
        }

    uint32_t pa[KEY_TILE / 16][4];
    pack_a(pa, p);
    zero(o, HD / 8);
    wg_xb_issue(o, pa, tC, HD);
    wgmma_wait<0>();
    wgmma_hold(&o[0][0], HD / 2), wgmma_hold_a(&pa[0][0], KEY_TILE / 4);
    for (int n = 0; n < HD / 8; n++)
        for (int e = 0; e < 4; e++) xb[(row0 + 8 * (e / 2)) * HD + 8 * n + 2 * t + (e & 1)] = o[n][e];

    for (int n = 0; n < 8; n++)  // dS^T: the warp's 16 keys (rows) x 64 queries (columns)
        for (int e = 0; e < 4; e++) p[n][e] = value(warp * 16 + g + 8 * (e / 2), 8 * n + 2 * t + (e & 1));
    store_ds_t(sDS, p, warp * 16);
    fence_proxy_async();
    __syncthreads();
    wg_dq_issue(&dqp[0][0], sDS, tC, wg, HD);
    wgmma_wait<0>();
    wgmma_hold(&dqp[0][0], HD / 4);
    for (int j = 0; j < HD / 16; j++)
        for (int e = 0; e < 4; e++)
            dq[(warp % 4 * 16 + g + 8 * (e / 2)) * HD + wg * HD / 2 + 8 * j + 2 * t + (e & 1)] = dqp[j][e];
}
static __host__ size_t parts_smem(int HD) {
    return 1024 + (size_t)2 * BLOCK_ROWS * HD * 2 + BLOCK_ROWS * 64 * 2 + WG_MBARS * 8 + PARTS_VEC * 4;
}

// parts_body's input: x (1, 128, 2, HD) as the element, xv the same values in fp32, integers in
// [-127, 127] (exact in bf16; products and sums of up to 128 of them below 2^24).
static __host__ void parts_input(gm_cuda_act *x, float *xv, int HD) {
    uint32_t r = 12345;
    for (int i = 0; i < BLOCK_ROWS * 2 * HD; i++) {
        r = r * 1664525u + 1013904223u;
        xv[i] = (float)((int)(r >> 24) % 255 - 127);
        uint32_t bits;
        memcpy(&bits, &xv[i], 4);
        const uint16_t hi = (uint16_t)(bits >> 16);  // exact: the value has at most 8 significant bits
        if (sizeof(gm_cuda_act) == 2) memcpy((void *)&x[i], &hi, 2);
        else memcpy((void *)&x[i], &xv[i], 4);
    }
}

// One line a part into report (appended): "ok", or how many of its values are wrong and the
// first; returns the parts that failed. Exact comparisons (the values are exact in every order).
static __host__ int parts_compare(const float *xv, int HD, const uint16_t *raw_tma, const uint16_t *raw_copy,
                                  const uint16_t *raw_vec, const float *abt, const float *xb, const float *dq,
                                  char *report, size_t len) {
    const int R = BLOCK_ROWS;
    const auto X = [&](int r, int c) { return xv[((size_t)r * 2 + 1) * HD + c]; };
    const auto bf16_bits = [](float v) {
        uint32_t b;
        memcpy(&b, &v, 4);
        return (uint16_t)(b >> 16);
    };
    const auto bf16_value = [](uint16_t h) {
        const uint32_t b = (uint32_t)h << 16;
        float v;
        memcpy(&v, &b, 4);
        return v;
    };
    int failed = 0;
    size_t at = strlen(report);
    const auto line = [&](const char *part, long bad, long of, int r, int c, double got, double want) {
        if (bad) failed++;
        if (at >= len) return;
        at += (size_t)(bad ? snprintf(report + at, len - at,
                                      "HD %d %s: %ld of %ld wrong, first row %d column %d: %g for %g\n", HD, part, bad,
                                      of, r, c, got, want)
                           : snprintf(report + at, len - at, "HD %d %s: ok\n", HD, part));
    };
    for (int part = 0; part < 2; part++) {  // the two copies of the tile, in tile_at's layout
        const uint16_t *raw = part ? raw_copy : raw_tma;
        const int T = part ? R : PARTS_T;
        long bad = 0;
        int br = 0, bc = 0;
        uint16_t bg = 0, bw = 0;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < HD; c++) {
                const uint16_t want = r < T ? (sizeof(gm_cuda_act) == 2 || part ? bf16_bits(X(r, c)) : 0) : 0;
                const uint16_t got = raw[tile_at(r, c, HD, true)];
                if (got != want && !bad++) br = r, bc = c, bg = got, bw = want;
            }
        if (sizeof(gm_cuda_act) != 2 && !part) continue;  // no TMA with the fp32 element
        line(part ? "copied tile (load_rows) in the 128-byte swizzle"
                  : "TMA box copy in the 128-byte swizzle, zeros past T",
             bad, (long)R * HD, br, bc, bf16_value(bg), bf16_value(bw));
    }
    if (sizeof(gm_cuda_act) == 2) {  // the vector copy: x's elements HD.. as they are
        long bad = 0;
        int bi = 0;
        for (int i = 0; i < 2 * PARTS_VEC; i++)
            if (raw_vec[i] != bf16_bits(xv[HD + i]) && !bad++) bi = i;
        line("TMA vector copy (fp32 runs, as lse2 and D)", bad, 2 * PARTS_VEC, 0, bi, bf16_value(raw_vec[bi]),
             xv[HD + bi]);
    }
    const auto check = [&](const char *part, const float *got, int rows, int cols, auto want) {
        long bad = 0;
        int br = 0, bc = 0;
        double bg = 0, bw = 0;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                const double w = want(r, c), v = got[(size_t)r * cols + c];
                if (v != w && !bad++) br = r, bc = c, bg = v, bw = w;
            }
        line(part, bad, (long)rows * cols, br, bc, bg, bw);
    };
    check("wgmma A B^T, both K-major from swizzled tiles", abt, R, 64, [&](int r, int c) {
        double sum = 0;
        for (int d = 0; d < HD; d++) sum += (double)X(r, d) * X(c, d);
        return sum;
    });
    check("wgmma A B, A from registers, B MN-major", xb, R, HD, [&](int r, int c) {
        double sum = 0;
        for (int k = 0; k < 64; k++) sum += (double)X(r, k) * X(k, c);
        return sum;
    });
    check("wgmma dS K, A and B MN-major, B from column HD / 2", dq, 64, HD, [&](int q, int c) {
        double sum = 0;
        for (int key = 0; key < R; key++) sum += (double)X(key, q) * X(key, c);
        return sum;
    });
    return failed;
}

#endif
