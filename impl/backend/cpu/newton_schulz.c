// Newton-Schulz orthogonalization in fp64 and fp32 (with optional bf16 emulation), plain
// (newton_schulz.inc) and Gram (gram_newton_schulz.inc), over the matrix operations of
// ns_ops.inc: the same bodies instantiated once per element type.
//
// One iteration with the triple (a, b, c), X (m, n) wide:
//   A = X X^T            (m, m)
//   B = c A A + b A      (m, m)
//   X = B X + a X        (m, n)   i.e. X <- a X + b (X X^T) X + c (X X^T)^2 X
// With bf16 emulated, the normalized input and each of A, B, X are rounded to bf16 after an
// fp32-accumulated product: one rounding per GEMM output including its alpha/beta epilogue, as a
// bf16 cuBLAS GEMM (and the Polar Express record's fused kernels) does. PyTorch's eager form of
// record #18 (`B = b * A + c * A @ A`) would round c*A and b*A separately as well; under
// torch.compile those elementwise products fuse, so we model the fused form.
#include "backend/cpu/linalg.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/bf16.h"
#include "base/error.h"

#define T double
#define SFX f64
#define GEMM cblas_dgemm
#define SYRK cblas_dsyrk
#include "backend/cpu/ns_instance.inc"

#define T float
#define SFX f32
#define GEMM cblas_sgemm
#define SYRK cblas_ssyrk
#include "backend/cpu/ns_instance.inc"
