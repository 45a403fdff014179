/*
 * test_proto.c - unit tests for proto/gm_proto: dtype tables and job
 * arithmetic, round trips of every message (encoded at odd addresses, so
 * that no decoder may rely on alignment), the annotated bytes of
 * PROTOCOL.md's example, boundary cases that must be accepted, and at the
 * bottom two tables of malformed requests and replies, each with the one
 * code the specification assigns to it.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gm_proto.h"

#define MSG_LEN 256

/* Room for the largest message a test builds, plus slack for offsets. */
static uint8_t buf[1 << 18];

static const gm_limits lim_small = {
    .max_jobs = 4, .max_dim = 64, .max_job_bytes = 4096};

/* Fills n bytes with a pattern that differs per operand. */
static void fill(uint8_t *p, uint64_t n, uint8_t seed)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static int same(const uint8_t *p, uint64_t n, uint8_t seed)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

/* Encodes a GEMM request for jobs d[0..n-1] at p (room bytes), operand j
 * of job i filled with seed 16 * i + j; returns its length. */
static size_t put_request(uint8_t *p, size_t room, uint64_t id,
			  const gm_batch *b, const gm_job_desc *d, uint32_t n)
{
	uint8_t *q = p + GM_HDR_SIZE + GM_BATCH_SIZE;
	gm_job_sizes sz;
	uint64_t size;
	uint32_t i;

	assert_int_equal(gm_proto_gemm_size(d, n, &size), GM_OK);
	assert_true(size <= room);

	gm_proto_put_hdr(p, GM_MSG_GEMM, id, n);
	gm_proto_put_batch(p + GM_HDR_SIZE, b);
	for (i = 0; i < n; i++) {
		assert_int_equal(gm_job_sizes_of(&d[i], &sz), GM_OK);
		gm_proto_put_job(q, &d[i]);
		q += GM_JOB_HDR_SIZE;
		fill(q, sz.a, (uint8_t)(16 * i));
		fill(q + sz.a, sz.b, (uint8_t)(16 * i + 1));
		fill(q + sz.a + sz.b, sz.c, (uint8_t)(16 * i + 2));
		q += sz.a + sz.b + sz.c;
	}
	return (size_t)(q - p);
}

static gm_job_desc job(int dtype, uint32_t m, uint32_t n, uint32_t k)
{
	gm_job_desc d = {.dtype = (uint8_t)dtype, .m = m, .n = n, .k = k};

	d.alpha = 1.0;
	return d;
}

/* ---- dtypes and job arithmetic ---- */

static void test_dtype_tables(void **state)
{
	static const struct {
		int code;
		const char *name;
		size_t size;
	} rows[] = {
	    {GM_FP64, "fp64", 8}, {GM_FP32, "fp32", 4}, {GM_TF32, "tf32", 4},
	    {GM_FP16, "fp16", 2}, {GM_BF16, "bf16", 2},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(gm_dtype_size(rows[i].code), rows[i].size);
		assert_string_equal(gm_dtype_name(rows[i].code), rows[i].name);
		assert_int_equal(gm_dtype_parse(rows[i].name), rows[i].code);
	}
	assert_int_equal(gm_dtype_size(0), 0);
	assert_int_equal(gm_dtype_size(6), 0);
	assert_int_equal(gm_dtype_size(-1), 0);
	assert_null(gm_dtype_name(0));
	assert_null(gm_dtype_name(6));
	assert_int_equal(gm_dtype_parse("fp128"), 0);
	assert_int_equal(gm_dtype_parse("FP64"), 0);
	assert_int_equal(gm_dtype_parse(""), 0);
	assert_int_equal(gm_dtype_parse(NULL), 0);
}

static void test_job_sizes(void **state)
{
	gm_job_desc d = job(GM_FP64, 2, 3, 4);
	gm_job_sizes sz;

	(void)state;
	assert_int_equal(gm_job_sizes_of(&d, &sz), GM_OK);
	assert_int_equal(sz.a, 2 * 4 * 8);
	assert_int_equal(sz.b, 4 * 3 * 8);
	assert_int_equal(sz.c, 0);
	assert_int_equal(sz.out, 2 * 3 * 8);
	/* A transpose changes how A is read, not how many bytes it has. */
	d.trans_a = 1;
	d.flags = GM_JOB_HAS_C;
	d.dtype = GM_BF16;
	assert_int_equal(gm_job_sizes_of(&d, &sz), GM_OK);
	assert_int_equal(sz.a, 2 * 4 * 2);
	assert_int_equal(sz.c, 2 * 3 * 2);

	d = job(GM_FP16, UINT32_MAX, 1, UINT32_MAX);
	assert_int_equal(gm_job_sizes_of(&d, &sz), GM_EOVERFLOW);
	/* Each operand fits; their sum does not. */
	d = job(GM_FP32, 1u << 30, 1u << 30, 1u << 31);
	assert_int_equal(gm_job_sizes_of(&d, &sz), GM_EOVERFLOW);
	d = job(9, 1, 1, 1);
	assert_int_equal(gm_job_sizes_of(&d, &sz), GM_EDTYPE);
}

