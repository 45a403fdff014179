/*
 * test_npy.c - unit tests of ctl/gm_npy: .npy round trips in both
 * dtypes and orders, files written in versions 2.0 and 3.0 and in the
 * spellings older NumPy used, a table of malformed files each with the
 * exact code and the words its message must contain, streams (pipes)
 * read and written, order changes, and fp16 / bf16 rounding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gm_error.h"
#include "gm_npy.h"
#include "gm_proto.h"

static char dir[64];

static const char *path_of(const char *name)
{
	static char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static int make_dir(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_npy.XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int remove_dir(void **state)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_bytes(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* A .npy file of the given version whose header is text, padded with
 * spaces and a newline to a multiple of 64, followed by data_len bytes
 * (of value 0). Returns the file's length. */
static size_t make_npy(uint8_t *buf, int major, const char *text,
		       size_t data_len)
{
	size_t pre = major == 1 ? 10 : 12, n = strlen(text);
	size_t total = pre + n + 1, hlen;

	total += (64 - total % 64) % 64;
	hlen = total - pre;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (uint8_t)major;
	buf[7] = 0;
	buf[8] = (uint8_t)hlen;
	buf[9] = (uint8_t)(hlen >> 8);
	if (major != 1) {
		buf[10] = (uint8_t)(hlen >> 16);
		buf[11] = (uint8_t)(hlen >> 24);
	}
	memcpy(buf + pre, text, n);
	memset(buf + pre + n, ' ', hlen - n - 1);
	buf[total - 1] = '\n';
	memset(buf + total, 0, data_len);
	return total + data_len;
}

/* ---- round trips ---- */

static void fill(gm_npy *m)
{
	uint64_t i, n = m->rows * m->cols;

	for (i = 0; i < n; i++) {
		double v = (double)i * 0.25 - 3.0;

		if (m->dtype == GM_FP64)
			((double *)m->data)[i] = v;
		else if (m->dtype == GM_FP16)
			((uint16_t *)m->data)[i] = gm_npy_to_fp16(v);
		else
			((float *)m->data)[i] = (float)v;
	}
}

static void round_trip(int dtype, int fortran)
{
	size_t es = gm_dtype_size(dtype);
	gm_npy m = {dtype, fortran, 3, 5, malloc(15 * es)}, r;
	const char *path = path_of("rt.npy");
	char msg[256];
	struct stat st;

	fill(&m);
	assert_int_equal(gm_npy_write(path, &m, msg, sizeof(msg)), GM_OK);
	assert_int_equal(stat(path, &st), 0);
	/* Data starts at a multiple of 64. */
	assert_int_equal(((size_t)st.st_size - 15 * es) % 64, 0);
	assert_int_equal(gm_npy_read(path, &r, msg, sizeof(msg)), GM_OK);
	assert_int_equal(r.dtype, dtype);
	assert_int_equal(r.fortran, fortran);
	assert_int_equal(r.rows, 3);
	assert_int_equal(r.cols, 5);
	assert_memory_equal(r.data, m.data, 15 * es);
	gm_npy_free(&r);
	gm_npy_free(&m);
}

/* Both orders of every dtype gm_npy writes. */
static void test_round_trips(void **state)
{
	static const struct {
		int dtype, fortran;
	} cases[] = {{GM_FP64, 0}, {GM_FP64, 1}, {GM_FP32, 0},
		     {GM_FP32, 1}, {GM_FP16, 0}, {GM_FP16, 1}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		round_trip(cases[i].dtype, cases[i].fortran);
}

/* ---- streams ---- */

/* Writes len bytes of buf into a pipe from a child and reads them with
 * gm_npy_fread; returns its code, m and msg as it left them. */
static int read_piped(const void *buf, size_t len, gm_npy *m, char *msg,
		      size_t msglen)
{
	int fds[2], rv, status;
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(write(fds[1], buf, len) == (ssize_t)len ? 0 : 1);
	}
	close(fds[1]);
	f = fdopen(fds[0], "rb");
	assert_non_null(f);
	rv = gm_npy_fread(f, "stdin", m, msg, msglen);
	fclose(f);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return rv;
}

