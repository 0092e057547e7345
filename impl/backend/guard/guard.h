// The guarded backend: the CPU backend whose memory the host cannot reach between kernel calls.
// Every allocation is its own mapping, kept PROT_NONE except while one of this backend's own
// functions runs, so any host code that dereferences backend memory instead of going through
// upload/download crashes at once (SIGSEGV). Results are bitwise those of the CPU backend: the
// kernels are the CPU backend's. For tests and for checking that a program is a backend program;
// not thread-safe (one host thread drives it, as with the CUDA backend).
#ifndef GM_BACKEND_GUARD_GUARD_H
#define GM_BACKEND_GUARD_GUARD_H

#include "backend/backend.h"

// The backend (static; never freed).
const gm_backend *gm_backend_guarded(void);

#endif
