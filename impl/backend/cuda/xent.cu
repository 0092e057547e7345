// Optional softcap z = cap*tanh(l/cap), cross-entropy and its gradient, fused: one block per row
// of logits l (N, V), so that every row's reduction has one fixed order (deterministic, no atomics).
//
// Pass 1 reads the row once from DRAM (float4 when V % 4 == 0 and both row arrays are 16-byte
// aligned, else scalar), evaluates tanh once per logit and, when dlogits are wanted, parks z in a
// buffer zbuf; each thread keeps an online (max, sum of exp) over its strided share, rescaling its
// sum once per vector that brings a new max. The block merges the threads' pairs in a fixed tree
// (warp shuffles, then one warp over the warps' results) into the row's log-sum-exp. Pass 2 reads
// z back from zbuf and writes dloss/dlogits. Exponentials are exp2f of log2(e)-prescaled values:
// e_v = exp2(z_v*L - mL), L = log2(e) in fp32, mL = fp32(max*L), the same value in both passes, so
// the rounding of mL is a common factor that cancels between the sum and the probabilities (the
// FMA rounds z*L - mL once).
//
// zbuf is shared memory (4V bytes of the 227 KiB a block may opt into: V up to ~58000), else the
// dlogits row itself. Bytes per row in DRAM terms: read 4V (+ the target), write 4V (+ the loss);
// without dlogits, read 4V only. The second read of the row is from shared memory (4V written and
// read there), so it costs no DRAM or L2 traffic; backend/cost.c counts 4V + 4V. With zbuf in the
// dlogits row (larger V), pass 1 also writes z there and pass 2 reads it back: still 4V + 4V in
// DRAM while the row stays in L2 (one 1024-thread block per SM: ~132 rows of ~240 KB in flight,
// ~32 MB, under the 50 MB L2), else up to twice that.
//
// In place: dlogits may alias logits. Every element of l is read in pass 1 by exactly one thread,
// and the only write to it before the barrier that ends pass 1 is that thread's own z (zbuf in the
// dlogits row); the target's z is read from zbuf (or, without dlogits, from l: then nothing is
// written) after that barrier and before the one that precedes pass 2's first write.
//
// Block shape: ~4 vectors per thread, whole warps, at most 1024 threads. At V = 50304: 12576
// float4 per row, 1024 threads with 12-13 each, loaded 4 at a time (64 bytes in flight per
// thread, 64 KB per SM); the 201 KB row in shared memory holds the SM to one block, so the block is
// as large as allowed. ptxas (nvcc 13, -O3, sm_90a and sm_80 alike): float4 kernel 52 registers,
// scalar kernel 38, no spills, 272 bytes of static shared memory.
//
// Rounding against the CPU reference (cpu/xent.c: its exp/tanh polynomials, fp32 exponentials
// summed in chunks of 1024, the chunk sums added in a double), u = 2^-24: here each thread sums its
// k <= 52 exponentials (V = 50304; ~16 for small rows) in fp32, its sum is rescaled ~ln(k/4) + 1
// times and the tree merges 10 levels, each rescale or merge one exp2f (<= 2 ulp) and one
// rounding on one side. The row's sum is then within (52 + 14*5) u ~ 7e-6 of exact in the worst
// case, a common factor on every probability; it is typically ~sqrt(k) u ~ 5e-7, as the CPU's own
// chunked sum is typically far inside its worst case of 1024 u. exp2f and tanhf per element add
// <= 2 ulp each, independently between elements. An emulation of this arithmetic order on the CPU
// (exp2f and tanhf perturbed by 0-2 ulp at random, or biased by 2 ulp) stayed within 3.5e-7
// normwise of cpu/xent.c for the test's shapes, cap 0, 15 and 30, so the test's fp32 bar (1e-5,
// verify/test_cuda_kernels.c softcap_xent) is unchanged.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "backend/cuda/cuda_common.cuh"

#define XENT_MAX_THREADS 1024  // a multiple of 32
#define XENT_UNROLL 4          // vectors loaded by a thread before it computes on them
#define XENT_LOG2E 1.4426950408889634f

template <int W> struct xvec {
    float x[W];
};

