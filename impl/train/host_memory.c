#include "train/host_memory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

// The number after `key` in a "key: N kB" file (/proc/meminfo, /proc/self/status), in bytes; -1.
static double kb_field(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') {
            v = strtod(line + n + 1, NULL) * 1024.0;
            break;
        }
    fclose(f);
    return v;
}

// A file holding one number ("max" or a value far above any machine's memory: no limit); -1.
static double number_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[64] = "";
    char *ok = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!ok || !strncmp(buf, "max", 3)) return -1;
    char *end;
    double v = strtod(buf, &end);
    return end == buf || v >= 0x1p60 ? -1 : v;  // v1 writes 2^63 rounded down to a page for "unlimited"
}

// The cgroup memory limit of this process: the v2 line "0::<path>" or the v1 "N:memory:<path>" of
// /proc/self/cgroup, under /sys/fs/cgroup (and, in a container, the mount's own root).
static double cgroup_limit(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[1024], path[1200];
    double best = -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *p = NULL;
        const char *fmt[2];
        if (!strncmp(line, "0::", 3)) p = line + 3, fmt[0] = "/sys/fs/cgroup%s/memory.max", fmt[1] = "/sys/fs/cgroup/memory.max";
        else if ((p = strstr(line, ":memory:")))
            p += 8, fmt[0] = "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", fmt[1] = "/sys/fs/cgroup/memory/memory.limit_in_bytes";
        else continue;
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, fmt[k], p);
            double v = number_file(path);
            if (v >= 0 && (best < 0 || v < best)) best = v;
            if (v >= 0) break;
        }
    }
    fclose(f);
    return best;
}

gm_host_memory gm_host_memory_limit(void) {
    gm_host_memory m = {INFINITY, "no limit"};
    double avail = kb_field("/proc/meminfo", "MemAvailable");
    if (avail >= 0) m.bytes = avail, snprintf(m.what, sizeof m.what, "the memory available (MemAvailable in /proc/meminfo)");
    double cg = cgroup_limit();
    if (cg >= 0 && cg < m.bytes) m.bytes = cg, snprintf(m.what, sizeof m.what, "the cgroup's memory limit");
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        double mapped = kb_field("/proc/self/status", "VmSize"), left = (double)as.rlim_cur - (mapped > 0 ? mapped : 0);
        if (left < m.bytes)
            m.bytes = left, snprintf(m.what, sizeof m.what, "the virtual memory limit (ulimit -v) less the %.2f GB already mapped",
                                     (mapped > 0 ? mapped : 0) / 1e9);
    }
    return m;
}
