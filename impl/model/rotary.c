#include "model/rotary.h"

#include <math.h>

#include "base/bf16.h"

void gm_rotary_freqs(const gm_config *c, double *w) {
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        if (c->rotary_half_truncated)
            w[i] = i < half / 2 ? pow(c->rotary_base, -(double)i / (double)(half / 2 - 1)) : 0.0;
        else if (c->rotary_bf16)
            // (1 / base) is a Python float that torch casts to the fp32 of arange(0, HD, 2) / HD.
            // torch's vectorised fp32 pow and powf may differ by an ulp; their bf16 roundings agree
            // on every table the presets use (verify/test_rotary.c).
            w[i] = gm_round_bf16(powf((float)(1.0 / c->rotary_base), (float)(2 * i) / (float)c->head_dim));
        else
            w[i] = pow(c->rotary_base, -2.0 * (double)i / c->head_dim);
    }
}

double gm_rotary_angle(const gm_config *c, int t, double w) {
    if (c->rotary_positions == GM_ROTARY_EXACT) return t * w;
    // t < 2^24 and w a bf16 value: (float)t is exact, and so is the fp32 product of the two
    // 8-bit significands, which gm_round_bf16 then rounds once.
    return gm_round_bf16(gm_round_bf16((float)t) * (float)w);
}

void gm_rotary_tables(const gm_config *c, int T, gm_real *cos_t, gm_real *sin_t) {
    size_t half = (size_t)c->head_dim / 2;
    double w[GM_MAX_HEAD_DIM / 2];
    gm_rotary_freqs(c, w);
    for (int t = 0; t < T; t++)
        for (size_t i = 0; i < half; i++) {
            double theta = gm_rotary_angle(c, t, w[i]);
            cos_t[t * half + i] = (gm_real)cos(theta), sin_t[t * half + i] = (gm_real)sin(theta);
        }
}
