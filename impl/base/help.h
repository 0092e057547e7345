// --help: every program answers it (exit 0, its usage on stdout, each flag with its default).
#ifndef GM_BASE_HELP_H
#define GM_BASE_HELP_H

// 1 when --help or -h is among the arguments (checked before any flag is parsed, so that a
// usage question is never answered with a flag error).
int gm_help_requested(int argc, char **argv);

#endif
