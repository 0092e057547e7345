// Command-line flags of the form --key=value or --key value, shared by every program so that
// a bad flag is reported the same way everywhere: "<prog>: error: --flag: <fault>".
#ifndef GM_BASE_ARGS_H
#define GM_BASE_ARGS_H

// Split argv[*i] into key (without the leading "--") and value; advances *i past what it used.
// A flag given without "=" takes the next argument as its value. Dies on anything else.
void gm_arg_next(int argc, char **argv, int *i, const char **key, const char **value);
// Parse a whole integer in [lo, hi] or die naming the flag.
long long gm_arg_int(const char *key, const char *value, long long lo, long long hi);
double gm_arg_double(const char *key, const char *value);

#endif