static void test_stream(void **state)
{
	static const char text[] = "{'descr': '<f2', 'fortran_order': True, "
				   "'shape': (2, 3), }";
	uint8_t buf[256];
	size_t len = make_npy(buf, 2, text, 12);
	char msg[256] = "";
	gm_npy m;

	buf[len - 12] = 0x00, buf[len - 11] = 0x3C; /* 1.0 */
	assert_int_equal(read_piped(buf, len, &m, msg, sizeof(msg)), GM_OK);
	assert_int_equal(m.dtype, GM_FP16);
	assert_int_equal(m.fortran, 1);
	assert_int_equal(m.rows, 2);
	assert_int_equal(m.cols, 3);
	assert_true(gm_npy_wire_get(m.data, GM_FP16, 0) == 1.0);
	gm_npy_free(&m);

	/* A byte after the array, or one missing, is refused. */
	buf[len] = 0;
	assert_int_equal(read_piped(buf, len + 1, &m, msg, sizeof(msg)),
			 GM_ENPY);
	assert_non_null(strstr(msg, "stdin: bytes after the 2x3 float16"));
	assert_null(m.data);
	assert_int_equal(read_piped(buf, len - 1, &m, msg, sizeof(msg)),
			 GM_ENPY);
	assert_non_null(strstr(msg, "stdin: input ends before the array"));
	assert_int_equal(read_piped(buf, 11, &m, msg, sizeof(msg)), GM_ENPY);
	assert_non_null(strstr(msg, "input ends before the array"));
}

/* gm_npy_fwrite's bytes are gm_npy_write's. */
static void test_fwrite(void **state)
{
	gm_npy m = {GM_FP32, 1, 4, 3, malloc(12 * 4)};
	char msg[256], *a = NULL, *b = NULL;
	size_t la = 0, lb = 0;
	FILE *f = open_memstream(&a, &la), *g;

	fill(&m);
	assert_int_equal(gm_npy_fwrite(f, "stdout", &m, msg, sizeof(msg)),
			 GM_OK);
	fclose(f);
	assert_int_equal(gm_npy_write(path_of("w.npy"), &m, msg, sizeof(msg)),
			 GM_OK);
	g = fopen(path_of("w.npy"), "rb");
	assert_non_null(g);
	b = malloc(la + 1);
	lb = fread(b, 1, la + 1, g);
	fclose(g);
	assert_int_equal(lb, la);
	assert_memory_equal(a, b, la);
	free(a);
	free(b);
	gm_npy_free(&m);
}

/* The exact header NumPy 1.x writes for np.zeros((2, 3)). */
static void test_header_text(void **state)
{
	static const char want[] =
	    "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
	gm_npy m = {GM_FP64, 0, 2, 3, calloc(6, 8)};
	const char *path = path_of("hdr.npy");
	char buf[256], msg[256];
	FILE *f;

	assert_int_equal(gm_npy_write(path, &m, msg, sizeof(msg)), GM_OK);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, sizeof(buf), f), 128 + 48);
	fclose(f);
	/* 10 + 60 + '\n' padded to 128: header length 118, as NumPy's. */
	assert_memory_equal(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
	assert_memory_equal(buf + 10, want, sizeof(want) - 1);
	assert_int_equal(buf[70], ' ');
	assert_int_equal(buf[127], '\n');
	gm_npy_free(&m);
}

/* Versions 2.0 and 3.0, double quotes, another key order, no trailing
 * comma, and Python 2's long integers all read; every shape is (2, 3). */
