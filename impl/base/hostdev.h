// Marks a function as callable from host and device code when compiled by nvcc, so the RNG and
// bf16 helpers are one definition shared by the CPU and CUDA backends.
#ifndef GM_BASE_HOSTDEV_H
#define GM_BASE_HOSTDEV_H
#ifdef __CUDACC__
#define GM_HD __host__ __device__
#else
#define GM_HD
#endif
#endif
