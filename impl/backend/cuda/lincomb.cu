// out = ca*a*x + cb*b*y with optional learnable scalars a = *pa, b = *pb (device memory, 1 when
// NULL, read by the kernels so the host never waits for them) and an optional term y.
//
// The backward is one pass over memory: lincomb_bwd_kernel reads dout (and x, y for the wanted
// scalar gradients, dx, dy where added into) once, writes dx and dy, and leaves per-block fp64
// partials of sum(dout*x) and sum(dout*y); dot_finish_kernel (one block) adds them into *dpa, *dpb.
// Bytes per element, learnable a and b, dx and dy set: 20 (dout, x, y read; dx, dy written), where
// two dot passes and a write pass moved 28. Without learnable scalars: 8 (dout read, dx written).
//
// Grid and order. Block b owns the chunk [b*LC_CHUNK, (b+1)*LC_CHUNK) of the CPU reference's dot
// (cpu/lincomb.c, one pass too: chunks of 4096 summed in double); thread t owns 16 elements of it,
// in four groups of 4 consecutive ones, group k at (k*256 + t)*4 (a warp's group is 512 contiguous
// bytes; with n % 4 == 0 and 16-byte aligned pointers a group is one 128-bit load or store, else
// four scalar ones on the same elements, so both paths sum the same values in the same order). The
// thread sums its 16 products (dout_i*x_i, exact in fp64: 24 + 24 significant bits) left to right,
// the block combines its 256 sums with gm_block_sum's fixed tree, and the finishing block sums the
// nb = ceil(n/4096) partials with gm_partials_total (thread t: partials t, t+256, ... in order;
// then the same tree).
// Everything depends on n only, not on the SM count or timing; no atomics.
//
// Against the CPU. Both sides sum the same exact products per chunk, but in another association:
// the CPU left to right within the chunk and then chunk after chunk, so the results agree to fp64
// rounding, not bit for bit (they are equal where no partial sum rounds, e.g. n <= 4 or
// small-integer data). The bar of Test(cuda_kernels, lincomb_fwd_bwd) (relative 1e-5 on dpa, dpb)
// holds with orders of magnitude to spare. A product passes through at most d rounded additions:
// d_gpu = 15 (the thread's 16) + 8 (tree) + ceil(nb/256) - 1 (finishing thread) + 8 (tree), 32 at
// the test's n = 2^20+17 (nb = 257) and 78 at n = 50,331,648; d_cpu = 4095 + nb - 1 = 4351 at the
// test's n (today's two-pass GPU order has d ~ 32 too: the CPU's term dominates either way). So
// |S_gpu - S_cpu| <= (d_gpu + d_cpu) 2^-53 sum|p_i| ~ 4.9e-13 sum|p_i|. Each side then rounds S to
// fp32 and computes *dp + (float)c * (float)S in fp32, so the results differ by ~2 fp32 ulps of
// c*S (~2.4e-7 relative) plus |c| * 4.9e-13 * sum|p_i|. With the test's N(0,1) data sum|p_i| ~
// (2/pi) n = 6.7e5 while |S| ~ sqrt(n) = 1024: the fp64 term is ~4e-7 absolute against a bar of
// 1e-5 * |c S| ~ 7e-3. The fp32 rounding dominates, as it did before; the bar is unchanged.
//
// Emulated on the CPU (the three orders in double, against an exact __float128 sum; N(0,1) data):
// the new order is within 4.4e-15 of the CPU's (n = 4097; 2.9e-16 at n = 50,331,648), and the
// fp32-rounded sums were equal at every n tried (1, 3, 4097, 12292, 2^20, 2^20 + 17, 50,331,648).
//
// ptxas (nvcc 13, -O3): lincomb_bwd_kernel<true> (128-bit) 107 registers on sm_90a, 103 on sm_80;
// <false> (scalar) 118 / 114; no spills; 2048 bytes shared. So 2 blocks (512 threads) per SM, each
// thread with up to 20 128-bit loads in flight (dout, x, y, old dx, old dy of its 16 elements):
// capping at 80 or 64 registers spills. dot_finish_kernel 30 / 28 registers.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/reduce.cuh"

#define LC_CHUNK 4096  // elements per block of the backward: the CPU reference's dot chunk (cpu/lincomb.c)
#define LC_PER_THREAD (LC_CHUNK / GM_RED_THREADS)  // 16, four groups of 4
static_assert(LC_PER_THREAD % 4 == 0, "a thread's elements are whole groups of 4");

