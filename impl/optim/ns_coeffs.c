#include "optim/ns_coeffs.h"

#include <stddef.h>
#include <string.h>

#include "base/error.h"

static const gm_ns_coeffs sets[] = {
    // The speedrun's quintic, the same triple every step, chosen to maximize the slope at 0; the
    // singular values end in a band around 1 rather than at 1. Records 2024-10-10_Muon (#4,
    // train_gpt2.py: X = bf16(G) / (||G|| + 1e-7)) through 2025-01-04_SoftCap (#18: X = bf16(G),
    // then X / (||X|| + 1e-7)), KellerJordan/modded-nanogpt records/track_1_short/.
    {"quintic", "modded-nanogpt records/track_1_short/2024-10-10_Muon and 2025-01-04_SoftCap", 1,
     {{3.4445, -4.7750, 2.0315}}, 1.0, 1e-7},
    // The classical Newton-Schulz cubic X <- 1.5 X - 0.5 A X (Bjorck and Bowie, SIAM J. Numer.
    // Anal. 8, 1971; Higham, "Functions of Matrices", SIAM 2008, ch. 8): converges to 1 for
    // singular values in (0, sqrt(3)), slowly from near 0 (slope 1.5). Normalized like the speedrun.
    {"cubic", "Bjorck and Bowie 1971; Higham, Functions of Matrices (SIAM 2008), ch. 8", 1,
     {{1.5, -0.5, 0.0}}, 1.0, 1e-7},
    // Jiacheng You's per-step set, 5 triples. modded-nanogpt
    // records/track_2_medium/2025-02-14_OptCoeffs (code at the top of its log), normalization
    // X / (||X|| + 1e-7).
    {"you5", "modded-nanogpt records/track_2_medium/2025-02-14_OptCoeffs", 5,
     {{4.0848, -6.8946, 2.9270},
      {3.9505, -6.3029, 2.6377},
      {3.7418, -5.5913, 2.3037},
      {2.8769, -3.1427, 1.2046},
      {2.8366, -3.0525, 1.2012}},
     1.0, 1e-7},
    // Polar Express (Amsel, Persson, Musco, Gower, arXiv:2505.16932) as modded-nanogpt runs it:
    // records/track_1_short/2025-09-29_PolarExpress (code at the top of its logs: 5 iterations,
    // safety factor 2e-2, cushion 2), input X / (||X|| * (1 + 2e-2) + 1e-6). Beyond the fifth
    // iteration the last triple repeats, the paper's convention.
    {"polar-express", "modded-nanogpt records/track_1_short/2025-09-29_PolarExpress; arXiv:2505.16932", 5,
     {{8.156554524902461, -22.48329292557795, 15.878769915207462},
      {4.042929935166739, -2.808917465908714, 0.5000178451051316},
      {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
      {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
      {2.3465413258596377, -1.7097828382687081, 0.42323551169305323}},
     1.02, 1e-6},
};

int gm_ns_coeffs_count(void) { return (int)(sizeof sets / sizeof sets[0]); }

const gm_ns_coeffs *gm_ns_coeffs_at(int i) { return i >= 0 && i < gm_ns_coeffs_count() ? &sets[i] : NULL; }

const gm_ns_coeffs *gm_ns_coeffs_find(const char *name) {
    for (int i = 0; i < gm_ns_coeffs_count(); i++)
        if (strcmp(sets[i].name, name) == 0) return &sets[i];
    gm_fail("newton-schulz: unknown coefficient set '%s' (known: quintic, cubic, you5, polar-express)", name);
    return NULL;
}

double gm_ns_scalar_map(const gm_ns_coeffs *set, int steps, double x) {
    for (int k = 0; k < steps; k++) {
        const double *t = gm_ns_triple(set, k);
        double x2 = x * x;
        x = x * (t[0] + x2 * (t[1] + x2 * t[2]));
    }
    return x;
}
