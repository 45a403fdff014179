/*
 * gm_npy.c - .npy reading and writing, order changes and dtype packing.
 *
 * The .npy format (numpy.lib.format) is a 6-byte magic "\x93NUMPY", a
 * major and minor version byte, the header length (2 bytes little-endian
 * in 1.0, 4 bytes in 2.0 and 3.0), a header holding a Python dict
 * literal with exactly the keys 'descr', 'fortran_order' and 'shape',
 * then the raw array data to the end of the file. The reader checks the
 * prefix, has the dictionary parsed (gm_npy_header.c), and compares the
 * size the header implies with the size of the file before allocating
 * the data. A stream (a pipe) has no size to compare: it is read front
 * to back, and a byte after the data the header announces is refused
 * instead.
 */
#include "gm_npy.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gm_npy_header.h"
#include "gm_proto.h"

/* '<' data is used in place, and the wire format is little-endian too. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "little-endian hosts only");

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* Where a failure message goes, and the path it starts with; stream:
 * the input is a pipe, read without knowing its size. */
struct err {
	const char *path;
	char *msg;
	size_t msglen;
	bool stream;
};

/* The size of a stream, where a file's would be. */
#define UNKNOWN_SIZE UINT64_MAX

__attribute__((format(printf, 3, 4))) static int
fail(const struct err *e, int code, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (e->msg == NULL || e->msglen == 0)
		return code;
	n = snprintf(e->msg, e->msglen, "%s: ", e->path);
	if (n < 0 || (size_t)n >= e->msglen)
		return code;
	va_start(ap, fmt);
	vsnprintf(e->msg + n, e->msglen - (size_t)n, fmt, ap);
	va_end(ap);
	return code;
}

/* malloc that treats an empty matrix as a valid one. */
static void *alloc_bytes(uint64_t n)
{
	return n > SIZE_MAX ? NULL : malloc(n != 0 ? (size_t)n : 1);
}

static size_t npy_elem_size(int dtype)
{
	const gm_npy_type *t = gm_npy_type_of(dtype);

	return t != NULL ? t->size : 0;
}

/* ---- reading ---- */

/* Checks magic, version and header length against the file size; sets
 * h->data_off and *hlen. p holds the first min(size, 12) bytes. */
static int parse_prefix(const struct err *e, const uint8_t *p, uint64_t size,
			uint32_t *hlen, gm_npy_header *h)
{
	uint64_t pre;

	if (size < 10)
		return fail(e, GM_ENPY,
			    "file is %" PRIu64
			    " bytes, too short for a .npy file",
			    size);
	if (memcmp(p, magic, sizeof(magic)) != 0)
		return fail(e, GM_ENPY,
			    "not a .npy file (no \\x93NUMPY magic)");
	if (p[6] < 1 || p[6] > 3 || p[7] != 0)
		return fail(
		    e, GM_ENPY,
		    "format version %u.%u unsupported: only 1.0, 2.0 and "
		    "3.0",
		    p[6], p[7]);
	if (p[6] == 1) {
		pre = 10;
		*hlen = (uint32_t)p[8] | (uint32_t)p[9] << 8;
	} else {
		pre = 12;
		if (size < pre)
			return fail(e, GM_ENPY,
				    "file is %" PRIu64
				    " bytes, too short for a "
				    "version %u.0 prefix",
				    size, p[6]);
		*hlen = (uint32_t)p[8] | (uint32_t)p[9] << 8 |
			(uint32_t)p[10] << 16 | (uint32_t)p[11] << 24;
	}
	if (*hlen == 0 || *hlen > GM_NPY_MAX_HEADER)
		return fail(e, GM_ENPY,
			    "header length %" PRIu32 " not in 1..%d", *hlen,
			    GM_NPY_MAX_HEADER);
	if (pre + *hlen > size)
		return fail(e, GM_ENPY,
			    "header length %" PRIu32
			    " runs past the end of the "
			    "file (%" PRIu64 " bytes)",
			    *hlen, size);
	h->data_off = pre + *hlen;
	return GM_OK;
}

