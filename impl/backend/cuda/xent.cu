// Optional softcap z = cap*tanh(l/cap), cross-entropy and its gradient, fused: one block per row
// of logits l (N, V), so that every row's reduction has one fixed order (deterministic, no atomics).
//
// Logits and dlogits are activations (act_elem.cuh's element, e bytes: 4 fp32 or 2 bf16), widened
// to fp32 on load, dlogits rounded once at the store; losses are fp32. Pass 1 reads the row once
// from DRAM (GM_ACT_VEC elements in one 128-bit access, 4 fp32 or 8 bf16, when V is a multiple of
// it and both row arrays are 16-byte aligned, else scalar), evaluates tanh once per logit and,
// when dlogits are wanted and the row fits, parks z (fp32) in shared memory zbuf; each thread
// keeps an online (max, sum of exp) over its strided share, rescaling its sum once per vector that
// brings a new max. The block merges the threads' pairs in a fixed tree
// (warp shuffles, then one warp over the warps' results) into the row's log-sum-exp. Pass 2 reads
// z back from zbuf (or, for a row too long for it, reads the logits again and recomputes the same
// fp32 z) and writes dloss/dlogits. Exponentials are exp2f of log2(e)-prescaled values:
// e_v = exp2(z_v*L - mL), L = log2(e) in fp32, mL = fp32(max*L), the same value in both passes, so
// the rounding of mL is a common factor that cancels between the sum and the probabilities (the
// FMA rounds z*L - mL once).
//
// zbuf is fp32 shared memory whatever the element (z kept unrounded): 4V bytes beside the
// kernel's 272 static ones, of the 227 KiB a block may opt into on an H100 (V <= 58044; 163 KiB on
// an A100: V <= 41660). With a bf16 row the row in DRAM halves, the row in shared memory does not.
// Bytes per row in DRAM terms: read eV (+ the target), write eV (+ the loss); without dlogits, read
// eV only. The second read of the row is from shared memory (4V written and read there), so it
// costs no DRAM or L2 traffic; backend/cost.c counts eV + eV. A longer row is read twice: eV + eV
// read (the second from L2 while the row stays there: one 1024-thread block per SM, ~132 rows in
// flight, ~32 MB at 240 KB fp32 rows, under the 50 MB L2) and eV written, tanh evaluated twice.
//
// In place: dlogits may alias logits. Every element of l is read in pass 1 by exactly one thread
// and not written before pass 2; the target's z is read from zbuf (or recomputed from l) after the
// barrier that ends pass 1 and before the one that precedes pass 2's first write; in pass 2 each
// element is read (zbuf or l) and then written by the same thread, all of a batch read first.
//
// Block shape: ~4 vectors per thread, whole warps, at most 1024 threads. At V = 50304: 12576
// fp32 vectors (or 6288 bf16 ones) per row, 1024 threads with 12-13 (6-7) each, loaded 4 at a
// time (64 bytes in flight per thread, 64 KB per SM); the 201 KB row in shared memory holds the SM
// to one block, so the block is as large as allowed. ptxas (nvcc 13, -O3, sm_90a): fp32 element,
// vector kernel 54 registers, scalar 32; bf16 element, vector kernel (8 per access) 63, scalar 36
// (the 1024-thread launch bound allows 64); no spills, 272 bytes of static shared memory.
//
// Rounding against the CPU reference (cpu/xent.c: its exp/tanh polynomials, fp32 exponentials
// summed in chunks of 1024, the chunk sums added in a double), u = 2^-24: here each thread sums its
// k <= 52 exponentials (V = 50304; 56 in 8-element bf16 vectors; ~16 for small rows) in fp32, its
// sum is rescaled ~ln(k/4) + 1 times and the tree merges 10 levels, each rescale or merge one exp2f
// (<= 2 ulp) and one rounding on one side. The row's sum is then within (52 + 14*5) u ~ 7e-6 of
// exact in the worst case, a common factor on every probability; it is typically ~sqrt(k) u ~ 5e-7,
// as the CPU's own chunked sum is typically far inside its worst case of 1024 u. exp2f and tanhf
// per element add <= 2 ulp each, independently between elements. An emulation of this arithmetic
// order on the CPU (exp2f and tanhf perturbed by 0-2 ulp at random, or biased by 2 ulp) stayed
// within 3.5e-7 normwise of cpu/xent.c for the test's shapes, cap 0, 15 and 30, so the test's fp32
// bar (1e-5, verify/test_cuda_kernels.c softcap_xent) is unchanged. A bf16 element adds the
// rounding of the logits themselves (the input, as the CPU twin stores it) and one rounding of each
// dlogit (2^-9 relative).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "backend/cuda/act_vec.cuh"
#include "backend/cuda/cuda_common.cuh"

#define XENT_MAX_THREADS 1024  // a multiple of 32
#define XENT_UNROLL 4          // vectors loaded by a thread before it computes on them
#define XENT_LOG2E 1.4426950408889634f

template <int W> struct xvec {
    float x[W];
};