// Vector i (elements i*W .. i*W+W-1) of p; p is 16-byte aligned when W == 4.
template <int W> static __device__ __forceinline__ xvec<W> vload(const float *p, int i) {
    xvec<W> r;
    if constexpr (W == 4) {
        float4 f = reinterpret_cast<const float4 *>(p)[i];
        r.x[0] = f.x, r.x[1] = f.y, r.x[2] = f.z, r.x[3] = f.w;
    } else {
        r.x[0] = p[i];
    }
    return r;
}
template <int W> static __device__ __forceinline__ void vstore(float *p, int i, xvec<W> r) {
    if constexpr (W == 4) reinterpret_cast<float4 *>(p)[i] = make_float4(r.x[0], r.x[1], r.x[2], r.x[3]);
    else p[i] = r.x[0];
}

// f(i, vector i of p) for this thread's vectors threadIdx.x + j * blockDim.x (j = 0, 1, ...) of the
// nv of p, in that order; XENT_UNROLL loads are issued before f sees the first of them (f may
// overwrite the vectors it is given: all of a batch are loaded first).
template <int W, class F> static __device__ __forceinline__ void for_each_vec(const float *p, int nv, F f) {
    const int bs = blockDim.x;
    for (int i0 = threadIdx.x; i0 < nv; i0 += XENT_UNROLL * bs) {
        xvec<W> z[XENT_UNROLL];
#pragma unroll
        for (int u = 0; u < XENT_UNROLL; u++)
            if (i0 + u * bs < nv) z[u] = vload<W>(p, i0 + u * bs);
#pragma unroll
        for (int u = 0; u < XENT_UNROLL; u++)
            if (i0 + u * bs < nv) f(i0 + u * bs, z[u]);
    }
}

// z = cap * tanh(l * rcap) as the CPU computes it (cap <= 0: z = l).
static __device__ __forceinline__ float capped(float l, float cap, float rcap) {
    return cap > 0 ? cap * tanhf(l * rcap) : l;
}

// Merge (mL2, s2) into (mL1, s1): s a sum of exp2(z*L - mL); mL = -inf means empty. Only the side
// with the smaller reference is scaled (one exp2f and one rounding per merge; an empty side's
// factor is exp2f(-inf) = 0).
static __device__ __forceinline__ void merge(float *mL1, float *s1, float mL2, float s2) {
    if (mL2 == -INFINITY) return;
    const float f = exp2f(fminf(*mL1, mL2) - fmaxf(*mL1, mL2));
    *s1 = mL2 > *mL1 ? *s1 * f + s2 : *s1 + s2 * f;
    *mL1 = fmaxf(*mL1, mL2);
}

// The merged (mL, s) of the block, in a fixed order, in red_*[0]; every thread must call it.
static __device__ void block_merge(float mL, float s, float *red_m, float *red_s) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_down_sync(GM_FULL_MASK, mL, o), s2 = __shfl_down_sync(GM_FULL_MASK, s, o);
        merge(&mL, &s, m2, s2);  // lanes >= 32 - o merge garbage they never pass on
    }
    if (lane == 0) red_m[warp] = mL, red_s[warp] = s;
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x / 32;
        mL = lane < nw ? red_m[lane] : -INFINITY, s = lane < nw ? red_s[lane] : 0;
        for (int o = 16; o > 0; o >>= 1) {
            float m2 = __shfl_down_sync(GM_FULL_MASK, mL, o), s2 = __shfl_down_sync(GM_FULL_MASK, s, o);
            merge(&mL, &s, m2, s2);
        }
        if (lane == 0) red_m[0] = mL, red_s[0] = s;
    }
}

