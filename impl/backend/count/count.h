// The counting backend: memory that is never touched and kernels that do nothing, so that the
// timing backend (backend/timing) wrapped around it records every call of the real training step,
// with its shape, FLOPs and bytes (backend/cost.h), at any scale in seconds on any machine. Values
// are meaningless: downloads read zeros (a loss of 0), and nothing is computed. Memory is address
// space reserved without access (PROT_NONE, never committed), so a host dereference crashes as on
// the guarded backend, and a full-scale plan of tens of GB costs nothing. For bench/kernels --count.
// Its activations are act_size-byte elements, the counted backend's (select.h's gm_backend_act_size:
// the CUDA backend's bf16 for --backend=cuda), so a count prices the step as that backend stores it.
#ifndef GM_BACKEND_COUNT_COUNT_H
#define GM_BACKEND_COUNT_COUNT_H

#include "backend/backend.h"

// The backend (static; its reservation lives as long as the process). NULL + gm_fail when the
// address space cannot be reserved (e.g. under a small `ulimit -v`).
// act_size: the activation element of the backend counted for (the latest call's applies).
const gm_backend *gm_backend_counting(size_t act_size);

#endif
