// This machine's ceilings, measured at a stated thread count, for the timing reports: every rate
// a report gives is a fraction of a ceiling measured in the same run at the thread count the
// timed code ran with.
#ifndef GM_TRAIN_CEILINGS_H
#define GM_TRAIN_CEILINGS_H

// OpenBLAS sgemm C (n, n) = A B at n = 2048 (2 n^3 flops) on `threads` OpenBLAS threads (the
// previous count is restored); median of 5 after a warm-up, GFLOP/s.
double gm_ceiling_sgemm(int threads);
// A 256 MiB memcpy split over `threads` OpenMP threads; bytes moved = 2 x 256 MiB (read + write,
// the reports' convention); median of 5 after a warm-up, GB/s.
double gm_ceiling_memcpy(int threads);

#endif
