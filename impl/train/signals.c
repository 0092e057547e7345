#include "train/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

static volatile sig_atomic_t stop_signal;
static int hangup_ignored;  // SIGHUP was ignored at start (nohup): the run outlives its terminal

static void on_stop(int sig) { stop_signal = sig; }

void gm_signals_install(void) {
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    // SA_RESTART: a signal that arrives during a read or write of the data, the log or a
    // checkpoint does not make it fail with EINTR; the flag is read at the next step boundary.
    sa.sa_flags = SA_RESTART;
    // `nohup train ...` asks the run to outlive its terminal: its ignored SIGHUP stays ignored.
    struct sigaction was;
    hangup_ignored = sigaction(SIGHUP, NULL, &was) == 0 && was.sa_handler == SIG_IGN;
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        if (stops[i] != SIGHUP || !hangup_ignored) sigaction(stops[i], &sa, NULL);
    signal(SIGXFSZ, SIG_IGN);
    // Ctrl-C of `train | tee` ends tee too: the run's next write to the pipe would raise SIGPIPE and
    // kill it before its checkpoint. Ignored, that write fails with EPIPE instead (gm_output_flush).
    signal(SIGPIPE, SIG_IGN);
}

void gm_output_flush(FILE *f) {
    if (fflush(f) == 0 || (errno != EPIPE && errno != EIO)) return;
    // The reader is gone: what follows is written to /dev/null, so no later write fails or blocks.
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, fileno(f)), close(null);
    clearerr(f);
    const char *what = f == stdout ? "standard output" : "the output";
    if (hangup_ignored) {
        gm_report("note", "%s is gone (a closed pipe or terminal); under nohup the run goes on without it", what);
    } else if (!stop_signal) {  // a stop asked for already (Ctrl-C also ends the reader) says nothing new
        gm_report("note", "%s is gone (a closed pipe or terminal): the run stops after this step with a checkpoint", what);
        stop_signal = SIGPIPE;
    }
}

int gm_stop_signal(void) { return stop_signal; }

void gm_stop_request(int sig) { stop_signal = sig; }

void gm_signals_launcher_note(char *buf, size_t len) {
    buf[0] = '\0';
    if (!getenv("OMPI_COMM_WORLD_SIZE") || getenv("OMPI_MCA_odls_base_sigkill_timeout")) return;
    snprintf(buf, len,
             "train: note: Ctrl-C of this mpirun kills the ranks 1 s after it signals them, too soon to save a checkpoint; "
             "launch with `mpirun --mca odls_base_sigkill_timeout 60 ...` (README, \"Training\") to stop with one\n");
}
