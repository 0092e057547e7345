#include "base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[GM_ERROR_LEN];
static const char *program_name = "gptmuon";

int gm_fail(const char *fmt, ...) {
    // Formatted into a separate buffer first: the arguments may point into last_error
    // (gm_fail("%s: %s", path, gm_error()) adds context to the error being reported).
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, sizeof msg);
    return -1;
}

const char *gm_error(void) { return last_error; }

void gm_error_clear(void) { last_error[0] = '\0'; }

void gm_set_program(const char *argv0) {
    const char *slash = strrchr(argv0, '/');
    program_name = slash ? slash + 1 : argv0;
}

// Every message a program prints about itself goes through here, so all carry its name.
static void report(const char *kind, const char *msg) {
    fflush(stdout);  // what was printed before comes first
    fprintf(stderr, "%s: %s: %s\n", program_name, kind, msg);
    fflush(stderr);
}

void gm_report(const char *kind, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    report(kind, msg);
}

_Noreturn static void die_with(const char *msg) {
    report("error", msg);
    exit(1);
}

void gm_die(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    die_with(msg);
}

void gm_die_last(void) { die_with(last_error[0] ? last_error : "unknown failure"); }