static void read_ok(int major, const char *text, int dtype, int fortran)
{
	const char *path = path_of("ok.npy");
	uint8_t buf[256];
	char msg[256];
	gm_npy m;

	write_bytes(path, buf,
		    make_npy(buf, major, text, dtype == GM_FP64 ? 48 : 24));
	assert_int_equal(gm_npy_read(path, &m, msg, sizeof(msg)), GM_OK);
	assert_int_equal(m.rows, 2);
	assert_int_equal(m.cols, 3);
	assert_int_equal(m.dtype, dtype);
	assert_int_equal(m.fortran, fortran);
	gm_npy_free(&m);
}

static void test_read_variants(void **state)
{
	read_ok(2, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
		GM_FP64, 1);
	read_ok(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
		GM_FP32, 0);
	read_ok(1,
		"{\"shape\": (2L, 3L), \"fortran_order\": False, "
		"\"descr\": \"<f8\"}",
		GM_FP64, 0);
	read_ok(1, "{'descr':'<f4','fortran_order':True,'shape':(2,3,),}",
		GM_FP32, 1);
}

/* ---- malformed files ---- */

struct bad_case {
	const char *name;
	int major;	   /* 0: raw bytes below, not make_npy */
	const char *text;  /* header text, or raw bytes */
	size_t len;	   /* data bytes after the header; raw: length */
	int code;	   /* exact code */
	const char *words; /* the message must contain these */
};

#define F8 "'descr': '<f8', 'fortran_order': False, "
/* Short enough that prefix and header take 64 bytes. */
#define SHORT_2X2 "{'descr':'<f8','fortran_order':False,'shape':(2,2)}"

static const struct bad_case bad_cases[] = {
    {"short", 0, "\x93NUMPY", 6, GM_ENPY, "too short for a .npy file"},
    {"magic", 0, "\x93NUMPX\x01\x00\x10\x00{}", 12, GM_ENPY, "not a .npy file"},
    {"version", 0, "\x93NUMPY\x04\x00\x10\x00{}", 12, GM_ENPY,
     "format version 4.0 unsupported"},
    {"minor", 0, "\x93NUMPY\x01\x01\x10\x00{}", 12, GM_ENPY,
     "format version 1.1 unsupported"},
    {"v2 short", 0, "\x93NUMPY\x02\x00\x10\x00", 10, GM_ENPY,
     "too short for a version 2.0 prefix"},
    {"hlen zero", 0, "\x93NUMPY\x01\x00\x00\x00{}", 12, GM_ENPY,
     "header length 0 not in 1..10000"},
    {"hlen past end", 0, "\x93NUMPY\x01\x00\x40\x00{}", 12, GM_ENPY,
     "header length 64 runs past the end of the file (12 bytes)"},
    {"hlen huge", 0, "\x93NUMPY\x02\x00\x00\x00\x01\x00{}", 14, GM_ENPY,
     "header length 65536 not in 1..10000"},
    {"int dtype", 1,
     "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", 16, GM_ENPY,
     "dtype '<i4' unsupported: only little-endian float64 ('<f8'), float32 "
     "('<f4') and float16 ('<f2')"},
    {"big-endian", 1,
     "{'descr': '>f8', 'fortran_order': False, 'shape': (2, 2), }", 32, GM_ENPY,
     "dtype '>f8' unsupported: big-endian"},
    {"1-D", 1, "{" F8 "'shape': (6,), }", 48, GM_ENPY,
     "array is 1-D: only 2-D matrices"},
    {"3-D", 1, "{" F8 "'shape': (1, 2, 3), }", 48, GM_ENPY, "array is 3-D"},
    {"0-D", 1, "{" F8 "'shape': (), }", 8, GM_ENPY, "array is 0-D"},
    {"not a tuple", 1, "{" F8 "'shape': (6), }", 48, GM_ENPY,
     "expected ',' after the only dimension"},
    {"no fortran_order", 1, "{'descr': '<f8', 'shape': (2, 2), }", 32, GM_ENPY,
     "no 'fortran_order' key"},
    {"unknown key", 1, "{" F8 "'shape': (2, 2), 'foo': 1, }", 32, GM_ENPY,
     "unknown key 'foo'"},
    {"duplicate key", 1, "{" F8 "'descr': '<f8', 'shape': (2, 2), }", 32,
     GM_ENPY, "key 'descr' appears twice"},
    {"bad bool", 1, "{'descr': '<f8', 'fortran_order': 0, 'shape': (1, 1)}", 8,
     GM_ENPY, "expected True or False"},
    {"unterminated", 1, "{'descr': '<f8}", 8, GM_ENPY,
     "unterminated string at byte 10"},
    {"junk after", 1, "{" F8 "'shape': (1, 1), } x", 8, GM_ENPY,
     "expected only padding after the header dictionary"},
    {"truncated data", 1, SHORT_2X2, 31, GM_ENPY,
     "file is 95 bytes, header says 96 (64-byte prefix + 2x2 float64)"},
    {"trailing data", 1, SHORT_2X2, 33, GM_ENPY,
     "file is 97 bytes, header says 96"},
    {"overflow", 1, "{" F8 "'shape': (1099511627776, 1099511627776), }", 8,
     GM_ENPY, "overflows 64 bits"},
    {"huge dim", 1, "{" F8 "'shape': (99999999999999999999, 1), }", 8, GM_ENPY,
     "dimension at byte"},
};