__global__ static void lincomb_fwd_kernel(float *out, double ca, const float *pa, const float *x, double cb,
                                          const float *pb, const float *y, size_t n) {
    float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = a * x[i] + (y ? b * y[i] : 0.0f);
}

// The first index of this thread's group k in the chunk that starts at c0.
static __device__ __forceinline__ size_t lc_group(size_t c0, int k) {
    return c0 + ((size_t)k * GM_RED_THREADS + threadIdx.x) * 4;
}

// d[0..4) = p[i..i+4), 0 past n; i % 4 == 0. VEC (n % 4 == 0, p 16-byte aligned): one 128-bit load,
// and i < n means the whole group is in range.
template <bool VEC> static __device__ __forceinline__ void lc_load4(float *d, const float *p, size_t i, size_t n) {
    if (VEC) {
        const float4 v = i < n ? *(const float4 *)(p + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        d[0] = v.x, d[1] = v.y, d[2] = v.z, d[3] = v.w;
    } else {
        for (int j = 0; j < 4; j++) d[j] = i + j < n ? p[i + j] : 0.0f;
    }
}

// p[i..i+4) = v[0..4), up to n.
template <bool VEC> static __device__ __forceinline__ void lc_store4(float *p, size_t i, size_t n, const float *v) {
    if (VEC) {
        if (i < n) *(float4 *)(p + i) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        for (int j = 0; j < 4; j++)
            if (i + j < n) p[i + j] = v[j];
    }
}

// dx (+)= a*dout and dy (+)= b*dout over this block's chunk (dx or dy NULL: not wanted; dy == dx:
// one buffer, dx's write first, then dy's, as the CPU does element by element). With da / db
// (block-uniform), partial[blockIdx.x] / partial[gridDim.x + blockIdx.x] get the chunk's
// sum(dout*x) / sum(dout*y) in fp64, in the order of the head comment.
template <bool VEC>
__global__ static void __launch_bounds__(GM_RED_THREADS)
    lincomb_bwd_kernel(float *dx, gm_grad_write dx_write, float *dy, gm_grad_write dy_write, double *partial, int da,
                       int db, const float *dout, double ca, const float *pa, const float *x, double cb,
                       const float *pb, const float *y, size_t n) {
    __shared__ double sh[GM_RED_THREADS];
    const float a = (float)(ca * (pa ? (double)*pa : 1.0)), b = (float)(cb * (pb ? (double)*pb : 1.0));
    const size_t c0 = (size_t)blockIdx.x * LC_CHUNK;
    const int one_buffer = dy && dy == dx;
    // Where dx aliases dout, every element of dout must be read (for the dots and for dx, dy) before
    // dx's element is written. Each element is read and written by this one thread only, and every
    // value the thread reads is read here, before its first write: so it holds with no ordering
    // between threads. dy == dx (one buffer) is composed in registers: dx's put, then dy's, one store.
    float g[LC_PER_THREAD], xv[LC_PER_THREAD], yv[LC_PER_THREAD];
    float ox[LC_PER_THREAD] = {}, oy[LC_PER_THREAD] = {};  // the old dx, dy: read under GM_GRAD_ADD only
#pragma unroll
    for (int k = 0; k < LC_PER_THREAD / 4; k++) {
        const size_t i = lc_group(c0, k);
        lc_load4<VEC>(g + 4 * k, dout, i, n);
        if (da) lc_load4<VEC>(xv + 4 * k, x, i, n);
        if (db) lc_load4<VEC>(yv + 4 * k, y, i, n);
        if (dx && dx_write == GM_GRAD_ADD) lc_load4<VEC>(ox + 4 * k, dx, i, n);
        if (dy && !one_buffer && dy_write == GM_GRAD_ADD) lc_load4<VEC>(oy + 4 * k, dy, i, n);
    }
    double sa = 0, sb = 0;
#pragma unroll
    for (int k = 0; k < LC_PER_THREAD / 4; k++) {
        const size_t i = lc_group(c0, k);
        float v[4];
        if (dx) {
            for (int j = 0; j < 4; j++) {
                v[j] = ox[4 * k + j];
                gm_grad_put(&v[j], dx_write, a * g[4 * k + j]);
                if (one_buffer) gm_grad_put(&v[j], dy_write, b * g[4 * k + j]);
            }
            lc_store4<VEC>(dx, i, n, v);
        }
        if (dy && !one_buffer) {
            for (int j = 0; j < 4; j++) {
                v[j] = oy[4 * k + j];
                gm_grad_put(&v[j], dy_write, b * g[4 * k + j]);
            }
            lc_store4<VEC>(dy, i, n, v);
        }
        // The fp64 product is exact, so a contraction into an fma cannot change the sum.
        for (int j = 0; j < 4; j++)
            if (i + j < n) {
                if (da) sa += (double)g[4 * k + j] * xv[4 * k + j];
                if (db) sb += (double)g[4 * k + j] * yv[4 * k + j];
            }
    }
    if (da) {
        const double s = gm_block_sum(sa, sh);
        if (threadIdx.x == 0) partial[blockIdx.x] = s;
    }
    if (db) {
        const double s = gm_block_sum(sb, sh);
        if (threadIdx.x == 0) partial[gridDim.x + blockIdx.x] = s;
    }
}

// *dpa += (float)ca * (float)sum(partial[0..np)) and *dpb += (float)cb * (float)sum(partial[np..2np)),
// as the CPU computes them; either pointer NULL: not wanted.
__global__ static void __launch_bounds__(GM_RED_THREADS)
    dot_finish_kernel(float *dpa, float *dpb, const double *partial, int np, double ca, double cb) {
    __shared__ double sh[GM_RED_THREADS];
    if (dpa) {
        const double s = gm_partials_total(partial, np, sh);
        if (threadIdx.x == 0) *dpa += (float)ca * (float)s;
    }
    if (dpb) {
        const double s = gm_partials_total(partial + np, np, sh);
        if (threadIdx.x == 0) *dpb += (float)cb * (float)s;
    }
}

void gm_cuda_lincomb_fwd(const gm_backend *be, gm_actval *out_act, double ca, const gm_real *pa, const gm_actval *x_act,
                         double cb, const gm_real *pb, const gm_actval *y_act, size_t n) {
    gm_real *out = (gm_real *)out_act;
    const gm_real *x = (const gm_real *)x_act;
    const gm_real *y = (const gm_real *)y_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!n) return;
    lincomb_fwd_kernel<<<gm_cuda_blocks(n, 256), 256, 0, c->stream>>>(out, ca, pa, x, cb, pb, y, n);
    GM_CU_LAUNCHED(c);
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }  // NULL counts as aligned

