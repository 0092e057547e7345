// A double as the shortest text that reads back as the same double, for messages and logged
// configurations: "0.05", not %.17g's "0.050000000000000003", and not %g's six digits, which can
// print a flag value out of range by 1e-7 as its bound.
#ifndef GM_BASE_FMT_DOUBLE_H
#define GM_BASE_FMT_DOUBLE_H

enum { GM_FMT_DOUBLE_LEN = 32 };  // "-2.2250738585072014e-308" and its NUL, with room

// v with the fewest significant digits (%.1g, %.2g, ... %.17g, the first that strtod reads back
// as v); a whole number below 1e15 that %g would write with an exponent is written whole ("300").
// Returns buf, for use as a printf argument.
const char *gm_fmt_double(double v, char buf[GM_FMT_DOUBLE_LEN]);

#endif
