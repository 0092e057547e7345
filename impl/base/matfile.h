// A small file format for one matrix (e.g. a gradient dumped by the trainer, for the NS-vs-SVD
// harness under refdata/matrices/). Little-endian:
//   bytes  0..7    magic "GMMATRIX"
//          8..11   uint32 version = 1
//         12..15   uint32 dtype   = 1 (float32; the only one so far)
//         16..19   uint32 rows >= 1
//         20..23   uint32 cols >= 1
//         24..127  name: what the matrix is (NUL-padded UTF-8, at most 103 bytes + NUL)
//        128..     rows * cols float32, row-major; nothing after.
#ifndef GM_BASE_MATFILE_H
#define GM_BASE_MATFILE_H

#define GM_MATFILE_HEADER 128
#define GM_MATFILE_NAME_MAX 104

typedef struct {
    int rows, cols;
    char name[GM_MATFILE_NAME_MAX];
    float *data;  // (rows, cols), malloc'd
} gm_matrix;

// Written atomically. The name must fit (at most 103 bytes).
int gm_matfile_write(const char *path, const char *name, const float *data, int rows, int cols);
// Every fault (missing file, bad magic/version/dtype, zero shape, size not matching the shape,
// unterminated name, non-finite entry) fails with the path and the fault.
int gm_matfile_read(const char *path, gm_matrix *m);
void gm_matrix_free(gm_matrix *m);

#endif
