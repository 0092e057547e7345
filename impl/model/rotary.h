// Rotary position tables (refdata/records/PRESETS.md §2.4): pair i < HD/2 of every head turns by
// theta = t * w_i at position t. The frequencies w_i are computed here and nowhere else.
#ifndef GM_MODEL_ROTARY_H
#define GM_MODEL_ROTARY_H

#include "base/real.h"
#include "model/config.h"

// w (HD/2) of a configuration:
//   default: w_i = base^(-2i/HD) in double (#2-#8);
//   rotary_half_truncated (#18): base^(-i/(HD/4-1)) for i < HD/4, 0 above (those pairs stay put);
//   rotary_bf16 (#16): the record's inv_freq buffer, (1/base)^((2i)/HD) evaluated in fp32 as torch
//   does it (fp32 operands, fp32 pow), then rounded to bf16 (nearest, ties to even) by the
//   whole-model .bfloat16() cast.
void gm_rotary_freqs(const gm_config *cfg, double *w);
// The angle of frequency w (one of gm_rotary_freqs) at position t >= 0:
//   rotary_positions exact: t * w in double;
//   eager-bf16 (needs rotary_bf16, so w is a bf16 value): bf16(bf16(t) * w), as eager torch.outer
//   of an int64 arange and a bf16 vector computes it: the positions promoted to bf16, the product
//   (exact in fp32: 8 x 8 significant bits) rounded once to bf16, both nearest with ties to even.
double gm_rotary_angle(const gm_config *cfg, int t, double w);
// cos_t, sin_t (T, HD/2) host arrays: cos and sin, in double, of gm_rotary_angle(cfg, t, w_i),
// stored in the model's precision.
void gm_rotary_tables(const gm_config *cfg, int T, gm_real *cos_t, gm_real *sin_t);

#endif
