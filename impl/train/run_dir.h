// A run's output folder (out_dir), made ready on rank 0 before anything is written to it:
// a run must not replace another run's log and checkpoint by accident, two processes must never
// write one folder, and a run must not be lost at its end to a full disk or a folder it cannot
// write. In order:
//   - the folder is made (with its missing parents) and locked (flock) for the whole run; a file
//     system without locks (some network mounts) runs unlocked;
//   - a folder that holds a run is refused unless --resume names its own checkpoint (the log is
//     continued) or --overwrite=1 replaces it; the refusal says what the folder holds and what
//     can be done with it (a finished run is not resumed: more --steps are another run). A log
//     with no trained step (a run refused at its first step, e.g. out of memory) and no
//     checkpoint is not a run: it is replaced, so that the retry is not blocked;
//   - ckpt.bin.tmp.* files that a cut-short checkpoint write left behind are removed;
//   - the checkpoints (two copies when the run writes several: each is written beside the one it
//     replaces) and the log must fit the free space and the file size limit (ulimit -f), and the
//     folder must take new files.
#ifndef GM_TRAIN_RUN_DIR_H
#define GM_TRAIN_RUN_DIR_H

#include <stddef.h>

#include "train/run_config.h"

typedef struct {
    const char *path;  // rc->out_dir
    int fd;            // the folder, locked where the file system can; -1 when not open
    size_t created;    // folders gm_mkdir_p created for this run (removed again by gm_run_dir_abandon)
    int continues;     // --resume names this folder's own checkpoint: the log is appended to
} gm_run_dir;

// Make rc->out_dir ready for rc, whose checkpoint file is ckpt_bytes long; -1 with gm_fail
// ("--out_dir: <dir>: ...") when it cannot be used. verbose: say when stale temporaries or a log
// without a trained step are removed.
int gm_run_dir_open(gm_run_dir *d, const gm_run_config *rc, size_t ckpt_bytes, int verbose);
// An out_dir that is the folder of the shard data_file (of --<flag>) would put logs and
// checkpoints among the shards (where a pattern like 'data/gcide/*' matches them), and one that
// holds that folder would put the data inside a run (deleting the run deletes it): -1 with gm_fail
// ("--out_dir: <dir>: ..."). Folders are compared as files, so a link or a bind mount of the data
// folder is the data folder. A run in a subfolder of the data folder is apart from the shards: no
// shard pattern reaches into it, and make_data refuses to replace a folder that holds other files.
int gm_run_dir_check_apart(const char *out_dir, const char *flag, const char *data_file);
// Release the lock (d->fd -1: nothing to do).
void gm_run_dir_close(gm_run_dir *d);
// After a refusal: remove the folders this run created if nothing was put in them.
void gm_run_dir_abandon(gm_run_dir *d);

#endif
