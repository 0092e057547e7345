// Process set-up shared by the programs.
#ifndef GM_BASE_RUNTIME_H
#define GM_BASE_RUNTIME_H

// OpenMP threads that spin while waiting fight OpenBLAS's own threads for the cores (measured on
// 2 cores: a tiny training step 9x slower with GNU OpenMP's default spinning). libgomp reads
// OMP_WAIT_POLICY once, before main, so when it is unset this sets it to "passive" and re-executes
// the program; an explicit setting is respected. Call first thing in main.
void gm_runtime_init(int argc, char **argv);

#endif