static void check_bad(const struct bad_case *c)
{
	const char *path = path_of("bad.npy");
	uint8_t buf[512];
	char msg[256] = "";
	size_t len = c->len;
	gm_npy m;

	if (c->major == 0)
		memcpy(buf, c->text, len);
	else
		len = make_npy(buf, c->major, c->text, len);
	write_bytes(path, buf, len);
	print_message("case %s\n", c->name);
	assert_int_equal(gm_npy_read(path, &m, msg, sizeof(msg)), c->code);
	assert_null(m.data);
	assert_ptr_equal(strstr(msg, path), msg);
	if (strstr(msg, c->words) == NULL)
		fail_msg("case %s: message \"%s\" lacks \"%s\"", c->name, msg,
			 c->words);
}

static void test_malformed(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		check_bad(&bad_cases[i]);
}

static void test_nul_in_header(void **state)
{
	const char *path = path_of("nul.npy");
	uint8_t buf[256];
	char msg[256];
	size_t len = make_npy(buf, 1, "{" F8 "'shape': (1, 1), }", 8);
	gm_npy m;

	buf[20] = '\0';
	write_bytes(path, buf, len);
	assert_int_equal(gm_npy_read(path, &m, msg, sizeof(msg)), GM_ENPY);
	assert_non_null(strstr(msg, "header holds a NUL byte"));
}

static void test_io_errors(void **state)
{
	gm_npy m = {GM_FP64, 0, 1, 1, calloc(1, 8)}, r;
	char msg[256];

	assert_int_equal(
	    gm_npy_read(path_of("absent.npy"), &r, msg, sizeof(msg)), GM_EIO);
	assert_non_null(strstr(msg, "absent.npy: No such file or directory"));
	assert_int_equal(gm_npy_read(dir, &r, msg, sizeof(msg)), GM_EIO);
	assert_non_null(strstr(msg, "not a regular file"));
	assert_int_equal(
	    gm_npy_write(path_of("no/such/dir.npy"), &m, msg, sizeof(msg)),
	    GM_EIO);
	assert_non_null(strstr(msg, "No such file or directory"));
	m.dtype = GM_BF16; /* NumPy has no bfloat16 */
	assert_int_equal(gm_npy_write(path_of("h.npy"), &m, msg, sizeof(msg)),
			 GM_ENPY);
	m.dtype = GM_FP64;
	gm_npy_free(&m);
}

/* ---- order and packing ---- */

