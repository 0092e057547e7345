#include "train/signals.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop_signal;

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
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction was;
        // `nohup train ...` asks the run to outlive its terminal: its ignored SIGHUP stays ignored.
        if (stops[i] == SIGHUP && sigaction(SIGHUP, NULL, &was) == 0 && was.sa_handler == SIG_IGN) continue;
        sigaction(stops[i], &sa, NULL);
    }
    signal(SIGXFSZ, SIG_IGN);
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