/* Shape, then data size against the file's size. */
static int check_shape(const struct err *e, const gm_npy_header *h,
		       uint64_t size, uint64_t *bytes)
{
	uint64_t es = npy_elem_size(h->dtype);

	if (h->ndim != 2)
		return fail(e, GM_ENPY,
			    "array is %d-D: only 2-D matrices are supported "
			    "(reshape to (rows, cols))",
			    h->ndim);
	if (__builtin_mul_overflow(h->dims[0], h->dims[1], bytes) ||
	    __builtin_mul_overflow(*bytes, es, bytes) ||
	    *bytes > UINT64_MAX - h->data_off)
		return fail(e, GM_ENPY,
			    "shape (%" PRIu64 ", %" PRIu64
			    ") overflows 64 bits",
			    h->dims[0], h->dims[1]);
	if (size != UNKNOWN_SIZE && h->data_off + *bytes != size)
		return fail(e, GM_ENPY,
			    "file is %" PRIu64 " bytes, header says %" PRIu64
			    " (%" PRIu64 "-byte prefix + %" PRIu64 "x%" PRIu64
			    " %s)",
			    size, h->data_off + *bytes, h->data_off, h->dims[0],
			    h->dims[1], gm_npy_type_of(h->dtype)->name);
	return GM_OK;
}

static int read_exact(const struct err *e, FILE *f, void *buf, size_t n)
{
	if (fread(buf, 1, n, f) == n)
		return GM_OK;
	if (ferror(f))
		return fail(e, GM_EIO, "read: %s", strerror(errno));
	if (e->stream)
		return fail(e, GM_ENPY, "input ends before the array does");
	return fail(e, GM_EIO, "file shrank while being read");
}

/* Everything before the data: prefix and header, checked; read front to
 * back, never seeking, so that a pipe reads as a file does. */
static int read_header(const struct err *e, FILE *f, uint64_t size,
		       gm_npy_header *h)
{
	char text[GM_NPY_MAX_HEADER + 1];
	uint8_t pre[12] = {0};
	char why[256];
	uint32_t hlen = 0;
	int rv;

	/* 10 bytes, and 2 more for the 4-byte length of versions 2 and 3. */
	if (size >= 10 && (rv = read_exact(e, f, pre, 10)) != 0)
		return rv;
	if (size >= 12 && (pre[6] == 2 || pre[6] == 3) &&
	    (rv = read_exact(e, f, pre + 10, 2)) != 0)
		return rv;
	if ((rv = parse_prefix(e, pre, size, &hlen, h)) != 0)
		return rv;
	if ((rv = read_exact(e, f, text, hlen)) != 0)
		return rv;
	text[hlen] = '\0';
	if (strlen(text) != hlen)
		return fail(e, GM_ENPY, "header holds a NUL byte");
	if ((rv = gm_npy_header_parse(text, h, why, sizeof(why))) != 0)
		return fail(e, rv, "%s", why);
	return GM_OK;
}

/* The bytes left in f when it is a regular file; UNKNOWN_SIZE for a
 * stream, with e->stream set. */
