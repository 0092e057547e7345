// Error reporting for the whole library.
// Library code never exits: it records one line (what failed, and where: a file, a flag, a
// tensor name) with gm_fail() and returns -1 (or NULL). Programs print that line with gm_die().
#ifndef GM_BASE_ERROR_H
#define GM_BASE_ERROR_H

#include <stdarg.h>

#ifdef __cplusplus
#define GM_NORETURN [[noreturn]]
extern "C" {
#else
#define GM_NORETURN _Noreturn
#ifdef __cplusplus
}
#endif
#endif

// The longest message kept (with its NUL): a longer one is cut.
enum { GM_ERROR_LEN = 1024 };

// Record the message of the current failure (printf-style) and return -1, so a caller can write
// `return gm_fail("%s: bad magic %d", path, magic);`.
int gm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// The last message recorded by gm_fail in this thread ("" when none).
const char *gm_error(void);
// Forget it, so that a message seen after some calls was recorded by them.
void gm_error_clear(void);
// Print "<prog>: error: <message>" on one line to stderr and exit(1).
GM_NORETURN void gm_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Print "<prog>: <kind>: <message>" on one line to stderr (kind: "error", "warning", "note"),
// without exiting: for a warning, or an error whose caller must end the process otherwise (the
// MPI watchdog's _exit from its thread).
void gm_report(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Same as gm_die, with the message recorded by the last gm_fail().
GM_NORETURN void gm_die_last(void);
// Name used in gm_die's prefix (argv[0]'s basename); set once by main.
void gm_set_program(const char *argv0);

#ifdef __cplusplus
}
#endif
#endif
