#include "base/fmt_double.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gm_fmt_double(double v, char buf[GM_FMT_DOUBLE_LEN]) {
    if (!isfinite(v)) {
        snprintf(buf, GM_FMT_DOUBLE_LEN, "%g", v);
        return buf;
    }
    // 17 significant digits always read back (IEEE double), so the loop ends with a match.
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, GM_FMT_DOUBLE_LEN, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (strchr(buf, 'e') && v == trunc(v) && fabs(v) < 1e15) snprintf(buf, GM_FMT_DOUBLE_LEN, "%.0f", v);
    return buf;
}