static int input_size(struct err *e, FILE *f, uint64_t *size)
{
	struct stat st;
	off_t at;

	if (fstat(fileno(f), &st) != 0)
		return fail(e, GM_EIO, "%s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return fail(e, GM_EIO, "a directory, not a regular file");
	e->stream = !S_ISREG(st.st_mode);
	if (e->stream) {
		*size = UNKNOWN_SIZE;
		return GM_OK;
	}
	at = ftello(f);
	*size = (uint64_t)st.st_size - (at > 0 ? (uint64_t)at : 0);
	return GM_OK;
}

/* Checks f up to its data: size, header, shape; fills in (data NULL). */
static int open_data(struct err *e, FILE *f, gm_npy_in *in)
{
	gm_npy_header h = {0};
	uint64_t size = 0;
	int rv;

	if ((rv = input_size(e, f, &size)) != 0 ||
	    (rv = read_header(e, f, size, &h)) != 0 ||
	    (rv = check_shape(e, &h, size, &in->bytes)) != 0)
		return rv;
	in->f = f;
	in->name = e->path;
	in->stream = e->stream;
	in->m.dtype = h.dtype;
	in->m.fortran = h.fortran;
	in->m.rows = h.dims[0];
	in->m.cols = h.dims[1];
	return GM_OK;
}

/* The data of in into dst; a stream must end with it. */
static int read_data(const struct err *e, gm_npy_in *in, void *dst)
{
	int rv;

	if ((rv = read_exact(e, in->f, dst, (size_t)in->bytes)) != 0)
		return rv;
	if (e->stream && fgetc(in->f) != EOF)
		return fail(e, GM_ENPY,
			    "bytes after the %" PRIu64 "x%" PRIu64 " %s array",
			    in->m.rows, in->m.cols,
			    gm_npy_type_of(in->m.dtype)->name);
	return GM_OK;
}

static int read_file(struct err *e, FILE *f, gm_npy *m)
{
	gm_npy_in in = {0};
	int rv;

	if ((rv = open_data(e, f, &in)) != 0)
		return rv;
	if ((m->data = alloc_bytes(in.bytes)) == NULL)
		return fail(e, GM_ENOMEM, "%" PRIu64 " bytes: out of memory",
			    in.bytes);
	if ((rv = read_data(e, &in, m->data)) != 0)
		return rv;
	in.m.data = m->data;
	*m = in.m;
	return GM_OK;
}

int gm_npy_fread(FILE *f, const char *name, gm_npy *m, char *msg, size_t msglen)
{
	struct err e = {name, msg, msglen, false};
	int rv;

	memset(m, 0, sizeof(*m));
	if ((rv = read_file(&e, f, m)) != 0)
		gm_npy_free(m);
	return rv;
}

int gm_npy_read(const char *path, gm_npy *m, char *msg, size_t msglen)
{
	struct err e = {path, msg, msglen, false};
	FILE *f;
	int rv;

	memset(m, 0, sizeof(*m));
	if ((f = fopen(path, "rb")) == NULL)
		return fail(&e, GM_EIO, "%s", strerror(errno));
	rv = gm_npy_fread(f, path, m, msg, msglen);
	fclose(f);
	return rv;
}

int gm_npy_open(const char *path, gm_npy_in *in, char *msg, size_t msglen)
{
	struct err e = {path, msg, msglen, false};
	FILE *f;
	int rv;

	memset(in, 0, sizeof(*in));
	if ((f = fopen(path, "rb")) == NULL)
		return fail(&e, GM_EIO, "%s", strerror(errno));
	/* Unbuffered: the header takes a few small reads, and the data then
	 * goes from the file to its place in one read, through no buffer. */
	setvbuf(f, NULL, _IONBF, 0);
	if ((rv = open_data(&e, f, in)) != 0) {
		fclose(f);
		memset(in, 0, sizeof(*in));
	}
	return rv;
}

int gm_npy_read_data(gm_npy_in *in, void *dst, char *msg, size_t msglen)
{
	struct err e = {in->name, msg, msglen, in->stream != 0};

	return read_data(&e, in, dst);
}

void gm_npy_close(gm_npy_in *in)
{
	if (in->f != NULL)
		fclose(in->f);
	memset(in, 0, sizeof(*in));
}

void gm_npy_free(gm_npy *m)
{
	free(m->data);
	memset(m, 0, sizeof(*m));
}

/* ---- writing ---- */

/* The prefix and header of m: 10 bytes, the dict, spaces, '\n', so that
 * the data starts at a multiple of 64 as the format asks (it keeps the
 * data aligned for memory-mapped reads). Returns its length. */
static size_t make_header(const gm_npy *m, char *buf, size_t buflen)
{
	int n = snprintf(buf + 10, buflen - 10,
			 "{'descr': '%s', 'fortran_order': %s, 'shape': "
			 "(%" PRIu64 ", %" PRIu64 "), }",
			 gm_npy_type_of(m->dtype)->descr,
			 m->fortran ? "True" : "False", m->rows, m->cols);
	size_t total = 10 + (size_t)n + 1;
	size_t hlen;

	total += (64 - total % 64) % 64;
	hlen = total - 10;
	memset(buf + 10 + n, ' ', total - 10 - (size_t)n - 1);
	buf[total - 1] = '\n';
	memcpy(buf, magic, sizeof(magic));
	buf[6] = 1;
	buf[7] = 0;
	buf[8] = (char)(hlen & 0xff);
	buf[9] = (char)(hlen >> 8);
	return total;
}

/* Checks that m can be written: GM_OK with its data's size in *bytes. */
static int writable(const struct err *e, const gm_npy *m, uint64_t *bytes)
{
	uint64_t es = npy_elem_size(m->dtype);

	if (es == 0)
		return fail(e, GM_ENPY, "cannot write dtype %d", m->dtype);
	if (__builtin_mul_overflow(m->rows, m->cols, bytes) ||
	    __builtin_mul_overflow(*bytes, es, bytes) || *bytes > SIZE_MAX)
		return fail(e, GM_ENPY,
			    "shape (%" PRIu64 ", %" PRIu64 ") overflows",
			    m->rows, m->cols);
	return GM_OK;
}

/* Header and data; whether every byte was taken. */
static bool put_npy(FILE *f, const gm_npy *m, uint64_t bytes)
{
	char head[192];
	size_t hl = make_header(m, head, sizeof(head));

	return fwrite(head, 1, hl, f) == hl &&
	       fwrite(m->data, 1, (size_t)bytes, f) == bytes;
}

int gm_npy_fwrite(FILE *f, const char *name, const gm_npy *m, char *msg,
		  size_t msglen)
{
	struct err e = {name, msg, msglen, false};
	uint64_t bytes;
	int rv;

	if ((rv = writable(&e, m, &bytes)) != 0)
		return rv;
	if (!put_npy(f, m, bytes) || fflush(f) != 0)
		return fail(&e, GM_EIO, "write: %s", strerror(errno));
	return GM_OK;
}

int gm_npy_write(const char *path, const gm_npy *m, char *msg, size_t msglen)
{
	struct err e = {path, msg, msglen, false};
	uint64_t bytes;
	FILE *f;
	bool ok;
	int rv;

	if ((rv = writable(&e, m, &bytes)) != 0)
		return rv;
	if ((f = fopen(path, "wb")) == NULL)
		return fail(&e, GM_EIO, "%s", strerror(errno));
	/* Unbuffered: the header in one write, the data in one more, from
	 * where it is, through no buffer. */
	setvbuf(f, NULL, _IONBF, 0);
	ok = put_npy(f, m, bytes);
	ok = (fclose(f) == 0) && ok;
	if (!ok) {
		fail(&e, GM_EIO, "write: %s", strerror(errno));
		remove(path);
		return GM_EIO;
	}
	return GM_OK;
}

/* ---- order ---- */

/* Tiles keep both the reads and the writes of a transpose in cache. */
#define TILE 32

/* transposeN: the rows x cols row-major src into dst, column-major, for
 * N-bit elements. */
#define DEFINE_TRANSPOSE(name, type)                                         \
	static void name(type *dst, const type *src, uint64_t rows,          \
			 uint64_t cols)                                      \
	{                                                                    \
		uint64_t i0, j0, i, j;                                       \
                                                                             \
		for (i0 = 0; i0 < rows; i0 += TILE)                          \
			for (j0 = 0; j0 < cols; j0 += TILE)                  \
				for (i = i0; i < rows && i < i0 + TILE; i++) \
					for (j = j0;                         \
					     j < cols && j < j0 + TILE; j++) \
						dst[j * rows + i] =          \
						    src[i * cols + j];       \
	}
DEFINE_TRANSPOSE(transpose64, uint64_t)
DEFINE_TRANSPOSE(transpose32, uint32_t)
DEFINE_TRANSPOSE(transpose16, uint16_t)

int gm_npy_reorder(gm_npy *m, int fortran)
{
	size_t es = npy_elem_size(m->dtype);
	uint64_t r = m->rows, c = m->cols;
	void *dst;

	if (!m->fortran == !fortran)
		return GM_OK;
	/* An empty matrix has nothing to move, and a loop over its other
	 * extent alone could run for as long as the header claims. */
	if (r == 0 || c == 0) {
		m->fortran = !!fortran;
		return GM_OK;
	}
	if ((dst = alloc_bytes(r * c * es)) == NULL)
		return GM_ENOMEM;
	/* C order (r, c) is the transpose of Fortran order (r, c): a C
	 * array read as Fortran is c x r, so swap the extents given. */
	if (m->fortran) {
		r = m->cols;
		c = m->rows;
	}
	if (es == 8)
		transpose64(dst, m->data, r, c);
	else if (es == 4)
		transpose32(dst, m->data, r, c);
	else
		transpose16(dst, m->data, r, c);
	free(m->data);
	m->data = dst;
	m->fortran = !!fortran;
	return GM_OK;
}

/* ---- fp16 and bf16 ---- */

/* Rounds |x| to a binary format with mbits stored mantissa bits and
 * exponent bias ebias (exponent field 15 - mbits bits wide) in 16 bits.
 * ldexp is exact and nearbyint rounds to nearest even (the default
 * mode), so each value is rounded once, from its own precision. */
static uint16_t to_small(double x, int mbits, int ebias)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	uint16_t inf = (uint16_t)(((1u << (15 - mbits)) - 1) << mbits);
	int emin = 1 - ebias, e;
	double r;

	if (isnan(x))
		return sign | inf | (uint16_t)(1u << (mbits - 1));
	x = fabs(x);
	if (isinf(x))
		return sign | inf;
	if (x < ldexp(1.0, emin)) {
		/* Subnormal: units of 2^(emin - mbits). A result of
		 * 2^mbits is the smallest normal, whose encoding it is. */
		return sign | (uint16_t)nearbyint(ldexp(x, mbits - emin));
	}
	frexp(x, &e);
	e -= 1; /* x = f * 2^e, 1 <= f < 2 */
	r = nearbyint(ldexp(x, mbits - e));
	if (r == ldexp(1.0, mbits + 1)) {
		r /= 2;
		e++;
	}
	if (e > ebias)
		return sign | inf;
	return sign | (uint16_t)((e + ebias) << mbits) |
	       (uint16_t)((uint32_t)r - (1u << mbits));
}

