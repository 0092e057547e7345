// Checkpoint container: named sections (config text, parameters, optimizer states, data position,
// step, RNG), each with its size and an FNV-1a hash, written atomically. Reading validates the
// magic, version, every section's bounds and hash, so a truncated or corrupted file is refused
// with one line naming the file and the fault, before anything is restored.
// Layout (little-endian): "GMCKPT\0\1" | u32 version | u32 nsections | u64 file bytes |
//   per section: char name[48] | u64 bytes | u64 hash | bytes of data, padded to 8.
#ifndef GM_TRAIN_CHECKPOINT_H
#define GM_TRAIN_CHECKPOINT_H

#include <stddef.h>

#define GM_CKPT_NAME_LEN 48

typedef struct {
    const char *name;
    const void *data;
    size_t bytes;
} gm_ckpt_section;

int gm_ckpt_write(const char *path, const gm_ckpt_section *sections, int n);
// The size of the file gm_ckpt_write writes for these sections (their data is not read), so a run
// can check at start that its checkpoints will fit.
size_t gm_ckpt_file_bytes(const gm_ckpt_section *sections, int n);

typedef struct {
    char path[4096];
    char *blob;  // the whole file
    size_t len;
    gm_ckpt_section *sections;
    int n;
} gm_ckpt;

int gm_ckpt_read(gm_ckpt *c, const char *path);
void gm_ckpt_close(gm_ckpt *c);
// The data of section `name`, which must hold exactly `bytes` (fails naming file and section).
const void *gm_ckpt_get(const gm_ckpt *c, const char *name, size_t bytes);
// Same without a size requirement; *bytes receives the size.
const void *gm_ckpt_get_any(const gm_ckpt *c, const char *name, size_t *bytes);
// Same for a section that may be absent (a checkpoint of an older build): NULL without a message.
const void *gm_ckpt_find(const gm_ckpt *c, const char *name, size_t *bytes);

#endif
