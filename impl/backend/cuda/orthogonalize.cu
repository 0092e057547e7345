// The CUDA `orthogonalize` kernel: the items are grouped by shape (wide orientation m <= n, so a
// tall matrix and its transpose's shape share a group), each group's Frobenius norms are summed
// in fp64 (reduce.cuh; a non-finite sum marks the item), then Newton-Schulz runs once per group as
// strided-batched GEMMs, or the SVD path runs item by item.
//
// Errors: at the end of the call the host reads the per-item status (one stream sync per call,
// and one more before the SVDs, so gesvdj never sees a non-finite input) and records the first
// failed item by name for the next sync, as the CPU does. That item's output is unspecified; the
// others are computed as if it were absent.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/ortho.cuh"
#include "backend/cuda/reduce.cuh"
#include "base/error.h"

// Partials of each item's sum of squares: grid (np, nb), item blockIdx.y writes partial[y * np + x].
__global__ static void __launch_bounds__(GM_RED_THREADS)
    sumsq_partial_kernel(double *partial, const gm_cuda_ortho_desc *d, int round_bf16) {
    __shared__ double sh[GM_RED_THREADS];
    const gm_cuda_ortho_desc *it = &d[blockIdx.y];
    double s = gm_dot_partial(it->G, it->G, (size_t)it->rows * it->cols, round_bf16, sh);
    if (threadIdx.x == 0) partial[(size_t)blockIdx.y * gridDim.x + blockIdx.x] = s;
}

// One block per item: ss[i] = the total; a non-finite total (a NaN or an infinity in G: squares of
// finite floats cannot overflow a double) marks the item.
__global__ static void __launch_bounds__(GM_RED_THREADS)
    sumsq_finish_kernel(double *ss, int *status, const double *partial, int np) {
    __shared__ double sh[GM_RED_THREADS];
    double s = gm_partials_total(partial + (size_t)blockIdx.x * np, np, sh);
    if (threadIdx.x == 0) {
        ss[blockIdx.x] = s;
        if (!isfinite(s)) status[blockIdx.x] = GM_ORTHO_NONFINITE;
    }
}

// The wide shape (m <= n) of an item.
static void wide_shape(const gm_ortho_item *it, int *m, int *n) {
    *m = it->rows < it->cols ? it->rows : it->cols;
    *n = it->rows < it->cols ? it->cols : it->rows;
}

static int cmp_shape(const gm_ortho_item *a, const gm_ortho_item *b) {
    int am, an, bm, bn;
    wide_shape(a, &am, &an), wide_shape(b, &bm, &bn);
    return am != bm ? (am < bm ? -1 : 1) : an != bn ? (an < bn ? -1 : 1) : 0;
}

// Item indices ordered by shape, ties in call order (insertion sort: calls hold tens of items).
static void order_by_shape(const gm_ortho_item *items, int count, int *order) {
    for (int i = 0; i < count; i++) {
        int j = i;
        while (j > 0 && cmp_shape(&items[order[j - 1]], &items[i]) > 0) order[j] = order[j - 1], j--;
        order[j] = i;
    }
}

static const char *status_text(const gm_cuda_ctx *c, int st) {
    switch (st) {
    case GM_ORTHO_NONFINITE: return "the input has a non-finite entry; refusing to orthogonalize";
    case GM_ORTHO_SVD_NOCONV:
        return c->libs == GM_CUDA_LIBS_REF ? "the reference Jacobi SVD did not converge"
                                           : "cuSOLVER gesvdj did not converge";
    default: return "cuSOLVER gesvdj rejected an argument";
    }
}

