/*
 * gm_npy.h - host matrices for the client: .npy files and dtype packing.
 *
 * gemmctl reads its operands from NumPy .npy files and writes the result
 * to one, and converts between what a file holds (float64 or float32,
 * C or Fortran order) and what a job sends (any wire dtype, the job's
 * layout). Only what GEMM needs is supported: 2-D arrays of
 * little-endian float64, float32 or float16, format versions 1.0, 2.0
 * and 3.0. A reader validates the whole header and the file size before
 * it allocates anything; a stream (a pipe) is read front to back. A failure
 * returns GM_ENPY (a bad or unsupported file), GM_EIO (the system said no;
 * strerror kept) or GM_ENOMEM, and writes a message that starts with the path.
 * All functions are reentrant and may be called from any thread.
 */
#ifndef GM_NPY_H
#define GM_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Largest header accepted, as NumPy's own reader (max_header_size):
 * a 2-D float array needs about 80 bytes; more means a hostile file. */
#define GM_NPY_MAX_HEADER 10000

/* A dense 2-D matrix in host memory. */
typedef struct gm_npy {
	int dtype;	     /* GM_FP64, GM_FP32 or GM_FP16 */
	int fortran;	     /* 0: C order (row-major), 1: column-major */
	uint64_t rows, cols; /* shape (rows, cols) */
	void *data;	     /* rows * cols elements; owned, gm_npy_free */
} gm_npy;

/* Reads the .npy file at path into m (m->data malloc'd). On failure m is
 * zeroed and msg says what is wrong, e.g. "A.npy: dtype '<i4'
 * unsupported: only little-endian float64 ('<f8'), ...". Blocks on file
 * I/O. */
int gm_npy_read(const char *path, gm_npy *m, char *msg, size_t msglen);

/* As gm_npy_read, from f (left open) from its current position, named
 * name in messages. A regular file is checked as gm_npy_read checks it;
 * another input (a pipe: stdin) is read up to the end of the array its
 * header announces, and a byte after it is refused (GM_ENPY). Blocks. */
int gm_npy_fread(FILE *f, const char *name, gm_npy *m, char *msg,
		 size_t msglen);

/* An input whose header has been read and checked (with the size of a
 * regular file), its data not yet: so that the data can be read straight
 * to where it is used, once it is known where that is. */
typedef struct gm_npy_in {
	gm_npy m;	/* dtype, order and shape; m.data NULL */
	uint64_t bytes; /* of the data, rows * cols elements */
	FILE *f;	/* at the data */
	const char *name;
	int stream; /* a pipe: checked only as it is read */
} gm_npy_in;

/* Opens the .npy file at path and reads its header into in, checked as
 * gm_npy_read checks it, allocating nothing; on failure in is zeroed and
 * msg says why, as gm_npy_read's would. The file is unbuffered, so the
 * data is read by gm_npy_read_data through no buffer. Blocks. */
int gm_npy_open(const char *path, gm_npy_in *in, char *msg, size_t msglen);

/* Reads in's data, in->bytes, into dst (the caller's, that large), with
 * one read for a regular file. A stream must end with it, as in
 * gm_npy_fread. GM_OK, GM_EIO or GM_ENPY with msg. Blocks. */
int gm_npy_read_data(gm_npy_in *in, void *dst, char *msg, size_t msglen);

/* Closes in's file and zeroes in; in may be zeroed already. */
void gm_npy_close(gm_npy_in *in);

/* Writes m to path as a version 1.0 .npy file, header padded to a
 * multiple of 64 bytes. A partly written file is removed. Blocks. */
int gm_npy_write(const char *path, const gm_npy *m, char *msg, size_t msglen);

/* As gm_npy_write, to f (left open; flushed), named name in messages.
 * A failed write leaves what was written. Blocks. */
int gm_npy_fwrite(FILE *f, const char *name, const gm_npy *m, char *msg,
		  size_t msglen);

/* Frees m->data and zeroes m. m may be zeroed already. */
void gm_npy_free(gm_npy *m);

/* Rewrites m in place into C order (fortran 0) or Fortran order (1);
 * nothing to do when it is already there. GM_ENOMEM leaves m as it was.
 */
int gm_npy_reorder(gm_npy *m, int fortran);

/* Converts m's elements, in m's order, to wire dtype (enum gm_dtype):
 * fp64 exactly or by widening, fp32 and tf32 (fp32 data) by rounding to
 * nearest even, fp16 and bf16 by rounding each value straight from its
 * stored precision to nearest even (no double rounding through fp32).
 * *out is malloc'd; the caller frees it. GM_EDTYPE, GM_EOVERFLOW or
 * GM_ENOMEM. */
int gm_npy_pack(const gm_npy *m, int dtype, void **out);

/* As gm_npy_pack, into dst (the caller's, with room for rows * cols
 * elements of dtype). GM_EDTYPE or GM_EOVERFLOW. */
int gm_npy_pack_to(const gm_npy *m, int dtype, void *dst);

/* Makes m (malloc'd) from rows * cols elements of wire dtype at buf in
 * the given order: float64 for fp64, float32 (exact) for every other
 * dtype. GM_EDTYPE, GM_EOVERFLOW or GM_ENOMEM. */
int gm_npy_unpack(const void *buf, int dtype, uint64_t rows, uint64_t cols,
		  int fortran, gm_npy *m);

/* Element i of a buffer of wire dtype, as a double (exact for every
 * dtype). The caller keeps i in bounds and dtype valid. */
double gm_npy_wire_get(const void *buf, int dtype, uint64_t i);

/* IEEE binary16 and bfloat16 bit patterns: rounded to nearest even from
 * a double, overflow to infinity, NaN kept (quiet); and back, exactly. */
uint16_t gm_npy_to_fp16(double x);
uint16_t gm_npy_to_bf16(double x);
float gm_npy_from_fp16(uint16_t h);
float gm_npy_from_bf16(uint16_t h);

#endif
