// The machine a run or a report was made on, as JSON: CPU model and threads (OpenMP, OpenBLAS),
// and each GPU's name, memory and driver as nvidia-smi shows them when present.
#ifndef GM_TRAIN_HARDWARE_H
#define GM_TRAIN_HARDWARE_H

// malloc'd JSON object.
char *gm_hardware_json(void);
// The CPU model name from /proc/cpuinfo ("unknown CPU" when absent), for report headers. malloc'd.
char *gm_cpu_model(void);

#endif