static float from_small(uint16_t h, int mbits, int ebias)
{
	unsigned emask = (1u << (15 - mbits)) - 1;
	unsigned e = (h >> mbits) & emask;
	unsigned f = h & ((1u << mbits) - 1);
	double v;

	if (e == emask)
		v = f ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp(f, 1 - ebias - mbits);
	else
		v = ldexp(f + (1u << mbits), (int)e - ebias - mbits);
	return (float)((h & 0x8000) ? -v : v);
}

uint16_t gm_npy_to_fp16(double x)
{
	return to_small(x, 10, 15);
}

uint16_t gm_npy_to_bf16(double x)
{
	return to_small(x, 7, 127);
}

float gm_npy_from_fp16(uint16_t h)
{
	return from_small(h, 10, 15);
}

float gm_npy_from_bf16(uint16_t h)
{
	return from_small(h, 7, 127);
}

/* ---- packing ---- */

double gm_npy_wire_get(const void *buf, int dtype, uint64_t i)
{
	switch (dtype) {
	case GM_FP64:
		return ((const double *)buf)[i];
	case GM_FP16:
		return gm_npy_from_fp16(((const uint16_t *)buf)[i]);
	case GM_BF16:
		return gm_npy_from_bf16(((const uint16_t *)buf)[i]);
	default:
		return ((const float *)buf)[i];
	}
}