// Vector i (elements i*W .. i*W+W-1) of p, widened to fp32: an activation row (W == GM_ACT_VEC:
// one 128-bit load) or the fp32 zbuf (W / 4 float4 loads); p is 16-byte aligned when W > 1.
template <int W, class T> static __device__ __forceinline__ xvec<W> vload(const T *p, int i) {
    xvec<W> r;
    if constexpr (W == 1) {
        r.x[0] = gm_act_widen(p[i]);
    } else if constexpr (std::is_same<T, gm_cuda_act>::value) {
        static_assert(W == GM_ACT_VEC, "one 128-bit access per activation vector");
        gm_act_ld_vec(p + (size_t)i * W, r.x);
    } else {
#pragma unroll
        for (int j = 0; j < W / 4; j++) {
            const float4 f = reinterpret_cast<const float4 *>(p)[i * (W / 4) + j];
            r.x[4 * j] = f.x, r.x[4 * j + 1] = f.y, r.x[4 * j + 2] = f.z, r.x[4 * j + 3] = f.w;
        }
    }
    return r;
}
// Store vector i of p, rounded to p's element (once) when p is an activation row.
template <int W, class T> static __device__ __forceinline__ void vstore(T *p, int i, xvec<W> r) {
    if constexpr (W == 1) {
        gm_act_round(p + i, r.x[0]);
    } else if constexpr (std::is_same<T, gm_cuda_act>::value) {
        static_assert(W == GM_ACT_VEC, "one 128-bit access per activation vector");
        gm_act_st_vec(p + (size_t)i * W, r.x);
    } else {
#pragma unroll
        for (int j = 0; j < W / 4; j++)
            reinterpret_cast<float4 *>(p)[i * (W / 4) + j] =
                make_float4(r.x[4 * j], r.x[4 * j + 1], r.x[4 * j + 2], r.x[4 * j + 3]);
    }
}

// f(i, vector i of p) for this thread's vectors threadIdx.x + j * blockDim.x (j = 0, 1, ...) of the
// nv of p, in that order; XENT_UNROLL loads are issued before f sees the first of them (f may
// overwrite the vectors it is given: all of a batch are loaded first).
template <int W, class T, class F> static __device__ __forceinline__ void for_each_vec(const T *p, int nv, F f) {
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

// One block per row; W is GM_ACT_VEC or 1. zbuf_smem (only with dlogits): z goes to shared memory
// (4V bytes of dynamic shared memory), else pass 2 recomputes it from the logits.
template <int W>
__global__ static void __launch_bounds__(XENT_MAX_THREADS)
    xent_kernel(float *losses, gm_cuda_act *dlogits, const gm_cuda_act *logits, const int32_t *targets, int V,
                float cap, float rcap, float scl, double dloss_scale, int zbuf_smem) {
    extern __shared__ __align__(16) float srow[];
    __shared__ float red_m[XENT_MAX_THREADS / 32], red_s[XENT_MAX_THREADS / 32];
    __shared__ float s_a;  // dloss_scale / sum, broadcast to pass 2
    const size_t n = blockIdx.x;
    const gm_cuda_act *l = logits + n * V;
    gm_cuda_act *d = dlogits ? dlogits + n * V : NULL;
    float *zbuf = d && zbuf_smem ? srow : NULL;
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
        float zt = zbuf ? zbuf[tgt] : capped(gm_act_ld(l, tgt), cap, rcap);
        double lse = ((double)mL + log2((double)s)) / (double)XENT_LOG2E;
        losses[n] = (float)(lse - zt);
        s_a = (float)(dloss_scale / s);
    }
    if (!d) return;
    __syncthreads();  // the target's z is read, s_a and red_m[0] are set

    // ---- pass 2: d = a * exp(z - max) * dz/dl, minus scl * dz/dl at the target; dz/dl = 1 - (z/cap)^2 ----
    const float a = s_a;
    mL = red_m[0];
    auto grad = [&](int i, xvec<W> z) {
#pragma unroll
        for (int k = 0; k < W; k++) {
            float t = z.x[k] * rcap, f = cap > 0 ? 1 - t * t : 1;
            float g = a * exp2f(fmaf(z.x[k], XENT_LOG2E, -mL)) * f;
            z.x[k] = i * W + k == tgt ? g - scl * f : g;
        }
        vstore<W>(d, i, z);
    };
    if (zbuf) {
        for_each_vec<W>(zbuf, nv, grad);
    } else {
        for_each_vec<W>(l, nv, [&](int i, xvec<W> z) {
#pragma unroll
            for (int k = 0; k < W; k++) z.x[k] = capped(z.x[k], cap, rcap);
            grad(i, z);
        });
    }
}

void gm_cuda_xent_fwd_bwd(const gm_backend *be, gm_real *losses, gm_actval *dlogits, const gm_actval *logits,
                          const int32_t *targets, int N, int V, double cap, double dloss_scale) {
    gm_cuda_act *dl = (gm_cuda_act *)dlogits;
    const gm_cuda_act *l = (const gm_cuda_act *)logits;
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || V <= 0) return;
    const int vec = V % GM_ACT_VEC == 0 && gm_vec_aligned_all(l, dl);
    const int nv = vec ? V / GM_ACT_VEC : V;
    // ~4 vectors per thread, whole warps
    int threads = (nv / 4 + 31) / 32 * 32;
    threads = threads < 32 ? 32 : (threads > XENT_MAX_THREADS ? XENT_MAX_THREADS : threads);
    // z in shared memory when the row fits beside the kernel's static shared memory
    int optin = 0;
    GM_CU(c, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c->device));
    cudaFuncAttributes fa = {};
    void (*kern)(float *, gm_cuda_act *, const gm_cuda_act *, const int32_t *, int, float, float, float, double,
                 int) = vec ? xent_kernel<GM_ACT_VEC> : xent_kernel<1>;
    GM_CU(c, cudaFuncGetAttributes(&fa, kern));
    const size_t row = sizeof(float) * (size_t)V;
    const int smem = dl && row + fa.sharedSizeBytes <= (size_t)optin;
    const size_t dyn = smem ? row : 0;
    const float fcap = cap > 0 ? (float)cap : 0, rcap = cap > 0 ? (float)(1.0 / cap) : 0;
    GM_CU(c, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
    kern<<<N, threads, dyn, c->stream>>>(losses, dl, l, targets, V, fcap, rcap, (float)dloss_scale, dloss_scale,
                                         smem);
    GM_CU_LAUNCHED(c);
}