static void test_job_flops(void **state)
{
	gm_job_desc d = job(GM_FP32, 1024, 512, 256);

	(void)state;
	assert_true(gm_job_flops(&d) == 2.0 * 1024 * 512 * 256);
	d = job(GM_FP64, GM_MAX_DIM, GM_MAX_DIM, GM_MAX_DIM);
	assert_true(gm_job_flops(&d) == 2.0 * 1099511627776.0 * 1048576.0);
}

static void test_job_check_messages(void **state)
{
	gm_limits lim = {
	    .max_jobs = 8, .max_dim = 65536, .max_job_bytes = UINT64_MAX};
	gm_job_desc d[4] = {job(GM_FP32, 2, 2, 2), job(GM_FP32, 2, 2, 2),
			    job(GM_FP32, 2, 2, 2), job(GM_FP32, 2, 2, 2)};
	gm_batch b = {.priority = GM_BATCH_PRIO_DEFAULT};
	char msg[MSG_LEN];
	gm_hdr h;
	size_t len;

	(void)state;
	d[3].m = 0;
	assert_int_equal(gm_job_check(&d[3], &lim, msg, sizeof(msg)), GM_EDIM);
	assert_string_equal(msg, "m=0, must be 1..65536");

	d[3].m = 2;
	len = put_request(buf, sizeof(buf), 1, &b, d, 4);
	/* m of job 3; each job is a header and 2 * 16 payload bytes. */
	buf[GM_HDR_SIZE + GM_BATCH_SIZE + 3 * (GM_JOB_HDR_SIZE + 32) + 8] = 0;
	assert_int_equal(
	    gm_proto_check_gemm(buf, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_EDIM);
	assert_string_equal(msg, "job 3: m=0, must be 1..65536");

	/* A short message buffer is cut, not overrun; none at all is fine. */
	assert_int_equal(gm_job_check(&d[3], &lim, msg, 4), GM_OK);
	d[3].n = 70000;
	assert_int_equal(gm_job_check(&d[3], &lim, msg, 4), GM_EDIM);
	assert_string_equal(msg, "n=7");
	assert_int_equal(gm_job_check(&d[3], &lim, NULL, 0), GM_EDIM);
}

/* ---- round trips ---- */

/* Field by field: the struct has padding that no decoder writes. */
static void assert_job_equal(const gm_job_desc *x, const gm_job_desc *y)
{
	assert_int_equal(x->dtype, y->dtype);
	assert_int_equal(x->trans_a, y->trans_a);
	assert_int_equal(x->trans_b, y->trans_b);
	assert_int_equal(x->layout, y->layout);
	assert_int_equal(x->kernel, y->kernel);
	assert_int_equal(x->flags, y->flags);
	assert_int_equal(x->m, y->m);
	assert_int_equal(x->n, y->n);
	assert_int_equal(x->k, y->k);
	assert_memory_equal(&x->alpha, &y->alpha, sizeof(double));
	assert_memory_equal(&x->beta, &y->beta, sizeof(double));
}

static void check_jobs_match(const uint8_t *p, size_t len, const gm_job_desc *d,
			     uint32_t n)
{
	const uint8_t *a, *b, *c;
	gm_job_iter it;
	gm_job_desc got;
	gm_job_sizes sz;
	uint32_t i;

	gm_proto_jobs_begin(p, len, &it);
	for (i = 0; i < n; i++) {
		assert_int_equal(gm_proto_jobs_next(&it, &got, &a, &b, &c),
				 GM_OK);
		assert_job_equal(&got, &d[i]);
		gm_job_sizes_of(&d[i], &sz);
		assert_true(same(a, sz.a, (uint8_t)(16 * i)));
		assert_true(same(b, sz.b, (uint8_t)(16 * i + 1)));
		if (d[i].flags & GM_JOB_HAS_C)
			assert_true(same(c, sz.c, (uint8_t)(16 * i + 2)));
		else
			assert_null(c);
	}
	assert_int_equal(gm_proto_jobs_next(&it, &got, &a, &b, &c),
			 GM_ENOTFOUND);
}

static void test_gemm_round_trip(void **state)
{
	gm_job_desc d[5] = {
	    job(GM_FP64, 3, 5, 7), job(GM_FP32, 1, 1, 1), job(GM_TF32, 4, 2, 9),
	    job(GM_FP16, 8, 3, 1), job(GM_BF16, 2, 6, 5),
	};
	gm_batch b = {.priority = 3,
		      .deadline_ms = 2500,
		      .flags = GM_BATCH_DETACH},
		 got_b;
	gm_limits lim = {.max_jobs = 5, .max_dim = 9, .max_job_bytes = 1024};
	char msg[MSG_LEN];
	uint64_t size;
	size_t off, len;
	gm_hdr h;

	(void)state;
	/* Every field away from its zero default somewhere in the batch. */
	d[0].trans_a = 1;
	d[0].flags = GM_JOB_HAS_C;
	d[0].beta = -0.5;
	d[1].trans_b = 1;
	d[1].layout = GM_COL_MAJOR;
	d[1].kernel = GM_KERNEL_CUBLAS;
	d[2].kernel = GM_KERNEL_TILED;
	d[2].alpha = 1e300;
	d[3].trans_a = 1;
	d[3].trans_b = 1;
	d[3].flags = GM_JOB_HAS_C;
	d[3].beta = 2.0;
	d[4].layout = GM_COL_MAJOR;
	d[4].alpha = -3.25;
	d[4].flags = GM_JOB_HAS_C;

	for (off = 0; off < 4; off++) {
		uint8_t *p = buf + off;

		len = put_request(p, sizeof(buf) - off,
				  0x0102030405060708u + off, &b, d, 5);
		assert_int_equal(gm_proto_gemm_size(d, 5, &size), GM_OK);
		assert_int_equal(size, len);
		assert_int_equal(gm_proto_check_gemm(p, len, &lim, &h, &got_b,
						     msg, sizeof(msg)),
				 GM_OK);
		assert_int_equal(h.id, 0x0102030405060708u + off);
		assert_int_equal(h.type, GM_MSG_GEMM);
		assert_int_equal(h.version, GM_PROTO_VERSION);
		assert_int_equal(h.count, 5);
		assert_int_equal(got_b.priority, 3);
		assert_int_equal(got_b.deadline_ms, 2500);
		assert_int_equal(got_b.flags, GM_BATCH_DETACH);
		check_jobs_match(p, len, d, 5);
	}
}

static void test_gemm_size_errors(void **state)
{
	gm_job_desc d[2] = {job(GM_FP64, 1, 1, 1),
			    job(GM_FP64, UINT32_MAX, 1, UINT32_MAX)};
	uint64_t size = 1;

	(void)state;
	assert_int_equal(gm_proto_gemm_size(d, 2, &size), GM_EOVERFLOW);
	assert_int_equal(size, 0);
	d[1] = job(0, 1, 1, 1);
	assert_int_equal(gm_proto_gemm_size(d, 2, &size), GM_EDTYPE);
	assert_int_equal(gm_proto_gemm_size(d, 1, &size), GM_OK);
	assert_int_equal(size,
			 GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE + 16);
}

/* Reply: an fp32 2x3 result, a failed job, an fp16 1x4 result. */
static size_t put_reply(uint8_t *p, uint64_t id, gm_reply_job *r)
{
	uint8_t *q = p + GM_HDR_SIZE;
	int i;

	memset(r, 0, 3 * sizeof(*r));
	r[0] = (gm_reply_job){.status = GM_OK,
			      .dtype = GM_FP32,
			      .m = 2,
			      .n = 3,
			      .result_bytes = 24};
	r[0].t = (gm_timings){1.5, 2.25, 30.0, 2.5, 41.0};
	r[1] = (gm_reply_job){.status = GM_EUNSUPPORTED,
			      .dtype = GM_BF16,
			      .layout = GM_COL_MAJOR,
			      .m = 9,
			      .n = 9};
	snprintf(r[1].message, sizeof(r[1].message),
		 "job 1: kernel=2 does not support bf16");
	r[2] = (gm_reply_job){.status = GM_OK,
			      .dtype = GM_FP16,
			      .layout = GM_COL_MAJOR,
			      .m = 1,
			      .n = 4,
			      .result_bytes = 8};
	gm_proto_put_hdr(p, GM_MSG_GEMM_REPLY, id, 3);
	for (i = 0; i < 3; i++) {
		gm_proto_put_reply_job(q, &r[i]);
		q += GM_REPLY_JOB_SIZE;
		fill(q, r[i].result_bytes, (uint8_t)(40 + i));
		q += r[i].result_bytes;
	}
	return (size_t)(q - p);
}

static void test_reply_round_trip(void **state)
{
	gm_reply_job r[3], got;
	gm_job_iter it;
	char msg[MSG_LEN];
	size_t len;
	int i;

	(void)state;
	len = put_reply(buf + 1, 99, r);
	assert_int_equal(len, GM_HDR_SIZE + 3 * GM_REPLY_JOB_SIZE + 24 + 8);
	assert_int_equal(
	    gm_proto_check_reply(buf + 1, len, 99, 3, msg, sizeof(msg)), GM_OK);
	gm_proto_reply_begin(buf + 1, len, &it);
	for (i = 0; i < 3; i++) {
		assert_int_equal(gm_proto_reply_next(&it, &got), GM_OK);
		assert_int_equal(got.status, r[i].status);
		assert_int_equal(got.dtype, r[i].dtype);
		assert_int_equal(got.layout, r[i].layout);
		assert_int_equal(got.m, r[i].m);
		assert_int_equal(got.n, r[i].n);
		assert_memory_equal(&got.t, &r[i].t, sizeof(got.t));
		assert_int_equal(got.result_bytes, r[i].result_bytes);
		assert_string_equal(got.message, r[i].message);
		if (r[i].result_bytes == 0)
			assert_null(got.result);
		else
			assert_true(same(got.result, r[i].result_bytes,
					 (uint8_t)(40 + i)));
	}
	assert_int_equal(gm_proto_reply_next(&it, &got), GM_ENOTFOUND);
}

static void test_error_round_trip(void **state)
{
	char text[GM_MSG_TEXT + 1], msg[MSG_LEN];
	uint32_t status;
	gm_hdr h;

	(void)state;
	gm_proto_put_error(buf + 3, 42, GM_EBUSY, "queue full: 512 jobs");
	assert_int_equal(gm_proto_get_hdr(buf + 3, GM_HDR_SIZE + GM_ERROR_SIZE,
					  &h, msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(h.type, GM_MSG_ERROR);
	assert_int_equal(h.id, 42);
	assert_int_equal(h.count, GM_ERROR_SIZE);
	assert_int_equal(gm_proto_get_error(buf + 3,
					    GM_HDR_SIZE + GM_ERROR_SIZE,
					    &status, text),
			 GM_OK);
	assert_int_equal(status, GM_EBUSY);
	assert_string_equal(text, "queue full: 512 jobs");

	gm_proto_put_error(buf, 0, GM_ESHUTDOWN, NULL);
	assert_int_equal(
	    gm_proto_get_error(buf, GM_HDR_SIZE + GM_ERROR_SIZE, &status, text),
	    GM_OK);
	assert_string_equal(text, gm_strerror(GM_ESHUTDOWN));
}

/* A message field keeps 95 bytes and never splits a UTF-8 character. */
static void test_message_text_cut(void **state)
{
	char longer[200], text[GM_MSG_TEXT + 1];
	uint32_t status;

	(void)state;
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	gm_proto_put_error(buf, 1, GM_EINVAL, longer);
	assert_int_equal(buf[GM_HDR_SIZE + 8 + GM_MSG_TEXT - 1], 0);
	gm_proto_get_error(buf, GM_HDR_SIZE + GM_ERROR_SIZE, &status, text);
	assert_int_equal(strlen(text), GM_MSG_TEXT - 1);

	/* "é" (c3 a9) straddling byte 95 is dropped whole. */
	longer[94] = (char)0xc3;
	longer[95] = (char)0xa9;
	gm_proto_put_error(buf, 1, GM_EINVAL, longer);
	gm_proto_get_error(buf, GM_HDR_SIZE + GM_ERROR_SIZE, &status, text);
	assert_int_equal(strlen(text), 94);
}

static void test_ctrl_header(void **state)
{
	static const char body[] = "{\"op\":\"ping\"}";
	size_t n = sizeof(body) - 1;
	char msg[MSG_LEN];
	gm_hdr h;

	(void)state;
	gm_proto_put_hdr(buf + 1, GM_MSG_CTRL, 5, (uint32_t)n);
	memcpy(buf + 1 + GM_HDR_SIZE, body, n);
	assert_int_equal(
	    gm_proto_get_hdr(buf + 1, GM_HDR_SIZE + n, &h, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(h.type, GM_MSG_CTRL);
	assert_int_equal(h.count, n);
	assert_int_equal(h.id, 5);
	assert_int_equal(gm_proto_get_hdr(buf + 1, GM_HDR_SIZE + n - 1, &h, msg,
					  sizeof(msg)),
			 GM_ETRUNC);
	assert_int_equal(gm_proto_get_hdr(buf + 1, GM_HDR_SIZE + n + 1, &h, msg,
					  sizeof(msg)),
			 GM_ETRAILING);
	gm_proto_put_hdr(buf, GM_MSG_CTRL_REPLY, 5, 0);
	assert_int_equal(
	    gm_proto_get_hdr(buf, GM_HDR_SIZE, &h, msg, sizeof(msg)), GM_OK);
	assert_int_equal(
	    gm_proto_get_hdr(buf, GM_HDR_SIZE + 1, &h, msg, sizeof(msg)),
	    GM_ETRAILING);
}

/* A refusal echoes the id whenever the bytes that carry it arrived. */
static void test_id_echo(void **state)
{
	char msg[MSG_LEN];
	gm_batch b;
	gm_hdr h;

	(void)state;
	gm_proto_put_hdr(buf, GM_MSG_GEMM, 0xfeedfacecafebeefu, 1);
	assert_int_equal(gm_proto_get_hdr(buf, 16, &h, msg, sizeof(msg)),
			 GM_ETRUNC);
	assert_int_equal(h.id, 0xfeedfacecafebeefu);
	assert_int_equal(gm_proto_get_hdr(buf, 15, &h, msg, sizeof(msg)),
			 GM_ETRUNC);
	assert_int_equal(h.id, 0);
	buf[0] = 'X';
	assert_int_equal(gm_proto_check_gemm(buf, GM_HDR_SIZE, &lim_small, &h,
					     &b, msg, sizeof(msg)),
			 GM_EMAGIC);
	assert_int_equal(h.id, 0xfeedfacecafebeefu);
}

/* ---- the example of PROTOCOL.md, byte for byte ---- */

static const uint8_t example_request[104] = {
    0x47, 0x45, 0x4d, 0x4d, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x40,
};

/* The 160-byte reply job of the example; the result 6.0 follows it. */
static const uint8_t example_reply_head[24 + 64] = {
    0x47, 0x45, 0x4d, 0x4d, 0x01, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x29, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x40, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x44, 0x40, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void test_protocol_example(void **state)
{
	const gm_limits lim = {1, 1, 16};
	gm_job_desc d = job(GM_FP64, 1, 1, 1);
	gm_batch b = {.priority = GM_BATCH_PRIO_DEFAULT};
	gm_reply_job r = {.status = GM_OK,
			  .dtype = GM_FP64,
			  .m = 1,
			  .n = 1,
			  .t = {12.5, 0.0, 3.25, 0.0, 40.0},
			  .result_bytes = 8};
	const double a = 2.0, bv = 3.0, c = 6.0;
	uint8_t out[GM_HDR_SIZE + GM_REPLY_JOB_SIZE + 8];
	char msg[MSG_LEN];
	gm_hdr h;

	(void)state;
	gm_proto_put_hdr(buf, GM_MSG_GEMM, 1, 1);
	gm_proto_put_batch(buf + GM_HDR_SIZE, &b);
	gm_proto_put_job(buf + GM_HDR_SIZE + GM_BATCH_SIZE, &d);
	memcpy(buf + 88, &a, 8); /* the test host is little-endian */
	memcpy(buf + 96, &bv, 8);
	assert_memory_equal(buf, example_request, sizeof(example_request));
	assert_int_equal(gm_proto_check_gemm(example_request,
					     sizeof(example_request), &lim, &h,
					     &b, msg, sizeof(msg)),
			 GM_OK);

	memset(out, 0xee, sizeof(out));
	gm_proto_put_hdr(out, GM_MSG_GEMM_REPLY, 1, 1);
	gm_proto_put_reply_job(out + GM_HDR_SIZE, &r);
	memcpy(out + GM_HDR_SIZE + GM_REPLY_JOB_SIZE, &c, 8);
	assert_memory_equal(out, example_reply_head,
			    sizeof(example_reply_head));
	for (size_t i = 24 + 64; i < 24 + 160; i++)
		assert_int_equal(out[i], 0);
	assert_int_equal(
	    gm_proto_check_reply(out, sizeof(out), 1, 1, msg, sizeof(msg)),
	    GM_OK);
}

/* ---- boundaries that must be accepted ---- */

static void test_accept_max_dim_exactly(void **state)
{
	gm_limits lim = {
	    .max_jobs = 1, .max_dim = 64, .max_job_bytes = 1u << 20};
	gm_job_desc d = job(GM_FP64, 64, 64, 64);
	gm_batch b = {0};
	char msg[MSG_LEN];
	size_t len;
	gm_hdr h;

	(void)state;
	d.flags = GM_JOB_HAS_C;
	len = put_request(buf, sizeof(buf), 1, &b, &d, 1);
	/* A + B + C is exactly 3 * 64 * 64 * 8 bytes: at the limit, not over.
	 */
	lim.max_job_bytes = 3 * 64 * 64 * 8;
	assert_int_equal(
	    gm_proto_check_gemm(buf, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_OK);
	lim.max_job_bytes--;
	assert_int_equal(
	    gm_proto_check_gemm(buf, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_ETOOBIG);
	lim.max_job_bytes++;
	lim.max_dim = 63;
	assert_int_equal(
	    gm_proto_check_gemm(buf, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_EDIM);
}

static void test_accept_hard_ceiling_dim(void **state)
{
	/* Configured limits above the ceilings are held to the ceilings. */
	gm_limits lim = {UINT32_MAX, UINT32_MAX, UINT64_MAX};
	gm_job_desc d = job(GM_FP16, GM_MAX_DIM, 1, 1);
	char msg[MSG_LEN];

	(void)state;
	assert_int_equal(gm_job_check(&d, &lim, msg, sizeof(msg)), GM_OK);
	d.m = GM_MAX_DIM + 1;
	assert_int_equal(gm_job_check(&d, &lim, msg, sizeof(msg)), GM_EDIM);
	assert_string_equal(msg, "m=1048577, must be 1..1048576");
}

static void test_accept_max_jobs_exactly(void **state)
{
	static gm_job_desc d[GM_MAX_JOBS];
	gm_limits lim = {GM_MAX_JOBS, 1, 8};
	gm_batch b = {.priority = 0};
	char msg[MSG_LEN];
	static uint8_t big[GM_HDR_SIZE + GM_BATCH_SIZE +
			   GM_MAX_JOBS * (GM_JOB_HDR_SIZE + 4)];
	uint32_t i;
	size_t len;
	gm_hdr h;

	(void)state;
	for (i = 0; i < GM_MAX_JOBS; i++)
		d[i] = job(GM_FP16, 1, 1, 1);
	len = put_request(big, sizeof(big), 3, &b, d, GM_MAX_JOBS);
	assert_int_equal(len, sizeof(big));
	assert_int_equal(
	    gm_proto_check_gemm(big, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(h.count, GM_MAX_JOBS);
	lim.max_jobs = GM_MAX_JOBS - 1;
	assert_int_equal(
	    gm_proto_check_gemm(big, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_ETOOMANY);
}

static void test_get_error_malformed(void **state)
{
	char text[GM_MSG_TEXT + 1];
	uint32_t status;

	(void)state;
	gm_proto_put_error(buf, 1, GM_EBUSY, "busy");
	assert_int_equal(gm_proto_get_error(buf,
					    GM_HDR_SIZE + GM_ERROR_SIZE - 1,
					    &status, text),
			 GM_ETRUNC);
	buf[GM_HDR_SIZE + 4] = 1;
	assert_int_equal(
	    gm_proto_get_error(buf, GM_HDR_SIZE + GM_ERROR_SIZE, &status, text),
	    GM_EFIELD);
	gm_proto_put_hdr(buf, GM_MSG_ERROR, 1, 8);
	assert_int_equal(
	    gm_proto_get_error(buf, GM_HDR_SIZE + 8, &status, text), GM_EFIELD);
	gm_proto_put_hdr(buf, GM_MSG_CTRL_REPLY, 1, GM_ERROR_SIZE);
	assert_int_equal(
	    gm_proto_get_error(buf, GM_HDR_SIZE + GM_ERROR_SIZE, &status, text),
	    GM_EMSGTYPE);
}

/* ---- tables of malformed messages ---- */

struct patch {
	size_t off;
	int width; /* bytes, little-endian; 0 ends the list */
	uint64_t val;
};

struct bad_case {
	const char *name;
	int want;
	long delta;	   /* bytes added (zeros) or, when negative, cut */
	size_t keep;	   /* when nonzero, the message's whole length */
	struct patch p[4]; /* applied before the length changes */
};

static size_t apply(uint8_t *p, size_t len, const struct bad_case *c)
{
	int i, j;

	for (i = 0; i < 4 && c->p[i].width != 0; i++)
		for (j = 0; j < c->p[i].width; j++)
			p[c->p[i].off + j] = (uint8_t)(c->p[i].val >> (8 * j));
	if (c->keep != 0)
		return c->keep;
	if (c->delta > 0)
		memset(p + len, 0, (size_t)c->delta);
	return (size_t)((long)len + c->delta);
}

static int report(const struct bad_case *c, int rv, const char *msg)
{
	if (rv != c->want)
		print_error("case \"%s\": got %s (%s), want %s\n", c->name,
			    gm_errname(rv), msg, gm_errname(c->want));
	else if (rv != GM_OK && msg[0] == '\0')
		print_error("case \"%s\": no message\n", c->name);
	return rv != c->want || (rv != GM_OK && msg[0] == '\0');
}

#define H(x) (x)
#define B(x) (GM_HDR_SIZE + (x))
#define J(x) (GM_HDR_SIZE + GM_BATCH_SIZE + (x))
/* Patches of job 0's m, n and k. */
/* clang-format off */
#define JM(v) {J(8), 4, (v)}
#define JN(v) {J(12), 4, (v)}
#define JK(v) {J(16), 4, (v)}
/* clang-format on */

#define F64_NAN	   0x7ff8000000000000u
#define F64_NEGINF 0xfff0000000000000u
#define U32_MAX	   UINT32_MAX
#define P30	   (1u << 30)
#define P31	   (1u << 31)

/* Against one fp32 2x3x4 job with C (104 payload bytes, 192 in all) and
 * lim_small (4 jobs, dims up to 64, 4096 bytes a job). */
static const struct bad_case bad_requests[] = {
    {"shorter than a header", GM_ETRUNC, 0, 10, {{0}}},
    {"header, no batch", GM_ETRUNC, 0, GM_HDR_SIZE, {{0}}},
    {"batch cut short", GM_ETRUNC, 0, B(8), {{0}}},
    {"bad magic", GM_EMAGIC, 0, 0, {{H(0), 4, 0x4d4d4548}}},
    {"big-endian magic", GM_EMAGIC, 0, 0, {{H(0), 4, 0x47454d4d}}},
    {"version 0", GM_EVERSION, 0, 0, {{H(4), 2, 0}}},
    {"version 2", GM_EVERSION, 0, 0, {{H(4), 2, 2}}},
    {"magic beats version", GM_EMAGIC, 0, 0, {{H(0), 1, 0}, {H(4), 2, 9}}},
    {"type 0", GM_EMSGTYPE, 0, 0, {{H(6), 2, 0}}},
    {"type 6", GM_EMSGTYPE, 0, 0, {{H(6), 2, 6}}},
    {"a CTRL", GM_EMSGTYPE, 0, 0, {{H(6), 2, GM_MSG_CTRL}}},
    {"a GEMM_REPLY", GM_EMSGTYPE, 0, 0, {{H(6), 2, GM_MSG_GEMM_REPLY}}},
    {"header flags", GM_EFIELD, 0, 0, {{H(20), 4, 0x80000000u}}},
    {"count 0", GM_EFIELD, 0, 0, {{H(16), 4, 0}}},
    {"count over max_jobs", GM_ETOOMANY, 0, 0, {{H(16), 4, 5}}},
    {"count over the ceiling", GM_ETOOMANY, 0, 0, {{H(16), 4, U32_MAX}}},
    {"count lies: no room", GM_ETRUNC, 0, 0, {{H(16), 4, 4}}},
    {"count lies: job 1 missing", GM_ETRUNC, 0, 0, {{H(16), 4, 2}}},
    {"priority 4", GM_EFIELD, 0, 0, {{B(0), 1, 4}}},
    {"batch reserved byte", GM_EFIELD, 0, 0, {{B(3), 1, 1}}},
    {"batch flag bit 1", GM_EFIELD, 0, 0, {{B(8), 4, 2}}},
    {"batch flag bit 31", GM_EFIELD, 0, 0, {{B(8), 4, 0x80000001u}}},
    {"batch reserved word", GM_EFIELD, 0, 0, {{B(12), 4, 1}}},
    {"dtype 0", GM_EDTYPE, 0, 0, {{J(0), 1, 0}}},
    {"dtype 6", GM_EDTYPE, 0, 0, {{J(0), 1, 6}}},
    {"dtype beats dims", GM_EDTYPE, 0, 0, {{J(0), 1, 200}, JM(0)}},
    {"trans_a 2", GM_EFIELD, 0, 0, {{J(1), 1, 2}}},
    {"trans_b 255", GM_EFIELD, 0, 0, {{J(2), 1, 255}}},
    {"layout 2", GM_EFIELD, 0, 0, {{J(3), 1, 2}}},
    {"kernel 3", GM_EFIELD, 0, 0, {{J(4), 1, 3}}},
    {"unknown job flag", GM_EFIELD, 0, 0, {{J(5), 1, 0x81}}},
    {"job reserved 6..7", GM_EFIELD, 0, 0, {{J(6), 2, 1}}},
    {"job reserved 20..23", GM_EFIELD, 0, 0, {{J(20), 4, 1}}},
    {"reserved beats dims", GM_EFIELD, 0, 0, {{J(20), 4, 1}, JM(0)}},
    {"alpha NaN", GM_EFIELD, 0, 0, {{J(24), 8, F64_NAN}}},
    {"beta -inf", GM_EFIELD, 0, 0, {{J(32), 8, F64_NEGINF}}},
    {"m 0", GM_EDIM, 0, 0, {JM(0)}},
    {"n 0", GM_EDIM, 0, 0, {JN(0)}},
    {"k 0", GM_EDIM, 0, 0, {JK(0)}},
    {"m over max_dim", GM_EDIM, 0, 0, {JM(65)}},
    {"k over max_dim", GM_EDIM, 0, 0, {JK(65)}},
    {"A bytes overflow", GM_EOVERFLOW, 0, 0, {JM(U32_MAX), JK(U32_MAX)}},
    {"A+B+C overflows", GM_EOVERFLOW, 0, 0, {JM(P30), JN(P30), JK(P31)}},
    {"over max_job_bytes", GM_ETOOBIG, 0, 0, {JM(64), JN(64), JK(64)}},
    {"payload_bytes short", GM_EFIELD, 0, 0, {{J(40), 8, 103}}},
    {"payload_bytes huge", GM_EFIELD, 0, 0, {{J(40), 8, UINT64_MAX}}},
    {"C sent, flag clear", GM_EFIELD, 0, 0, {{J(5), 1, 0}}},
    {"payload cut short", GM_ETRUNC, -1, 0, {{0}}},
    {"job header cut short", GM_ETRUNC, 0, J(40), {{0}}},
    {"one trailing byte", GM_ETRAILING, 1, 0, {{0}}},
    {"two requests in one", GM_ETRAILING, 192, 0, {{0}}},
    {"deadline: accepted", GM_OK, 0, 0, {{B(4), 4, U32_MAX}}},
    {"priority 3: accepted", GM_OK, 0, 0, {{B(0), 1, 3}}},
};

static void test_bad_requests(void **state)
{
	gm_job_desc d = job(GM_FP32, 2, 3, 4);
	gm_batch b = {.priority = 2}, got_b;
	char msg[MSG_LEN];
	size_t i, base, len;
	int failed = 0, rv;
	gm_hdr h;

	(void)state;
	d.flags = GM_JOB_HAS_C;
	for (i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++) {
		base = put_request(buf + 1, sizeof(buf) - 1, 77, &b, &d, 1);
		assert_int_equal(base, 192);
		len = apply(buf + 1, base, &bad_requests[i]);
		msg[0] = '\0';
		rv = gm_proto_check_gemm(buf + 1, len, &lim_small, &h, &got_b,
					 msg, sizeof(msg));
		failed += report(&bad_requests[i], rv, msg);
		if (len >= 16)
			assert_int_equal(h.id, 77);
	}
	assert_int_equal(failed, 0);
}

#define R0(x) (GM_HDR_SIZE + (x))
#define R1(x) (GM_HDR_SIZE + GM_REPLY_JOB_SIZE + 24 + (x))

/* Against put_reply's three jobs (fp32 2x3, failed, fp16 1x4), id 99. */
static const struct bad_case bad_replies[] = {
    {"bad magic", GM_EMAGIC, 0, 0, {{H(0), 1, 'g'}}},
    {"a GEMM request", GM_EMSGTYPE, 0, 0, {{H(6), 2, GM_MSG_GEMM}}},
    {"an ERROR", GM_EMSGTYPE, 0, 0, {{H(6), 2, GM_MSG_ERROR}}},
    {"another request's id", GM_EFIELD, 0, 0, {{H(8), 8, 98}}},
    {"fewer jobs than asked", GM_EFIELD, 0, 0, {{H(16), 4, 2}}},
    {"header flags", GM_EFIELD, 0, 0, {{H(20), 4, 1}}},
    {"job headers cannot fit", GM_ETRUNC, 0, GM_HDR_SIZE + 400, {{0}}},
    {"reserved bytes", GM_EFIELD, 0, 0, {{R0(6), 2, 1}}},
    {"ok, unknown dtype", GM_EDTYPE, 0, 0, {{R0(4), 1, 9}}},
    {"ok, layout 2", GM_EFIELD, 0, 0, {{R0(5), 1, 2}}},
    {"ok, m 0", GM_EDIM, 0, 0, {{R0(8), 4, 0}}},
    {"ok, n over the ceiling", GM_EDIM, 0, 0, {{R0(12), 4, 1u << 21}}},
    {"ok, result_bytes short", GM_EFIELD, 0, 0, {{R0(56), 8, 16}}},
    {"failed, with a result", GM_EFIELD, 0, 0, {{R1(56), 8, 8}}},
    {"failed, bad dtype echoed: ok", GM_OK, 0, 0, {{R1(4), 1, 77}}},
    {"result cut short", GM_ETRUNC, -1, 0, {{0}}},
    {"one trailing byte", GM_ETRAILING, 1, 0, {{0}}},
};

static void test_bad_replies(void **state)
{
	gm_reply_job r[3];
	char msg[MSG_LEN];
	size_t i, base, len;
	int failed = 0, rv;

	(void)state;
	for (i = 0; i < sizeof(bad_replies) / sizeof(bad_replies[0]); i++) {
		base = put_reply(buf + 1, 99, r);
		len = apply(buf + 1, base, &bad_replies[i]);
		msg[0] = '\0';
		rv =
		    gm_proto_check_reply(buf + 1, len, 99, 3, msg, sizeof(msg));
		failed += report(&bad_replies[i], rv, msg);
	}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dtype_tables),
	    cmocka_unit_test(test_job_sizes),
	    cmocka_unit_test(test_job_flops),
	    cmocka_unit_test(test_job_check_messages),
	    cmocka_unit_test(test_gemm_round_trip),
	    cmocka_unit_test(test_gemm_size_errors),
	    cmocka_unit_test(test_reply_round_trip),
	    cmocka_unit_test(test_error_round_trip),
	    cmocka_unit_test(test_message_text_cut),
	    cmocka_unit_test(test_ctrl_header),
	    cmocka_unit_test(test_id_echo),
	    cmocka_unit_test(test_protocol_example),
	    cmocka_unit_test(test_accept_max_dim_exactly),
	    cmocka_unit_test(test_accept_hard_ceiling_dim),
	    cmocka_unit_test(test_accept_max_jobs_exactly),
	    cmocka_unit_test(test_get_error_malformed),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_bad_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