/* 2x3 [[1 2 3] [4 5 6]] of dtype, es bytes an element, from C order to
 * Fortran order (twice: the second changes nothing) and back. */
static void reorder_2x3(int dtype, const void *c_order, const void *f_order,
			size_t es)
{
	gm_npy m = {dtype, 0, 2, 3, malloc(6 * es)};

	memcpy(m.data, c_order, 6 * es);
	assert_int_equal(gm_npy_reorder(&m, 1), GM_OK);
	assert_int_equal(m.fortran, 1);
	assert_memory_equal(m.data, f_order, 6 * es);
	assert_int_equal(gm_npy_reorder(&m, 1), GM_OK);
	assert_memory_equal(m.data, f_order, 6 * es);
	assert_int_equal(gm_npy_reorder(&m, 0), GM_OK);
	assert_memory_equal(m.data, c_order, 6 * es);
	gm_npy_free(&m);
}

static void test_reorder(void **state)
{
	static const double c8[6] = {1, 2, 3, 4, 5, 6},
			    f8[6] = {1, 4, 2, 5, 3, 6};
	static const uint16_t c2[6] = {1, 2, 3, 4, 5, 6},
			      f2[6] = {1, 4, 2, 5, 3, 6};

	reorder_2x3(GM_FP64, c8, f8, 8);
	reorder_2x3(GM_FP16, c2, f2, 2);
}

static void test_reorder_f4_large(void **state)
{
	uint64_t r = 70, c = 45, i, j; /* not multiples of the tile */
	gm_npy m = {GM_FP32, 1, r, c, malloc(r * c * 4)};
	float *f;

	f = m.data;
	for (j = 0; j < c; j++)
		for (i = 0; i < r; i++)
			f[j * r + i] = (float)(i * 1000 + j);
	assert_int_equal(gm_npy_reorder(&m, 0), GM_OK);
	f = m.data;
	for (i = 0; i < r; i++)
		for (j = 0; j < c; j++)
			assert_true(f[i * c + j] == (float)(i * 1000 + j));
	gm_npy_free(&m);
}

struct half_case {
	double x;
	uint16_t fp16, bf16;
};

static const struct half_case half_cases[] = {
    {0.0, 0x0000, 0x0000},
    {-0.0, 0x8000, 0x8000},
    {1.0, 0x3C00, 0x3F80},
    {-2.0, 0xC000, 0xC000},
    {65504.0, 0x7BFF, 0x4780}, /* bf16 has 8 bits: 65536 */
    {65519.99, 0x7BFF, 0x4780},
    {65520.0, 0x7C00, 0x4780}, /* the tie rounds to even: overflow */
    {1e10, 0x7C00, 0x5015},
    {INFINITY, 0x7C00, 0x7F80},
    {-INFINITY, 0xFC00, 0xFF80},
    {0x1p-24, 0x0001, 0x3380},	     /* smallest fp16 subnormal */
    {0x1p-25, 0x0000, 0x3300},	     /* tie to even: zero */
    {0x3p-25, 0x0002, 0x33C0},	     /* 1.5 units: tie to even, 2 */
    {0x1p-14, 0x0400, 0x3880},	     /* smallest fp16 normal */
    {0x1.ffcp-15, 0x0400, 0x3880},   /* rounds up into the normals */
    {1.0 + 0x1p-11, 0x3C00, 0x3F80}, /* tie to even */
    {1.0 + 0x3p-11, 0x3C02, 0x3F80},
    /* Just over the tie: a detour through fp32 would lose the 2^-40 and
     * round down. */
    {1.0 + 0x1p-11 + 0x1p-40, 0x3C01, 0x3F80},
    {1.0 + 0x1p-8 + 0x1p-40, 0x3C04, 0x3F81},
    {3.140625, 0x4248, 0x4049},
};