static void pack_elem(void *out, int dtype, uint64_t i, double x)
{
	switch (dtype) {
	case GM_FP64:
		((double *)out)[i] = x;
		break;
	case GM_FP16:
		((uint16_t *)out)[i] = gm_npy_to_fp16(x);
		break;
	case GM_BF16:
		((uint16_t *)out)[i] = gm_npy_to_bf16(x);
		break;
	default:
		((float *)out)[i] = (float)x;
	}
}

/* Elements of m, or GM_EOVERFLOW when they could not be counted. */
static int elems(const gm_npy *m, uint64_t *n)
{
	if (__builtin_mul_overflow(m->rows, m->cols, n) || *n > SIZE_MAX / 8)
		return GM_EOVERFLOW;
	return GM_OK;
}

int gm_npy_pack_to(const gm_npy *m, int dtype, void *dst)
{
	size_t es = gm_dtype_size(dtype);
	uint64_t n, i;

	if (es == 0)
		return GM_EDTYPE;
	if (elems(m, &n) != GM_OK)
		return GM_EOVERFLOW;
	if (dtype == m->dtype) {
		memcpy(dst, m->data, n * es);
		return GM_OK;
	}
	for (i = 0; i < n; i++)
		pack_elem(dst, dtype, i, gm_npy_wire_get(m->data, m->dtype, i));
	return GM_OK;
}

int gm_npy_pack(const gm_npy *m, int dtype, void **out)
{
	size_t es = gm_dtype_size(dtype);
	uint64_t n;

	*out = NULL;
	if (es == 0)
		return GM_EDTYPE;
	if (elems(m, &n) != GM_OK)
		return GM_EOVERFLOW;
	if ((*out = alloc_bytes(n * es)) == NULL)
		return GM_ENOMEM;
	return gm_npy_pack_to(m, dtype, *out);
}

int gm_npy_unpack(const void *buf, int dtype, uint64_t rows, uint64_t cols,
		  int fortran, gm_npy *m)
{
	uint64_t n, i;

	memset(m, 0, sizeof(*m));
	if (gm_dtype_size(dtype) == 0)
		return GM_EDTYPE;
	m->dtype = dtype == GM_FP64 ? GM_FP64 : GM_FP32;
	if (__builtin_mul_overflow(rows, cols, &n) || n > SIZE_MAX / 8)
		return GM_EOVERFLOW;
	if ((m->data = alloc_bytes(n * 8)) == NULL)
		return GM_ENOMEM;
	m->rows = rows;
	m->cols = cols;
	m->fortran = !!fortran;
	for (i = 0; i < n; i++)
		pack_elem(m->data, m->dtype, i, gm_npy_wire_get(buf, dtype, i));
	return GM_OK;
}
