// Command-line flags of the form --key=value or --key value, shared by every program so that
// a bad flag is reported the same way everywhere: "<prog>: error: --flag: <fault>".
#ifndef GM_BASE_ARGS_H
#define GM_BASE_ARGS_H

// Split argv[*i] into key (without the leading "--", hyphens turned into underscores: the flags
// are spelled --val_every, and --val-every means the same) and value; advances *i past what it
// used. A flag given without "=" takes the next argument as its value. A value that begins with
// "--" is refused in either form (it is the next flag, given by mistake), and so is a flag that a
// later argument gives again (in either spelling: --val-every and --val_every are one flag). Dies
// on anything else.
void gm_arg_next(int argc, char **argv, int *i, const char **key, const char **value);
// Parse a whole decimal integer in [lo, hi] / a finite number in [lo, hi] / an unsigned decimal
// 64-bit integer; -1 with gm_fail naming the flag ("--key: ...") when malformed or out of range.
// Decimal only: "010" is ten and "0x3" is refused, whatever strtol's base 0 would do.
int gm_parse_int(const char *key, const char *value, long long lo, long long hi, long long *out);
int gm_parse_double(const char *key, const char *value, double lo, double hi, double *out);
int gm_parse_u64(const char *key, const char *value, unsigned long long *out);
// The same, dying with the message (for programs).
long long gm_arg_int(const char *key, const char *value, long long lo, long long hi);
double gm_arg_double(const char *key, const char *value);

#endif