void gm_cuda_lincomb_bwd(const gm_backend *be, gm_actval *dx_act, gm_grad_write dx_write, gm_actval *dy_act,
                         gm_grad_write dy_write, gm_real *dpa, gm_real *dpb, const gm_actval *dout_act, double ca,
                         const gm_real *pa, const gm_actval *x_act, double cb, const gm_real *pb, const gm_actval *y_act, size_t n) {
    gm_real *dx = (gm_real *)dx_act;
    gm_real *dy = (gm_real *)dy_act;
    const gm_real *dout = (const gm_real *)dout_act;
    const gm_real *x = (const gm_real *)x_act;
    const gm_real *y = (const gm_real *)y_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (!y) dy = NULL, dpb = NULL;  // no second term: nothing to write or sum for it
    if (!n || !(dx || dy || dpa || dpb)) return;
    // ceil(n / 4096) blocks: gridDim.x allows 2^31 - 1, i.e. 8.8e12 elements, beyond any GPU's memory.
    const unsigned nb = (unsigned)((n + LC_CHUNK - 1) / LC_CHUNK);
    double *partial = NULL;
    if (dpa || dpb) {
        partial = (double *)gm_cuda_scratch(c, GM_SCR_RED, sizeof(double) * 2 * nb);
        if (!partial) return;  // noted: the next sync fails
    }
    const int vec = n % 4 == 0 && aligned16(dout) && aligned16(x) && aligned16(y) && aligned16(dx) && aligned16(dy);
    const auto kernel = vec ? lincomb_bwd_kernel<true> : lincomb_bwd_kernel<false>;
    kernel<<<nb, GM_RED_THREADS, 0, c->stream>>>(dx, dx_write, dy, dy_write, partial, dpa != NULL, dpb != NULL, dout,
                                                 ca, pa, x, cb, pb, y, n);
    GM_CU_LAUNCHED(c);
    if (partial) {
        dot_finish_kernel<<<1, GM_RED_THREADS, 0, c->stream>>>(dpa, dpb, partial, (int)nb, ca, cb);
        GM_CU_LAUNCHED(c);
    }
}
