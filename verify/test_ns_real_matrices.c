// NS on real gradient matrices: every refdata/matrices/*.bin (base/matfile.h format) is held to
// the band the quintic's scalar map predicts from its SVD, as the Gaussian inputs are. The matrices
// are gradients and Muon momenta dumped by the trainer (refdata/matrices/README.md says how); a
// missing or empty folder is a failure.
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/matfile.h"
#include "helpers.h"
#include "ortho_fixtures.h"

Test(ns_real_matrices, every_dumped_gradient_follows_the_band) {
    const char *dirpath = th_root_path("refdata/matrices");
    char dirbuf[4200];
    snprintf(dirbuf, sizeof dirbuf, "%s", dirpath);
    DIR *d = opendir(dirbuf);
    cr_assert_not_null(d, "%s does not exist: the committed gradient dumps are missing", dirbuf);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".bin") != 0) continue;
        char path[4500];
        snprintf(path, sizeof path, "%s/%s", dirbuf, e->d_name);
        gm_matrix m;
        cr_assert_eq(gm_matfile_read(path, &m), 0, "%s", gm_error());
        char label[4700];
        snprintf(label, sizeof label, "%s (%s, %dx%d)", path, m.name, m.rows, m.cols);
        th_check_quintic_band_f32(m.data, m.rows, m.cols, label);
        gm_matrix_free(&m);
        count++;
    }
    closedir(d);
    cr_assert_gt(count, 0, "%s holds no *.bin matrices", dirbuf);
}
