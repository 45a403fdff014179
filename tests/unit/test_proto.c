/*
 * test_proto.c - unit tests for proto/gm_proto, wire format v2: dtype
 * tables and job arithmetic; round trips of every frame type encoded at
 * odd addresses. PROTOCOL.md's examples, streams and accepted
 * boundaries are in test_proto_stream.c, the tables of malformed frames
 * in test_proto_bad.c; what they share in proto_fx.h.
 */
#include "proto_fx.h"

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

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
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
	gm_limits lim = lim_open;
	gm_job_desc d[4] = {job(GM_FP32, 2, 2, 2), job(GM_FP32, 2, 2, 2),
			    job(GM_FP32, 2, 2, 2), job(GM_FP32, 2, 2, 2)};
	gm_batch b = {.priority = GM_BATCH_PRIO_DEFAULT};
	gm_hdr h;
	size_t len;

	(void)state;
	lim.max_dim = 65536;
	d[3].m = 0;
	assert_int_equal(gm_job_check(&d[3], &lim, msg, sizeof(msg)), GM_EDIM);
	assert_string_equal(msg, "m=0, must be 1..65536");

	d[3].m = 2;
	len = put_request(buf, sizeof(buf), 1, &b, d, NULL, 4);
	/* m of job 3: the job headers are back to back in v2. */
	put_le(buf + GM_HDR_SIZE + GM_BATCH_SIZE + 3 * GM_JOB_HDR_SIZE + 8, 4,
	       0);
	assert_int_equal(check_gemm(buf, len, &lim, &h, &b), GM_EDIM);
	assert_string_equal(msg, "job 3: m=0, must be 1..65536");
	/* payload_bytes of job 1, one short. */
	put_le(buf + GM_HDR_SIZE + GM_BATCH_SIZE + 3 * GM_JOB_HDR_SIZE + 8, 4,
	       2);
	put_le(buf + GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE + 40, 8, 31);
	assert_int_equal(check_gemm(buf, len, &lim, &h, &b), GM_EFIELD);
	assert_string_equal(msg, "job 1: payload_bytes=31, must be 32 "
				 "(A 16 + B 16 + C 0)");

	/* A short message buffer is cut, not overrun; none at all is fine. */
	assert_int_equal(gm_job_check(&d[3], &lim, msg, 4), GM_OK);
	d[3].n = 70000;
	assert_int_equal(gm_job_check(&d[3], &lim, msg, 4), GM_EDIM);
	assert_string_equal(msg, "n=7");
	assert_int_equal(gm_job_check(&d[3], &lim, NULL, 0), GM_EDIM);
}

/* ---- round trips, at odd addresses ---- */

/* The jobs of a request as put_request wrote them: descriptions,
 * descriptors, and each inline operand's bytes found where the iterator
 * says, over head, desc and payload wherever they are. */
static void check_jobs_match(const gm_hdr *h, const uint8_t *head,
			     const uint8_t *desc, const uint8_t *payload,
			     const gm_job_desc *d,
			     const gm_region_ref (*ref)[GM_OPND_COUNT])
{
	gm_job_operands ops;
	gm_job_desc got;
	gm_job_iter it;
	gm_job_sizes z;

	gm_proto_jobs_begin(&it, h, head, desc, payload);
	for (uint32_t i = 0; i < h->count; i++) {
		assert_int_equal(gm_proto_jobs_next(&it, &got, &ops), GM_OK);
		assert_job_equal(&got, &d[i]);
		if (d[i].flags & GM_JOB_REGIONS)
			assert_memory_equal(ops.ref, ref[i], sizeof(ops.ref));
		gm_job_sizes_of(&d[i], &z);
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
			uint64_t len = gm_operand_bytes(&z, op);

			if (len == 0 || gm_ref_in_region(ops.ref, op))
				assert_null(ops.data[op]);
			else
				assert_true(same(ops.data[op], len,
						 (uint8_t)(16 * i + op)));
		}
	}
	assert_int_equal(gm_proto_jobs_next(&it, &got, &ops), GM_ENOTFOUND);
}