// Host copy of the count statuses (waits for the stream); 0, or -1 when it could not be read (noted).
static int read_status(gm_cuda_ctx *c, int *host, const int *dev, int count) {
    cudaError_t e = cudaMemcpyAsync(host, dev, sizeof(int) * count, cudaMemcpyDeviceToHost, c->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
    if (e != cudaSuccess)
        gm_cuda_note(c, __FILE__, __LINE__, "orthogonalize: reading the items' status", cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : -1;
}

void gm_cuda_orthogonalize(const gm_backend *be, const gm_ortho *cfg, int count, const gm_ortho_item *items) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (count <= 0) return;
    if (cfg->method == GM_ORTHO_GRAM_NS)
        return gm_cuda_note(c, __FILE__, __LINE__, "orthogonalize",
                            "gram-ns has no CUDA implementation yet (--ortho=newton-schulz or svd)");
    const int ns = cfg->method == GM_ORTHO_NS;
    if (ns && !cfg->coeffs)
        return gm_cuda_note(c, __FILE__, __LINE__, "orthogonalize", "newton-schulz: no coefficient set given");
    if (ns && cfg->steps < 1)
        return gm_cuda_note(c, __FILE__, __LINE__, "orthogonalize", "newton-schulz: steps must be >= 1");
    for (int i = 0; i < count; i++)
        if (items[i].rows < 1 || items[i].cols < 1) {
            char what[160];
            snprintf(what, sizeof what, "orthogonalize %s", items[i].name ? items[i].name : "(unnamed)");
            return gm_cuda_note(c, __FILE__, __LINE__, what, "bad shape (rows and cols must be >= 1)");
        }
    int *order = (int *)malloc(sizeof(int) * count), *st = (int *)malloc(sizeof(int) * count);
    gm_cuda_ortho_desc *hd = (gm_cuda_ortho_desc *)malloc(sizeof *hd * count);
    gm_cuda_ortho_desc *dd = (gm_cuda_ortho_desc *)gm_cuda_scratch(c, GM_SCR_ORTHO_DESC, sizeof *dd * count);
    double *ss = (double *)gm_cuda_scratch(c, GM_SCR_ORTHO_SS, sizeof(double) * count);
    int *dst = (int *)gm_cuda_scratch(c, GM_SCR_ORTHO_STAT, sizeof(int) * count);
    if (!order || !st || !hd) {
        gm_cuda_note(c, __FILE__, __LINE__, "orthogonalize", "out of host memory");
        goto done;
    }
    if (!dd || !ss || !dst) goto done;
    order_by_shape(items, count, order);
    for (int i = 0; i < count; i++) {
        const gm_ortho_item *it = &items[order[i]];
        hd[i] = (gm_cuda_ortho_desc){it->G, it->out, it->rows, it->cols, (float)it->out_scale};
    }
    // From pageable memory: returns once hd is staged, so hd may be freed; the device copy is
    // stream-ordered before the kernels below.
    GM_CU(c, cudaMemcpyAsync(dd, hd, sizeof *hd * count, cudaMemcpyHostToDevice, c->stream));
    GM_CU(c, cudaMemsetAsync(dst, 0, sizeof(int) * count, c->stream));
    for (int g0 = 0, g1; g0 < count; g0 = g1) {
        int m, n;
        wide_shape(&items[order[g0]], &m, &n);
        g1 = g0 + 1;
        while (g1 < count && cmp_shape(&items[order[g1]], &items[order[g0]]) == 0) g1++;
        const int nb = g1 - g0, np = gm_red_blocks((size_t)m * n);
        double *partial = (double *)gm_cuda_scratch(c, GM_SCR_RED, sizeof(double) * np * nb);
        if (!partial) goto done;
        const int round_x = ns && cfg->bf16 && cfg->norm_src == GM_NS_NORM_OF_X;
        sumsq_partial_kernel<<<dim3(np, nb), GM_RED_THREADS, 0, c->stream>>>(partial, dd + g0, round_x);
        GM_CU_LAUNCHED(c);
        sumsq_finish_kernel<<<nb, GM_RED_THREADS, 0, c->stream>>>(ss + g0, dst + g0, partial, np);
        GM_CU_LAUNCHED(c);
        if (ns) gm_cuda_ns_batch(c, cfg, dd + g0, ss + g0, nb, m, n);
    }
    if (!ns) {
        if (read_status(c, st, dst, count)) goto done;
        for (int i = 0; i < count; i++)
            if (st[i] == GM_ORTHO_OK) gm_cuda_svd_polar(c, &hd[i], dst + i);
    }
    if (read_status(c, st, dst, count)) goto done;
    for (int i = 0; i < count; i++)
        if (st[i] != GM_ORTHO_OK) {
            const gm_ortho_item *it = &items[order[i]];
            char what[160];
            snprintf(what, sizeof what, "orthogonalize %s (%d x %d)", it->name ? it->name : "(unnamed)", it->rows,
                     it->cols);
            gm_cuda_note(c, __FILE__, __LINE__, what, status_text(c, st[i]));
            break;
        }
done:
    free(order), free(st), free(hd);
}
