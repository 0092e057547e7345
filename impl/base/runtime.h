// Process set-up shared by the programs.
#ifndef GM_BASE_RUNTIME_H
#define GM_BASE_RUNTIME_H

// Two settings that OpenMP and OpenBLAS read once, before main, so this sets them in the
// environment and re-executes the program when they are not so. Call first thing in main.
// - OMP_WAIT_POLICY=passive: OpenMP threads that spin while waiting fight OpenBLAS's own threads
//   for the cores (measured on 2 cores: a tiny training step 9x slower with GNU OpenMP's default
//   spinning). An explicit setting is respected.
// - OPENBLAS_NUM_THREADS=1, always: the CPU backend calls BLAS from each OpenMP thread with one
//   BLAS thread (backend/cpu/blas.h), so OpenBLAS's own pool is never used, yet its threads start
//   when the library loads and each maps a 128 MiB buffer at once. Under `ulimit -v` such a
//   thread whose buffer did not fit retried forever (100% CPU, and exit() joined it: a refused run
//   never ended). A harness that wants more BLAS threads asks openblas_set_num_threads, which
//   starts them then (train/ceilings.c).
void gm_runtime_init(int argc, char **argv);

#endif
