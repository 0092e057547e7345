// The machine a run or a report was made on, as JSON: CPU model and threads (OpenMP, OpenBLAS),
// and each GPU's name, memory and driver as nvidia-smi shows them when present.
#ifndef GM_TRAIN_HARDWARE_H
#define GM_TRAIN_HARDWARE_H

// malloc'd JSON object.
char *gm_hardware_json(void);
// The CPU model name from /proc/cpuinfo ("unknown CPU" when absent), for report headers. malloc'd.
char *gm_cpu_model(void);
// A short file-name slug of the CPU model and thread count, e.g. "amd-epyc-2t" or
// "intel-xeon-gold-6338-64t" (lower case, words joined by '-', "(R)", "CPU", "Processor" and the
// clock dropped), for naming reports by machine. malloc'd.
char *gm_hardware_slug(void);
// The same for a device's name, up to a parenthesis: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" ->
// "nvidia-h100-80gb-hbm3". malloc'd.
char *gm_device_slug(const char *device);
// The 1-minute load average (/proc/loadavg), -1 when unknown: timings on a shared machine are
// only as good as its idleness, so every timing report prints it.
double gm_load_average(void);

#endif
