// Rotary embedding's rotation of one pair of half-rows (backend.h rotary_fwd / rotary_bwd), the
// arithmetic that rotary.cu and the fused qknorm_rotary.cu share, statement for statement, and where
// a head row of a view starts.
#ifndef GM_BACKEND_CUDA_ROTARY_CUH
#define GM_BACKEND_CUDA_ROTARY_CUH

// (x1, x2), W elements each, rotated by theta (sign 1: y1 = x1 c + x2 s, y2 = -x1 s + x2 c) or by
// -theta (sign -1), in place; c and s are the tables' cos and sin at those W positions.
template <int W>
static __device__ __forceinline__ void gm_rotate(float *x1, float *x2, const float *c, const float *s, float sign) {
#pragma unroll
    for (int j = 0; j < W; j++) {
        const float sj = sign * s[j], y1 = x1[j] * c[j] + x2[j] * sj, y2 = -x1[j] * sj + x2[j] * c[j];
        x1[j] = y1, x2[j] = y2;
    }
}

// Where head row `row` (a (b, t, h) index of (B, T, NH, HD)) starts in a view of token stride ld
// (NH HD: a tensor of its own; more: a part of a fused projection's rows).
static __device__ __forceinline__ size_t gm_head_row_at(size_t row, int NH, int HD, int ld) {
    return row / NH * (size_t)ld + row % NH * (size_t)HD;
}

#endif
