// Monotonic wall-clock time for step timing and benches.
#ifndef GM_BASE_TIMER_H
#define GM_BASE_TIMER_H

#include <stdint.h>

// Nanoseconds since an arbitrary fixed point (CLOCK_MONOTONIC: never jumps with the wall clock).
uint64_t gm_now_ns(void);
static inline double gm_seconds_since(uint64_t start_ns) { return (double)(gm_now_ns() - start_ns) * 1e-9; }

#endif
