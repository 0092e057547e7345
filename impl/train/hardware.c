#include "train/hardware.h"

#include <ctype.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int openblas_get_num_threads(void);  // OpenBLAS extension (cblas.h declares it too)

static void cpu_model(char *out, size_t n) {
    snprintf(out, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *v = strchr(line, ':');
            if (v) {
                v++;
                while (*v == ' ') v++;
                v[strcspn(v, "\n")] = '\0';
                snprintf(out, n, "%s", v);
            }
            break;
        }
    fclose(f);
}

// nvidia-smi's CSV line per GPU, as a JSON array of strings; "[]" when there is none.
static void gpus(char *out, size_t n) {
    snprintf(out, n, "[]");
    FILE *p = popen("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null", "r");
    if (!p) return;
    char line[512];
    size_t at = 0;
    int k = 0;
    at += (size_t)snprintf(out + at, n - at, "[");
    while (fgets(line, sizeof line, p) && at + 8 < n) {
        line[strcspn(line, "\n")] = '\0';
        for (char *q = line; *q; q++)
            if (*q == '"' || *q == '\\') *q = '\'';
        at += (size_t)snprintf(out + at, n - at, "%s\"%s\"", k++ ? "," : "", line);
    }
    snprintf(out + at, n - at, "]");
    pclose(p);
}

char *gm_hardware_json(void) {
    char cpu[256], gpu[2048];
    cpu_model(cpu, sizeof cpu);
    gpus(gpu, sizeof gpu);
    char *out = malloc(3000);
    if (!out) abort();
    snprintf(out, 3000, "{\"cpu\":\"%s\",\"cpu_threads\":%ld,\"omp_threads\":%d,\"openblas_threads\":%d,\"gpus\":%s}", cpu,
             sysconf(_SC_NPROCESSORS_ONLN), omp_get_max_threads(), openblas_get_num_threads(), gpu);
    return out;
}

char *gm_cpu_model(void) {
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    char *out = strdup(cpu);
    if (!out) abort();
    return out;
}

// Appends text[0..len) to out (n used, at most `cap` in all) as a slug: letters and digits lower
// case, every run of other characters one '-' (none leading). Returns the new n.
static size_t slug_append(char *out, size_t n, size_t cap, const char *text, size_t len) {
    for (size_t i = 0; i < len && n < cap; i++) {
        const unsigned char c = (unsigned char)text[i];
        if (isalnum(c)) out[n++] = (char)tolower(c);
        else if (n && out[n - 1] != '-') out[n++] = '-';
    }
    return n;
}

char *gm_hardware_slug(void) {
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    char *at = strchr(cpu, '@');  // "... CPU @ 2.40GHz": the clock is not part of the name
    if (at) *at = '\0';
    char *out = malloc(300);
    if (!out) abort();
    size_t n = 0;
    for (char *w = strtok(cpu, " \t"); w; w = strtok(NULL, " \t")) {
        if (!strcmp(w, "CPU") || !strcmp(w, "Processor") || strstr(w, "-Core")) continue;
        n = slug_append(out, n, 240, w, strlen(w));
        if (n && out[n - 1] != '-') out[n++] = '-';
    }
    snprintf(out + n, 300 - n, "%ldt", sysconf(_SC_NPROCESSORS_ONLN));
    return out;
}

char *gm_device_slug(const char *device) {
    char *out = malloc(strlen(device) + 1);
    if (!out) abort();
    size_t n = slug_append(out, 0, strlen(device), device, strcspn(device, "("));
    while (n && out[n - 1] == '-') n--;
    out[n] = '\0';
    return out;
}

double gm_load_average(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}
