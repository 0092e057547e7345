// The bf16 matmul's acceptance test, shared by the GPU suite (cuda_kernels::matmul_bf16_fwd_bwd)
// and its CPU twin (matmul_bf16_bound), so that the bar a GPU is held to can be exercised, and
// shown to fail or hold, on a machine without one.
//
// The bar is element-wise, from the rounding points of the two sides (Higham, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., section 3.1). An output y = prior + sum_k a_k b_k over
// K terms (prior = 0 in the forward; the backward adds into its gradients):
// - the backend under test rounds a and b to bf16 (unit roundoff u = 2^-8), forms the products
//   exactly (8-bit significands) and accumulates in fp32; tensor cores are taken to truncate, not
//   round (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS
//   2021), so its accumulator's unit is 2^-23;
// - the fp32 CPU accumulates the unrounded products with unit 2^-24.
// Hence |test - ref| <= (2u + u^2) S + (gamma_{K+1}(2^-23) + gamma_{K+1}(2^-24)) (|prior| + (1+u)^2 S),
// with S = sum_k |a_k||b_k| and gamma_n(v) = n v / (1 - n v). Against the CPU fed the same
// bf16-rounded operands, u = 0 there. Where the backend stores activations in bf16 (out, dinp; dW
// stays fp32), the test side then rounds y once more, |fl(y) - y| <= u |y| <= u (|ref| + bound):
// bound' = (1 + u) bound + u |ref| (cuda_check.h's cc_act_widen; the fp32 CPU references do not
// round). The activation inputs (inp, dout, a dinp prior) go up rounded to the element and the
// references compute from those same values: the operand term above stays an upper bound (only W's
// rounding remains one-sided). A normwise relative bar (||test - ref|| / ||ref||) has no such
// derivation: where the prior cancels the product the relative error grows without bound (the
// H100's failure at 1x1x1, seed 1425047455154650: 0.0146, verify/test_matmul_bf16_bound.c).
#ifndef GM_VERIFY_MATMUL_CHECK_H
#define GM_VERIFY_MATMUL_CHECK_H

#include <stddef.h>

#include "cuda_check.h"

// Element-wise bound of the comment above for n outputs: prior (NULL: zeros), S = sum |a||b| per
// output, K the reduction length, operand_u the operands' unit roundoff (2^-8 against the fp32
// CPU, 0 against the CPU on the same bf16 operands). malloc'd.
double *mc_gemm_bound(const gm_real *prior, const gm_real *abs_sum, size_t n, int K, double operand_u);

// matmul_fwd and matmul_bwd (all three gradient modes, into random prior values) of e->gpu at
// (N, C, OC) on fresh random inputs, each output held to mc_gemm_bound against both the fp32 CPU
// and the CPU on the same bf16-rounded operands; a gradient not asked for must be left as it was.
void mc_check_matmul(cc_env *e, int N, int C, int OC);

#endif