// One block per row. zbuf_smem: z goes to shared memory (4V bytes of dynamic shared memory), else
// to the dlogits row; without dlogits z is not kept.
template <int W>
__global__ static void __launch_bounds__(XENT_MAX_THREADS)
    xent_kernel(float *losses, float *dlogits, const float *logits, const int32_t *targets, int V, float cap,
                float rcap, float scl, double dloss_scale, int zbuf_smem) {
    extern __shared__ __align__(16) float srow[];
    __shared__ float red_m[XENT_MAX_THREADS / 32], red_s[XENT_MAX_THREADS / 32];
    __shared__ float s_a;  // dloss_scale / sum, broadcast to pass 2
    const size_t n = blockIdx.x;
    const float *l = logits + n * V;
    float *d = dlogits ? dlogits + n * V : NULL;
    float *zbuf = !d ? NULL : (zbuf_smem ? srow : d);
    const int nv = V / W, tgt = targets[n];

    // ---- pass 1: z, and the thread's (mL, s) ----
    float mL = -INFINITY, s = 0;
    for_each_vec<W>(l, nv, [&](int i, xvec<W> z) {
        float cm = -INFINITY;
#pragma unroll
        for (int k = 0; k < W; k++) z.x[k] = capped(z.x[k], cap, rcap), cm = fmaxf(cm, z.x[k]);
        if (zbuf) vstore<W>(zbuf, i, z);
        float cmL = cm * XENT_LOG2E;
        if (cmL > mL) s *= exp2f(mL - cmL), mL = cmL;  // the first vector: exp2f(-inf) * 0 = 0
#pragma unroll
        for (int k = 0; k < W; k++) s += exp2f(fmaf(z.x[k], XENT_LOG2E, -mL));
    });
    block_merge(mL, s, red_m, red_s);  // its barrier also ends pass 1's writes of zbuf
    if (threadIdx.x == 0) {
        mL = red_m[0], s = red_s[0];
        float zt = zbuf ? zbuf[tgt] : capped(l[tgt], cap, rcap);
        double lse = ((double)mL + log2((double)s)) / (double)XENT_LOG2E;
        losses[n] = (float)(lse - zt);
        s_a = (float)(dloss_scale / s);
    }
    if (!d) return;
    __syncthreads();  // the target's z is read, s_a and red_m[0] are set

    // ---- pass 2: d = a * exp(z - max) * dz/dl, minus scl * dz/dl at the target; dz/dl = 1 - (z/cap)^2 ----
    const float a = s_a;
    mL = red_m[0];
    for_each_vec<W>(zbuf, nv, [&](int i, xvec<W> z) {
#pragma unroll
        for (int k = 0; k < W; k++) {
            float t = z.x[k] * rcap, f = cap > 0 ? 1 - t * t : 1;
            float g = a * exp2f(fmaf(z.x[k], XENT_LOG2E, -mL)) * f;
            z.x[k] = i * W + k == tgt ? g - scl * f : g;
        }
        vstore<W>(d, i, z);
    });
}

void gm_cuda_xent_fwd_bwd(const gm_backend *be, gm_real *losses, gm_actval *dlogits_act, const gm_actval *logits_act,
                          const int32_t *targets, int N, int V, double cap, double dloss_scale) {
    gm_real *dlogits = (gm_real *)dlogits_act;
    const gm_real *logits = (const gm_real *)logits_act;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || V <= 0) return;
    const int vec4 = V % 4 == 0 && (uintptr_t)logits % 16 == 0 && (uintptr_t)dlogits % 16 == 0;
    const int nv = vec4 ? V / 4 : V;
    // ~4 vectors per thread, whole warps
    int threads = (nv / 4 + 31) / 32 * 32;
    threads = threads < 32 ? 32 : (threads > XENT_MAX_THREADS ? XENT_MAX_THREADS : threads);
    // z in shared memory when the row fits beside the kernel's static shared memory
    int optin = 0;
    GM_CU(c, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c->device));
    cudaFuncAttributes fa = {};
    void (*kern)(float *, float *, const float *, const int32_t *, int, float, float, float, double, int) =
        vec4 ? xent_kernel<4> : xent_kernel<1>;
    GM_CU(c, cudaFuncGetAttributes(&fa, kern));
    const size_t row = sizeof(float) * (size_t)V;
    const int smem = dlogits && row + fa.sharedSizeBytes <= (size_t)optin;
    const size_t dyn = smem ? row : 0;
    const float fcap = cap > 0 ? (float)cap : 0, rcap = cap > 0 ? (float)(1.0 / cap) : 0;
    GM_CU(c, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
    kern<<<N, threads, dyn, c->stream>>>(losses, dlogits, logits, targets, V, fcap, rcap, (float)dloss_scale,
                                         dloss_scale, smem);
    GM_CU_LAUNCHED(c);
}
