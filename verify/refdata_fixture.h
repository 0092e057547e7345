// The committed PyTorch reference of one preset at test scale (refdata/model/<preset>/, made by
// `make refdata` from build/dump_refmodel's inputs) and our fp32 model set up as it was made.
#ifndef GM_VERIFY_REFDATA_FIXTURE_H
#define GM_VERIFY_REFDATA_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

typedef struct {
    gm_config cfg;
    gm_model m;    // CPU backend, initialised from the recorded seed
    char *meta;    // meta.txt
    int32_t *tok;  // (B*T + 1): inputs [0, N), targets [1, N]
    float *ref;    // ref.bin: loss, logits (N, Vp) before the softcap, every gradient in table order
    int window;    // window_blocks the reference was made with (0: none)
    int N, Vp;
} th_refcase;

// Loads the files; fails the test, naming `make refdata`, when the preset's configuration or its
// parameter init differ from the reference's. `key` = `value` (key NULL: none) is then applied to
// the configuration, so that a test can show what the reference rejects.
void th_ref_open(th_refcase *rc, const char *preset, const char *key, const char *value);
void th_ref_close(th_refcase *rc);
// refdata/model/<preset>/<file>, which must hold exactly n floats (malloc'd).
float *th_ref_floats(const char *preset, const char *file, size_t n);

typedef struct {
    double loss, logits, grad;  // relative errors; grad: the worst tensor's
    const char *worst;          // that tensor's name
} th_referr;
// Forward (and, when grads, backward) at `window` blocks, against ref's loss and logits (and
// gradients: then ref must be a whole ref.bin).
th_referr th_ref_compare(th_refcase *rc, int window, const float *ref, int grads);

#endif