static void test_half(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(half_cases) / sizeof(half_cases[0]); i++) {
		const struct half_case *c = &half_cases[i];

		print_message("case %zu: %a\n", i, c->x);
		assert_int_equal(gm_npy_to_fp16(c->x), c->fp16);
		assert_int_equal(gm_npy_to_bf16(c->x), c->bf16);
	}
	assert_true(isnan(gm_npy_from_fp16(gm_npy_to_fp16(NAN))));
	assert_true(isnan(gm_npy_from_bf16(gm_npy_to_bf16(NAN))));
	assert_true(gm_npy_from_fp16(0x7BFF) == 65504.0f);
	assert_true(gm_npy_from_fp16(0x0001) == 0x1p-24f);
	assert_true(gm_npy_from_bf16(0x4049) == 3.140625f);
	assert_true(isinf(gm_npy_from_fp16(0xFC00)));
}

/* Every fp16 bit pattern converts to a float and back to itself. */
static void test_fp16_exhaustive(void **state)
{
	uint32_t h;

	for (h = 0; h < 0x10000; h++) {
		float f = gm_npy_from_fp16((uint16_t)h);

		if (isnan(f))
			continue;
		assert_int_equal(gm_npy_to_fp16(f), h);
	}
}

static void test_pack_unpack(void **state)
{
	double v[4] = {1.0, -0.5, 1.0 + 0x1p-12, 3e38};
	gm_npy m = {GM_FP64, 0, 2, 2, v}, r;
	void *p;

	assert_int_equal(gm_npy_pack(&m, GM_FP16, &p), GM_OK);
	assert_int_equal(((uint16_t *)p)[1], 0xB800);
	assert_true(gm_npy_wire_get(p, GM_FP16, 2) == 1.0);
	assert_true(isinf(gm_npy_wire_get(p, GM_FP16, 3)));
	assert_int_equal(gm_npy_unpack(p, GM_FP16, 2, 2, 1, &r), GM_OK);
	assert_int_equal(r.dtype, GM_FP32);
	assert_int_equal(r.fortran, 1);
	assert_true(((float *)r.data)[1] == -0.5f);
	gm_npy_free(&r);
	free(p);
	assert_int_equal(gm_npy_pack(&m, GM_TF32, &p), GM_OK);
	assert_true(((float *)p)[3] == 3e38f);
	free(p);
	assert_int_equal(gm_npy_pack(&m, 9, &p), GM_EDTYPE);
	assert_null(p);
}

/* A float16 file's values, widened exactly or kept as they are. */
static void test_pack_from_f2(void **state)
{
	uint16_t h[2] = {0x3C01, 0xFBFF}; /* 1 + 2^-10, -65504 */
	gm_npy m = {GM_FP16, 0, 1, 2, h};
	void *p;

	assert_int_equal(gm_npy_pack(&m, GM_FP64, &p), GM_OK);
	assert_true(((double *)p)[0] == 1.0 + 0x1p-10);
	assert_true(((double *)p)[1] == -65504.0);
	free(p);
	assert_int_equal(gm_npy_pack(&m, GM_FP16, &p), GM_OK);
	assert_memory_equal(p, h, sizeof(h));
	free(p);
	assert_int_equal(gm_npy_pack(&m, GM_BF16, &p), GM_OK);
	assert_int_equal(((uint16_t *)p)[0], 0x3F80); /* rounds to 1 */
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trips),
	    cmocka_unit_test(test_stream),
	    cmocka_unit_test(test_fwrite),
	    cmocka_unit_test(test_header_text),
	    cmocka_unit_test(test_read_variants),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_nul_in_header),
	    cmocka_unit_test(test_io_errors),
	    cmocka_unit_test(test_reorder),
	    cmocka_unit_test(test_reorder_f4_large),
	    cmocka_unit_test(test_half),
	    cmocka_unit_test(test_fp16_exhaustive),
	    cmocka_unit_test(test_pack_unpack),
	    cmocka_unit_test(test_pack_from_f2),
	};

	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
