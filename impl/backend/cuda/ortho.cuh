// Internal to the CUDA `orthogonalize` kernel (orthogonalize.cu): the device form of one item and
// the two orthogonalizers it dispatches to, Newton-Schulz (newton_schulz.cu, batched over items of
// one shape) and the SVD polar factor (svd_polar.cu, one item at a time).
#ifndef GM_BACKEND_CUDA_ORTHO_CUH
#define GM_BACKEND_CUDA_ORTHO_CUH

#include "backend/cuda/cuda_common.cuh"

// One item of an orthogonalize call: out (rows, cols) = scale * orthogonalize(G), row-major.
typedef struct {
    const float *G;
    float *out;
    int rows, cols;
    float scale;
} gm_cuda_ortho_desc;

// Per-item status, written on the device, read by the host at the end of the call.
enum { GM_ORTHO_OK = 0, GM_ORTHO_NONFINITE = 1, GM_ORTHO_SVD_NOCONV = 2, GM_ORTHO_SVD_BADARG = 3 };

// Newton-Schulz on nb items of one shape, m = min(rows, cols), n = max(rows, cols): d (device,
// nb descriptors), ss (device, nb fp64 sums of squares of the inputs as the normalizer takes
// them: of bf16(G) when cfg->bf16 and cfg->norm_src == GM_NS_NORM_OF_X, else of G).
void gm_cuda_ns_batch(gm_cuda_ctx *c, const gm_ortho *cfg, const gm_cuda_ortho_desc *d, const double *ss, int nb, int m,
                      int n);
// The polar factor of one item (d: host copy of its descriptor) by cuSOLVER's gesvdj, with the CPU
// path's rank rule; *status (device) gets GM_ORTHO_SVD_* when gesvdj fails.
void gm_cuda_svd_polar(gm_cuda_ctx *c, const gm_cuda_ortho_desc *d, int *status);

#endif