/* Five plain jobs, one of each dtype, and three with regions mixed in. */
static void test_gemm_round_trip(void **state)
{
	gm_job_desc d[5] = {
	    job(GM_FP64, 3, 5, 7), job(GM_FP32, 1, 1, 1), job(GM_TF32, 4, 2, 9),
	    job(GM_FP16, 8, 3, 1), job(GM_BF16, 2, 6, 5),
	};
	gm_job_desc dr[3] = {job(GM_FP32, 2, 3, 4), job(GM_FP64, 2, 2, 2),
			     job(GM_FP16, 4, 4, 4)};
	const gm_region_ref ref[3][GM_OPND_COUNT] = {
	    [0] = {{RID, 0}, {0, 0}, {RID2, 8}, {RID, 1ull << 40}},
	    [2] = {{0, 0}, {RID2, 2}, {0, 0}, {0, 0}},
	};
	gm_batch b = {.priority = 3,
		      .deadline_ms = 2500,
		      .flags = GM_BATCH_DETACH},
		 got_b;
	gm_limits lim = lim_small;
	struct request r;
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
	dr[0].flags = GM_JOB_HAS_C | GM_JOB_REGIONS;
	dr[0].beta = -0.0;
	dr[1].flags = GM_JOB_HAS_C;
	dr[2].flags = GM_JOB_REGIONS;
	lim.max_jobs = 5;
	lim.max_frame = 4096;

	for (off = 1; off < 8; off += 2) {
		uint8_t *p = buf + off;

		len = put_request(p, sizeof(buf) - off,
				  0x0102030405060708u + off, &b, d, NULL, 5);
		assert_int_equal(gm_proto_gemm_size(d, 5, &size), GM_OK);
		assert_int_equal(size, len);
		assert_int_equal(check_gemm(p, len, &lim, &h, &got_b), GM_OK);
		assert_int_equal(h.id, 0x0102030405060708u + off);
		assert_int_equal(h.type, GM_MSG_GEMM);
		assert_int_equal(h.version, GM_PROTO_VERSION);
		assert_int_equal(h.count, 5);
		assert_int_equal(h.flags, 0);
		assert_int_equal(h.length, len - GM_HDR_SIZE);
		assert_int_equal(got_b.priority, 3);
		assert_int_equal(got_b.deadline_ms, 2500);
		assert_int_equal(got_b.flags, GM_BATCH_DETACH);
		check_jobs_match(&h, p + GM_HDR_SIZE, NULL,
				 p + GM_HDR_SIZE + gm_proto_head_size(&h), d,
				 NULL);
		/* The same frame read from a stream. */
		assert_int_equal(read_one(p, len, &lim, &r), GM_OK);
		assert_int_equal(r.ndesc, 0);
		check_jobs_match(&r.h, r.head, r.desc, r.body, d, NULL);
		request_free(&r);

		len = put_request(p, sizeof(buf) - off, 9, &b, dr, ref, 3);
		assert_int_equal(len, GM_HDR_SIZE + GM_BATCH_SIZE +
					  3 * GM_JOB_HDR_SIZE +
					  2 * GM_REGION_DESC_SIZE + 48 +
					  (32 + 32 + 32) + 32);
		assert_int_equal(check_gemm(p, len, &lim, &h, &got_b), GM_OK);
		check_jobs_match(&h, p + GM_HDR_SIZE,
				 p + GM_HDR_SIZE + gm_proto_head_size(&h),
				 p + GM_HDR_SIZE + gm_proto_head_size(&h) +
				     2 * GM_REGION_DESC_SIZE,
				 dr, ref);
		assert_int_equal(read_one(p, len, &lim, &r), GM_OK);
		assert_int_equal(r.ndesc, 2);
		assert_int_equal(r.payload_bytes, 48 + 96 + 32);
		check_jobs_match(&r.h, r.head, r.desc, r.body, dr, ref);
		request_free(&r);
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

/* The replies of a four-job request, one frame each, written back to
 * back at an odd address and in an order other than the jobs': an fp32
 * 2x3 result, a failed job, an fp16 1x4 column-major result, a result
 * that went to a region. */
static void test_reply_round_trip(void **state)
{
	gm_reply_job r[4] = {
	    {.status = GM_OK,
	     .dtype = GM_FP32,
	     .m = 2,
	     .n = 3,
	     .result_bytes = 24,
	     .t = {1.5, 2.25, 30.0, 2.5, 41.0}},
	    {.status = GM_EUNSUPPORTED,
	     .dtype = GM_BF16,
	     .layout = GM_COL_MAJOR,
	     .m = 9,
	     .n = 9,
	     .t = {.total_us = 3}},
	    {.status = GM_OK,
	     .dtype = GM_FP16,
	     .layout = GM_COL_MAJOR,
	     .m = 1,
	     .n = 4,
	     .result_bytes = 8},
	    {.status = GM_OK,
	     .dtype = GM_FP64,
	     .m = 64,
	     .n = 64,
	     .t = {0.5, 0, 7.0, 0, 8.0}},
	};
	static const uint32_t order[4] = {2, 0, 3, 1};
	struct stream s;
	struct answer a;
	size_t len = 0;

	(void)state;
	snprintf(r[1].message, sizeof(r[1].message),
		 "job 1: kernel=2 does not support bf16");
	for (int i = 0; i < 4; i++)
		len += put_reply(buf + 3 + len, 99, order[i], &r[order[i]]);
	assert_int_equal(len, 4 * (GM_HDR_SIZE + GM_REPLY_JOB_SIZE) + 24 + 8);
	s = (struct stream){buf + 3, len, 0, 0};
	for (int i = 0; i < 4; i++) {
		const gm_reply_job *w = &r[order[i]];

		assert_int_equal(read_answer(&s, 4, &a), GM_OK);
		assert_int_equal(a.h.type, GM_MSG_GEMM_REPLY);
		assert_int_equal(a.h.id, 99);
		assert_int_equal(a.h.count, order[i]);
		assert_int_equal(a.r.status, w->status);
		assert_int_equal(a.r.dtype, w->dtype);
		assert_int_equal(a.r.layout, w->layout);
		assert_int_equal(a.r.m, w->m);
		assert_int_equal(a.r.n, w->n);
		assert_memory_equal(&a.r.t, &w->t, sizeof(a.r.t));
		assert_int_equal(a.r.result_bytes, w->result_bytes);
		assert_string_equal(a.r.message, w->message);
		assert_true(
		    same(a.result, w->result_bytes, (uint8_t)(40 + order[i])));
		exact_free(a.result);
	}
	assert_int_equal(s.pos, len);
}

static void test_error_round_trip(void **state)
{
	struct stream s;
	struct answer a;

	(void)state;
	gm_proto_put_error(buf + 3, 42, GM_EBUSY, "queue full: 512 jobs");
	s = (struct stream){buf + 3, GM_HDR_SIZE + GM_ERROR_SIZE, 0, 0};
	assert_int_equal(read_answer(&s, 1, &a), GM_OK);
	assert_int_equal(a.h.type, GM_MSG_ERROR);
	assert_int_equal(a.h.id, 42);
	assert_int_equal(a.h.count, 0);
	assert_int_equal(a.h.length, GM_ERROR_SIZE);
	assert_int_equal(a.status, GM_EBUSY);
	assert_string_equal(a.text, "queue full: 512 jobs");

	gm_proto_put_error(buf + 1, 0, GM_ESHUTDOWN, NULL);
	s = (struct stream){buf + 1, GM_HDR_SIZE + GM_ERROR_SIZE, 0, 0};
	assert_int_equal(read_answer(&s, 1, &a), GM_OK);
	assert_int_equal(a.h.id, 0);
	assert_string_equal(a.text, gm_strerror(GM_ESHUTDOWN));
}

/* CTRL and CTRL_REPLY: a header and length bytes of JSON. */
static void test_ctrl_round_trip(void **state)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	static const char pong[] = "{\"ok\":true,\"draining\":false}";
	struct request r;
	gm_hdr h;

	(void)state;
	gm_proto_put_hdr(buf + 1, GM_MSG_CTRL, 5, 0, sizeof(ping) - 1);
	memcpy(buf + 1 + GM_HDR_SIZE, ping, sizeof(ping) - 1);
	assert_int_equal(
	    read_one(buf + 1, GM_HDR_SIZE + sizeof(ping) - 1, &lim_small, &r),
	    GM_OK);
	assert_int_equal(r.h.type, GM_MSG_CTRL);
	assert_int_equal(r.h.id, 5);
	assert_int_equal(r.h.count, 0);
	assert_int_equal(r.h.length, sizeof(ping) - 1);
	assert_memory_equal(r.body, ping, sizeof(ping) - 1);
	request_free(&r);

	gm_proto_put_hdr(buf + 3, GM_MSG_CTRL_REPLY, 5, 0, sizeof(pong) - 1);
	memcpy(buf + 3 + GM_HDR_SIZE, pong, sizeof(pong) - 1);
	assert_int_equal(
	    gm_proto_get_hdr(buf + 3, GM_HDR_SIZE, &h, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(h.type, GM_MSG_CTRL_REPLY);
	assert_int_equal(h.id, 5);
	assert_int_equal(h.length, sizeof(pong) - 1);
	/* A reply is no request. */
	assert_int_equal(
	    gm_proto_check_request(&h, &lim_small, msg, sizeof(msg)),
	    GM_EMSGTYPE);
}

/* A message field keeps 95 bytes and never splits a UTF-8 character;
 * a field of 96 bytes without a NUL (not what gemmd writes) is read as
 * 96 bytes. */
static void test_message_text_cut(void **state)
{
	char longer[200], text[GM_MSG_TEXT + 1];
	uint32_t status;
	gm_reply_job r;
	gm_hdr h;

	(void)state;
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	gm_proto_put_error(buf, 1, GM_EINVAL, longer);
	assert_int_equal(buf[GM_HDR_SIZE + 8 + GM_MSG_TEXT - 1], 0);
	assert_int_equal(gm_proto_get_hdr(buf, GM_HDR_SIZE, &h, NULL, 0),
			 GM_OK);
	assert_int_equal(
	    gm_proto_get_error(&h, buf + GM_HDR_SIZE, &status, text), GM_OK);
	assert_int_equal(strlen(text), GM_MSG_TEXT - 1);

	/* "é" (c3 a9) straddling byte 95 is dropped whole. */
	longer[94] = (char)0xc3;
	longer[95] = (char)0xa9;
	gm_proto_put_error(buf, 1, GM_EINVAL, longer);
	gm_proto_get_error(&h, buf + GM_HDR_SIZE, &status, text);
	assert_int_equal(strlen(text), 94);

	memset(buf + GM_HDR_SIZE + 8, 'y', GM_MSG_TEXT);
	gm_proto_get_error(&h, buf + GM_HDR_SIZE, &status, text);
	assert_int_equal(strlen(text), GM_MSG_TEXT);

	r = (gm_reply_job){.status = GM_EDIM};
	memcpy(r.message, longer, GM_MSG_TEXT);
	r.message[GM_MSG_TEXT] = '\0';
	put_reply(buf, 1, 0, &r);
	assert_int_equal(gm_proto_get_hdr(buf, GM_HDR_SIZE, &h, NULL, 0),
			 GM_OK);
	assert_int_equal(
	    gm_proto_get_reply_job(&h, buf + GM_HDR_SIZE, &r, NULL, 0), GM_OK);
	assert_int_equal(strlen(r.message), 94);
}

/* A refusal echoes the id whenever the bytes that carry it arrived. */
static void test_id_echo(void **state)
{
	gm_batch b;
	gm_hdr h;

	(void)state;
	gm_proto_put_hdr(buf, GM_MSG_GEMM, 0xfeedfacecafebeefu, 1, 64);
	assert_int_equal(gm_proto_get_hdr(buf, 16, &h, msg, sizeof(msg)),
			 GM_ETRUNC);
	assert_int_equal(h.id, 0xfeedfacecafebeefu);
	assert_int_equal(gm_proto_get_hdr(buf, 15, &h, msg, sizeof(msg)),
			 GM_ETRUNC);
	assert_int_equal(h.id, 0);
	buf[0] = 'X';
	assert_int_equal(
	    gm_proto_get_hdr(buf, GM_HDR_SIZE, &h, msg, sizeof(msg)),
	    GM_EMAGIC);
	assert_int_equal(h.id, 0xfeedfacecafebeefu);
	assert_int_equal(check_gemm(buf, GM_HDR_SIZE, &lim_small, &h, &b),
			 GM_EMAGIC);
	assert_int_equal(h.id, 0xfeedfacecafebeefu);
}

/* A header is judged on the part of it that came: each field as soon as
 * its bytes are in, the magic from its first byte; only a part that
 * shows nothing wrong is GM_ETRUNC (PROTOCOL.md 2.1). */
static void test_hdr_prefix(void **state)
{
	static const struct {
		const char *name;
		size_t len;
		size_t at; /* a byte set to val; at >= len: none */
		uint8_t val;
		int code;
	} rows[] = {
	    {"nothing yet", 0, 99, 0, GM_ETRUNC},
	    {"a first byte that is no magic's", 1, 0, 'X', GM_EMAGIC},
	    {"the magic's first byte", 1, 99, 0, GM_ETRUNC},
	    {"3 bytes of the magic", 3, 99, 0, GM_ETRUNC},
	    {"a third byte that is no magic's", 3, 2, 'X', GM_EMAGIC},
	    {"the magic big-endian, its first byte", 1, 0, 'M', GM_EMAGIC},
	    {"the magic, a version byte", 5, 4, 9, GM_ETRUNC},
	    {"version 9", 6, 4, 9, GM_EVERSION},
	    {"version 2, type 9", 8, 6, 9, GM_EMSGTYPE},
	    {"flags", 24, 20, 1, GM_EFIELD},
	    {"flags, one byte short", 23, 20, 1, GM_ETRUNC},
	    {"all but the length's last byte", 31, 99, 0, GM_ETRUNC},
	    {"whole", 32, 99, 0, GM_OK},
	    {"a wrong magic beats a wrong version", 6, 1, 'X', GM_EMAGIC},
	};
	gm_hdr h;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		uint8_t b[GM_HDR_SIZE];
		int rv;

		gm_proto_put_hdr(b, GM_MSG_CTRL, 42, 0, 13);
		if (rows[i].at < GM_HDR_SIZE)
			b[rows[i].at] = rows[i].val;
		if (rows[i].at == 1) /* the last row: version too */
			b[4] = 9;
		rv = gm_proto_get_hdr(b, rows[i].len, &h, msg, sizeof(msg));
		if (rv != rows[i].code)
			fail_msg("%s: got %s (%s), want %s", rows[i].name,
				 gm_errname(rv), msg, gm_errname(rows[i].code));
		assert_int_equal(h.id, rows[i].len >= 16 ? 42 : 0);
	}
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
	    cmocka_unit_test(test_ctrl_round_trip),
	    cmocka_unit_test(test_message_text_cut),
	    cmocka_unit_test(test_id_echo),
	    cmocka_unit_test(test_hdr_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
