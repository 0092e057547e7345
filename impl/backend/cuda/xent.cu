// Optional softcap z = cap*tanh(l/cap), cross-entropy and its gradient, fused: one block per row.
// Pass 1: each thread keeps an online (max, sum of exp) over its strided logits; the block merges
// them in a fixed tree into the row's log-sum-exp. Pass 2 writes dloss/dlogits. Probabilities are
// never stored; dlogits may alias logits (every read of pass 1, including the target's logit, is
// done before the barrier that precedes the first write).
#include <cuda_runtime.h>
#include <math.h>

#include "backend/cuda/cuda_common.cuh"

#define XENT_THREADS 512  // a power of two

static __device__ __forceinline__ float capped(float l, float cap) { return cap > 0 ? cap * tanhf(l / cap) : l; }

// Merge (m2, s2) into (m1, s1): sums of exp(z - m), m the max; m = -inf means empty.
static __device__ __forceinline__ void merge(float *m1, double *s1, float m2, double s2) {
    if (m2 == -INFINITY) return;
    if (*m1 == -INFINITY) {
        *m1 = m2, *s1 = s2;
        return;
    }
    float m = fmaxf(*m1, m2);
    *s1 = *s1 * exp((double)*m1 - m) + s2 * exp((double)m2 - m);
    *m1 = m;
}

__global__ static void __launch_bounds__(XENT_THREADS)
    xent_kernel(float *losses, float *dlogits, const float *logits, const int32_t *targets, int V, float cap,
                double dloss_scale) {
    __shared__ float sm[XENT_THREADS];
    __shared__ double ss[XENT_THREADS];
    __shared__ float s_zt;
    size_t n = blockIdx.x;
    const float *l = logits + n * V;
    int tid = threadIdx.x, tgt = targets[n];
    if (tid == 0) s_zt = capped(l[tgt], cap);
    float m = -INFINITY;
    double s = 0;
    for (int v = tid; v < V; v += XENT_THREADS) {
        float z = capped(l[v], cap);
        if (z > m) {
            s = (m == -INFINITY ? 0.0 : s * exp((double)m - z)) + 1.0;
            m = z;
        } else {
            s += exp((double)z - m);
        }
    }
    sm[tid] = m, ss[tid] = s;
    __syncthreads();
    for (int stride = XENT_THREADS / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            float m1 = sm[tid];
            double s1 = ss[tid];
            merge(&m1, &s1, sm[tid + stride], ss[tid + stride]);
            sm[tid] = m1, ss[tid] = s1;
        }
        __syncthreads();
    }
    double lse = (double)sm[0] + log(ss[0]);
    if (tid == 0) losses[n] = (float)(lse - s_zt);
    if (!dlogits) return;
    float *d = dlogits + n * V;
    for (int v = tid; v < V; v += XENT_THREADS) {
        float z = capped(l[v], cap);
        double dz = dloss_scale * (exp((double)z - lse) - (v == tgt ? 1.0 : 0.0));
        // dz/dl = 1 - tanh^2 = 1 - (z/cap)^2
        d[v] = (float)(cap > 0 ? dz * (1.0 - ((double)z / cap) * ((double)z / cap)) : dz);
    }
}

void gm_cuda_xent_fwd_bwd(const gm_backend *be, gm_real *losses, gm_real *dlogits, const gm_real *logits,
                          const int32_t *targets, int N, int V, double cap, double dloss_scale) {
    gm_cuda_ctx *c = gm_cuda_ctx_of(be);
    if (N <= 0 || V <= 0) return;
    xent_kernel<<<N, XENT_THREADS, 0, c->stream>>>(losses, dlogits, logits, targets, V, (float)cap, dloss_scale);
    GM_CU_LAUNCHED(c);
}
