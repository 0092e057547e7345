// cuDNN's attention plans without a GPU, for verify/test_cudnn_graph.c and the GPU report:
//   cudnn_plan DEVICE_JSON fwd|bwd B T NH HD   build the plan for the GPU the JSON describes:
//                                              "plan: engine E, workspace N bytes" (exit 0) or
//                                              "no plan: WHY" (exit 1)
//   cudnn_plan --device-json                   cuDNN's JSON of GPU 0 (needs the GPU), for the above
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/attention.h"
#include "base/error.h"
#include "base/io.h"

int main(int argc, char **argv) {
    gm_set_program(argv[0]);
    char why[2048] = "";
    if (argc == 2 && !strcmp(argv[1], "--device-json")) {
        static char json[16384];
        if (gm_cuda_cudnn_device_json(0, json, sizeof json, why, sizeof why)) gm_die("%s", why);
        printf("%s\n", json);
        return 0;
    }
    if (argc != 7 || (strcmp(argv[2], "fwd") && strcmp(argv[2], "bwd")))
        gm_die("usage: cudnn_plan DEVICE_JSON fwd|bwd B T NH HD | cudnn_plan --device-json");
    size_t n = 0;
    char *json = NULL;
    if (gm_read_all(argv[1], &json, &n)) gm_die_last();
    int64_t ws = 0, engine = -1;
    const int rc = gm_cuda_attn_cudnn_plan_offline(!strcmp(argv[2], "bwd"), atoi(argv[3]), atoi(argv[4]),
                                                   atoi(argv[5]), atoi(argv[6]), json, &ws, &engine, why, sizeof why);
    if (rc) printf("no plan: %s\n", why);
    else printf("plan: engine %lld, workspace %lld bytes\n", (long long)engine, (long long)ws);
    free(json);
    return rc ? 1 : 0;
}
