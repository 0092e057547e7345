// How a run is asked to stop: the signals that end a run in a terminal or a batch system become
// one flag, read by the training loop at each step boundary and before each validation batch (and
// combined across ranks there), so the run ends after its current step, or abandons its validation,
// with a checkpoint instead of losing what it trained.
//   SIGINT   Ctrl-C
//   SIGTERM  kill, a batch system's end of job, and Open MPI's mpirun when it is interrupted
//            (it sends SIGCONT, waits odls_base_sigkill_timeout seconds, sends SIGTERM, waits as
//            long again, then SIGKILL: README, "Training", for the launch line that leaves time)
//   SIGHUP   the terminal or SSH session closed (unless ignored at start, as `nohup` does)
// A pipe or terminal that the output was going to and that is gone (the reader of `train | tee`
// ended, the terminal hung up) counts as a closed terminal: SIGHUP's stop (not under nohup). SIGPIPE
// is ignored, so that such a write fails (EPIPE) instead of killing the run before its checkpoint.
// SIGXFSZ is ignored, so that a write past the file size limit (ulimit -f) fails with EFBIG,
// reported with the file, instead of killing the process mid-write.
#ifndef GM_TRAIN_SIGNALS_H
#define GM_TRAIN_SIGNALS_H

#include <stddef.h>
#include <stdio.h>

// Install the handlers (once, in main, after MPI_Init: Open MPI installs its own for a few
// signals, none of these).
void gm_signals_install(void);
// The signal that asked the run to stop (SIGINT, ...), 0 when none did.
int gm_stop_signal(void);
// Flush f (the run's stdout); when its reader is gone (EPIPE, or EIO from a hung-up terminal), send
// the rest of f to /dev/null and ask for a stop as SIGHUP would (SIGPIPE is the signal reported),
// unless SIGHUP was ignored at start (nohup: the run goes on without that output) or a stop was
// already asked for.
void gm_output_flush(FILE *f);
// Ask for a stop as signal `sig` would (async-signal-safe); 0 clears the request.
void gm_stop_request(int sig);

// Under Open MPI's mpirun with its default odls_base_sigkill_timeout (1 s: the ranks are killed
// 1 s after the SIGTERM, before a step of more than a second can end and be saved), a one-line
// note with the launch line that gives them time, into buf; "" elsewhere. It reads what mpirun
// passes to its ranks (OMPI_MCA_odls_base_sigkill_timeout, set by --mca or the environment), so
// a value set only in Open MPI's configuration files is not seen.
void gm_signals_launcher_note(char *buf, size_t len);

#endif
