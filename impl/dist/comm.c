// Back-end selection and the operations built on the primitives.
#include "dist/comm.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

int gm_comm_open_single(gm_comm *c);
int gm_comm_open_mpi(gm_comm *c, int *argc, char ***argv);
int gm_comm_open_nccl(gm_comm *c, int *argc, char ***argv);

int gm_comm_open(gm_comm *c, const char *kind, int *argc, char ***argv, double timeout_s) {
    memset(c, 0, sizeof *c);
    c->timeout_s = timeout_s > 0 ? timeout_s : 300.0;
    if (!strcmp(kind, "auto")) kind = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ? "mpi" : "single";
    if (!strcmp(kind, "single")) return gm_comm_open_single(c);
    if (!strcmp(kind, "mpi")) return gm_comm_open_mpi(c, argc, argv);
    if (!strcmp(kind, "nccl")) return gm_comm_open_nccl(c, argc, argv);
    return gm_fail("--comm: unknown communicator '%s' (single, mpi, nccl, auto)", kind);
}

void gm_comm_close(gm_comm *c) {
    if (c->ops) c->ops->close(c);
    c->ops = NULL;
}

uint64_t gm_hash_bytes(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int gm_comm_check_same(gm_comm *c, const char *what, uint64_t hash) {
    if (c->world == 1) return 0;
    uint64_t *all = malloc((size_t)c->world * sizeof *all);
    size_t *bytes = malloc((size_t)c->world * sizeof *bytes);
    if (!all || !bytes) {
        free(all), free(bytes);
        return gm_fail("comm: out of memory");
    }
    for (int r = 0; r < c->world; r++) bytes[r] = sizeof(uint64_t);
    int rc = gm_allgatherv(c, &hash, all, bytes);
    for (int r = 1; rc == 0 && r < c->world; r++)
        if (all[r] != all[0])
            rc = gm_fail("%s differs between ranks: rank %d has %016llx, rank 0 has %016llx (every rank must get the same preset, flags and data)",
                         what, r, (unsigned long long)all[r], (unsigned long long)all[0]);
    free(all), free(bytes);
    return rc;
}
