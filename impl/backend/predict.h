// A model of the CUDA backend's time per kernel call on a GPU, from the call's cost
// (backend/cost.h) and rates measured there (reports/gpu-h100/h100_rates.csv,
// reports/gpu-h200/h200_rates.csv, each row with its source), so that a step can be predicted on a
// machine without a GPU (bench/kernels --count=1):
// - a matmul: its library GEMMs (gm_kernel_cost.gemm) at cuBLAS's measured time for the nearest
//   measured shape (scaled by the FLOP ratio), with the output type the backend writes, plus the
//   memory traffic the backend adds around them (every fp32 operand converted to a bf16 copy, read
//   4 and written 2 bytes an element: the weights always, activations where they are stored fp32;
//   beta = 1 reads of the gradients it adds into);
// - attention and Muon's orthogonalize: FLOPs at our own kernels' measured rates;
// - every other call: its bytes at the measured device copy bandwidth times an efficiency fitted on
//   a measured step table: the op's own (its bytes over its time in that table, all its calls),
//   or for an op the table lacks, the table's overall one (what its memory-bound kernels reach);
// - no call takes less than `floor_ms` (launch and synchronisation), also fitted on that table.
#ifndef GM_BACKEND_PREDICT_H
#define GM_BACKEND_PREDICT_H

#include "backend/cost.h"

typedef struct gm_rates gm_rates;

// The rates file (CSV: kind,key,value,unit,source; '#' lines are comments): one `device` row (key:
// the GPU's short name, e.g. H100; value: its memory in MiB), then the measured rows. NULL +
// gm_fail with one line naming the file, the line and the fault.
gm_rates *gm_rates_load(const char *path);
// The GPU the rates were measured on (the device row's key).
const char *gm_rates_device(const gm_rates *r);
void gm_rates_free(gm_rates *r);

// The fitted part: memory-bound efficiency (fraction of the copy bandwidth) and the per-call floor.
void gm_rates_fit(gm_rates *r, double memory_efficiency, double floor_ms);
// A memory-bound op's own efficiency (a backend.h name; its calls then use it instead of the
// overall one). 0, or -1 + gm_fail for a value that is not positive and finite or too many ops.
int gm_rates_fit_op(gm_rates *r, const char *op, double memory_efficiency);
// The efficiency op's memory-bound calls are priced at: its own where fitted, else the overall one.
double gm_predict_op_efficiency(const gm_rates *r, const char *op);
double gm_rates_copy_gbs(const gm_rates *r);
double gm_predict_fit_efficiency(const gm_rates *r);
double gm_predict_fit_floor(const gm_rates *r);

// Predicted milliseconds of one call of kernel `op` (a backend.h name) with cost c.
double gm_predict_ms(const gm_rates *r, const char *op, const gm_kernel_cost *c);
// The model's category of `op`: "matmul", "attention", "orthogonalize" or "memory".
const char *gm_predict_category(const char *op);

#endif
