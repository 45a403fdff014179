/*
 * gm_npy_header.h - private to the client library: the header of a .npy
 * file, a Python dict literal with exactly the keys 'descr',
 * 'fortran_order' and 'shape' (numpy.lib.format). Only the subset of
 * Python literal syntax that NumPy writes is read; anything else is
 * refused with a message naming it. Pure; any thread.
 */
#ifndef GM_NPY_HEADER_H
#define GM_NPY_HEADER_H

#include <stddef.h>
#include <stdint.h>

#define GM_NPY_MAX_NDIM 32 /* NumPy's own limit */

/* An element type a .npy file may hold: its descr, NumPy's name, size. */
typedef struct gm_npy_type {
	int dtype; /* GM_FP64, GM_FP32 or GM_FP16 */
	const char *descr, *name;
	size_t size;
} gm_npy_type;

/* The type of dtype; NULL when .npy files of it are not read. */
const gm_npy_type *gm_npy_type_of(int dtype);

/* What a header says. */
typedef struct gm_npy_header {
	int dtype;   /* GM_FP64 ('<f8'), GM_FP32 ('<f4'), GM_FP16 ('<f2') */
	int fortran; /* 'fortran_order' */
	int ndim;
	uint64_t dims[GM_NPY_MAX_NDIM]; /* 'shape' */
	uint64_t data_off; /* the reader's: where the array data starts */
} gm_npy_header;

/* Parses the dictionary text (NUL-terminated, padding after it allowed)
 * into h. GM_OK, or GM_ENPY with msg saying what is wrong and where
 * ("header: expected ... at byte 12, found ..."). */
int gm_npy_header_parse(const char *text, gm_npy_header *h, char *msg,
			size_t msglen);

#endif
