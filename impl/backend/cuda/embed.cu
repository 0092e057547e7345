// Embedding gather, and its backward made deterministic without float atomics: the token ids are
// sorted with their positions by a stable radix sort (CUB), so each vocabulary row's tokens form
// one run, in increasing position; one block per run adds the run's rows of dout into the table
// row in that order. That is the CPU backend's order (tokens in order, per element, starting
// from the table's value), so the two agree bit for bit.
//
// The table and dtable (V, C) are fp32 parameters; out and dout (N, C) are activations (act_elem.cuh:
// out is the table row rounded once to the element, dout widened exactly). A thread takes groups
// of W columns: W = GM_ACT_VEC (16-byte accesses to the activation row, W / 4 to the fp32 row)
// where C % GM_ACT_VEC == 0 and every pointer is 16-byte aligned, else W = 1.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"

// out (N, C) = table (V, C) rows ids (N); one block per token.
template <int W>
__global__ static void embed_fwd_kernel(gm_cuda_act *out, const int32_t *ids, const float *table, int C) {
    const size_t n = blockIdx.x, row = (size_t)ids[n] * C;
    for (int c = threadIdx.x * W; c < C; c += blockDim.x * W) {
        float v[W];
        gm_f32_ldw<W>(table, row + c, v);
        gm_act_stw<W>(out, n * C + c, v);
    }
}

void gm_cuda_embed_fwd(const gm_backend *be, gm_actval *out, const int32_t *ids, const gm_real *table, int N, int C) {
    gm_cuda_act *o = (gm_cuda_act *)out;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0) return;
    const auto kernel =
        C % GM_ACT_VEC == 0 && gm_vec_aligned_all(o, table) ? embed_fwd_kernel<GM_ACT_VEC> : embed_fwd_kernel<1>;
    kernel<<<N, 256, 0, c->stream>>>(o, ids, table, C);
    GM_CU_LAUNCHED(c);
}

__global__ static void iota_kernel(int32_t *p, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = i;
}

// One block per sorted slot s; only the first slot of a run of equal ids does the work.
template <int W>
__global__ static void embed_bwd_runs_kernel(float *dtable, const uint32_t *keys, const int32_t *pos,
                                             const gm_cuda_act *dout, int N, int C) {
    const int s = blockIdx.x;
    const uint32_t id = keys[s];
    if (s > 0 && keys[s - 1] == id) return;
    int e = s + 1;
    while (e < N && keys[e] == id) e++;
    const size_t row = (size_t)id * C;
    for (int c = threadIdx.x * W; c < C; c += blockDim.x * W) {
        float acc[W], d[W];
        gm_f32_ldw<W>(dtable, row + c, acc);
        for (int r = s; r < e; r++) {
            gm_act_ldw<W>(dout, (size_t)pos[r] * C + c, d);
#pragma unroll
            for (int j = 0; j < W; j++) acc[j] += d[j];
        }
        gm_f32_stw<W>(dtable, row + c, acc);
    }
}

void gm_cuda_embed_bwd(const gm_backend *be, gm_real *dtable, const int32_t *ids, const gm_actval *dout, int N, int V,
                       int C) {
    const gm_cuda_act *g = (const gm_cuda_act *)dout;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || C <= 0 || V <= 0) return;
    int end_bit = 1;  // ids are in [0, V): sort only the bits V-1 needs
    while (end_bit < 32 && ((uint64_t)1 << end_bit) < (uint64_t)V) end_bit++;
    uint32_t *keys = (uint32_t *)gm_cuda_scratch(c, GM_SCR_SORT_KEYS, sizeof(uint32_t) * (size_t)N);
    int32_t *pos_in = (int32_t *)gm_cuda_scratch(c, GM_SCR_SORT_POS, sizeof(int32_t) * (size_t)N);
    int32_t *pos = (int32_t *)gm_cuda_scratch(c, GM_SCR_SORT_POS2, sizeof(int32_t) * (size_t)N);
    if (!keys || !pos_in || !pos) return;
    iota_kernel<<<gm_cuda_blocks((size_t)N, 256), 256, 0, c->stream>>>(pos_in, N);
    GM_CU_LAUNCHED(c);
    size_t tmp_bytes = 0;
    const uint32_t *ukeys = (const uint32_t *)ids;  // non-negative ids sort the same as unsigned
    GM_CU(c, cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, ukeys, keys, pos_in, pos, N, 0, end_bit, c->stream));
    void *tmp = gm_cuda_scratch(c, GM_SCR_SORT_TMP, tmp_bytes);
    if (!tmp) return;
    GM_CU(c, cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, ukeys, keys, pos_in, pos, N, 0, end_bit, c->stream));
    const auto runs = C % GM_ACT_VEC == 0 && gm_vec_aligned_all(dtable, g) ? embed_bwd_runs_kernel<GM_ACT_VEC>
                                                                          : embed_bwd_runs_kernel<1>;
    runs<<<N, 256, 0, c->stream>>>(dtable, keys, pos, g, N, C);
    GM_CU_LAUNCHED(c);
}
