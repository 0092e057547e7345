// This machine's ceilings, measured in the same run as the code they rate: every rate a report
// gives is a fraction of a ceiling measured beside it.
//
// Two kinds:
// - host ceilings (gm_ceiling_sgemm, gm_ceiling_memcpy): OpenBLAS sgemm at 2048^3 and a 256 MiB
//   memcpy at a stated thread count; the CPU backends' reports;
// - library ceilings (gm_lib_ceilings): what the backend's own libraries reach on its own memory,
//   the yardstick of a GPU: its vendor GEMM on the operand type the backend's matmuls use (CUDA:
//   cuBLAS, bf16 in and out, fp32 accumulation, as PyTorch's bf16 `a @ b`; under GM_CUDA_LIBS=ref
//   the reference GEMM kernel, and it says so) at a large square shape and at any GEMM shape asked
//   for, and the backend's copy of a large buffer (CUDA: device to device). On a CPU backend they
//   are OpenBLAS sgemm on all threads and the backend's copy, so the same report code runs, and is
//   tested, without a GPU.
#ifndef GM_TRAIN_CEILINGS_H
#define GM_TRAIN_CEILINGS_H

#include "backend/backend.h"
#include "backend/cost.h"

// OpenBLAS sgemm C (n, n) = A B at n = 2048 (2 n^3 flops) on `threads` OpenBLAS threads (the
// previous count is restored); median of 5 after a warm-up, GFLOP/s.
double gm_ceiling_sgemm(int threads);
// A 256 MiB memcpy split over `threads` OpenMP threads; bytes moved = 2 x 256 MiB (read + write,
// the reports' convention); median of 5 after a warm-up, GB/s.
double gm_ceiling_memcpy(int threads);

typedef struct gm_lib_ceilings gm_lib_ceilings;

// The library ceilings of backend `be` (the CUDA backend, or any other: see above); `device` is
// the CUDA device index be was opened on (ignored elsewhere). NULL + gm_fail on failure.
gm_lib_ceilings *gm_lib_ceilings_open(const gm_backend *be, int device);
void gm_lib_ceilings_close(gm_lib_ceilings *lc);
// What they were measured on ("NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", or the CPU's model and
// thread count), the GEMM's and the copy's names, and the square GEMM's edge.
const char *gm_lib_ceilings_device(const gm_lib_ceilings *lc);
const char *gm_lib_ceilings_gemm_name(const gm_lib_ceilings *lc);
const char *gm_lib_ceilings_copy_name(const gm_lib_ceilings *lc);
int gm_lib_ceilings_square(const gm_lib_ceilings *lc);
// Runs the square GEMM for `seconds` (a GPU's clocks rise under load: measured rates halve
// without it; the first ceilings of a run are taken after one).
void gm_lib_ceilings_warm_up(gm_lib_ceilings *lc, double seconds);
// The library GEMM at `s`: median milliseconds per call of 5 samples (each of enough calls to
// take ~20 ms); < 0 + gm_fail on a backend error.
double gm_lib_ceiling_gemm_ms(gm_lib_ceilings *lc, gm_gemm_shape s);
// The square GEMM's rate, GFLOP/s; the copy's, GB/s (read + write bytes), of its buffer size.
double gm_lib_ceiling_square_gflops(gm_lib_ceilings *lc);
double gm_lib_ceiling_copy_gbs(gm_lib_ceilings *lc);
size_t gm_lib_ceilings_copy_bytes(const gm_lib_ceilings *lc);

#endif
