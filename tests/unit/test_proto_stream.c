/*
 * test_proto_stream.c - unit tests for proto/gm_proto: the annotated
 * bytes of PROTOCOL.md's examples; the request checks run as a reader of
 * a byte stream runs them, each given only the bytes the checks before
 * it allow, in heap buffers of exactly that size (so that
 * AddressSanitizer reports a decoder that reads further); boundaries
 * that must be accepted.
 */
#include "proto_fx.h"

/* ---- PROTOCOL.md's examples, byte for byte ---- */

/* clang-format off */
/* §12: C = 1.0 * [2.0] * [3.0], id 1, priority 1. */
static const uint8_t example_request[112] = {
	0x47, 0x45, 0x4d, 0x4d, 0x02, 0x00, 0x01, 0x00, /* 0000 GEMM v2 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0008 id 1 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0010 count, flags */
	0x50, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0018 length 80 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0020 priority 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0028 flags */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0030 fp64 */
	0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* 0038 m 1, n 1 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0040 k 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, /* 0048 alpha 1.0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0050 beta 0.0 */
	0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0058 payload 16 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, /* 0060 A = [2.0] */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x40, /* 0068 B = [3.0] */
};

/* §12: its reply, to the end of total_us; result_bytes, 96 NUL bytes of
 * message and the result follow. */
static const uint8_t example_reply[104] = {
	0x47, 0x45, 0x4d, 0x4d, 0x02, 0x00, 0x02, 0x00, /* 0000 GEMM_REPLY */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0008 id 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0010 job 0 */
	0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0018 length 184 */
	0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* 0020 OK, fp64 */
	0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* 0028 m 1, n 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x29, 0x40, /* 0030 queue 12.5 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0038 h2d 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x40, /* 0040 kernel 3.25 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0048 d2h 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x44, 0x40, /* 0050 total 40.0 */
	0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0058 result 8 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0060 start 1 */
};

/* §12: the ERROR for a full queue, up to its NUL padding. */
static const uint8_t example_error[72] = {
	0x47, 0x45, 0x4d, 0x4d, 0x02, 0x00, 0x05, 0x00, /* 0000 ERROR */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0008 id 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0010 count, flags */
	0x68, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0018 length 104 */
	0x0e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0020 EBUSY */
	0x71, 0x75, 0x65, 0x75, 0x65, 0x20, 0x66, 0x75, /* 0028 "queue fu" */
	0x6c, 0x6c, 0x2c, 0x20, 0x74, 0x72, 0x79, 0x20, /* 0030 "ll, try " */
	0x61, 0x67, 0x61, 0x69, 0x6e, 0x20, 0x6c, 0x61, /* 0038 "again la" */
	0x74, 0x65, 0x72, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0040 "ter" */
};

/* §12: the header of a CTRL ping with id 7. */
static const uint8_t example_ping[32] = {
	0x47, 0x45, 0x4d, 0x4d, 0x02, 0x00, 0x03, 0x00, /* 0000 CTRL */
	0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0008 id 7 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0010 count, flags */
	0x0d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0018 length 13 */
};

/* §4.3: the header of the CTRL_REPLY to the example sent detached. */
static const uint8_t example_detached[32] = {
	0x47, 0x45, 0x4d, 0x4d, 0x02, 0x00, 0x04, 0x00, /* 0000 CTRL_REPLY */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0008 id 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0010 count, flags */
	0x25, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0018 length 37 */
};
/* clang-format on */

static void test_example_request(void **state)
{
	gm_limits lim = {1, 1, 16, 80, 0};
	gm_job_desc d = job(GM_FP64, 1, 1, 1), got;
	gm_batch b = {.priority = GM_BATCH_PRIO_DEFAULT};
	gm_job_operands ops;
	struct request r;
	gm_job_iter it;
	uint8_t *frame;
	gm_hdr h;

	(void)state;
	memset(buf, 0xee, 112);
	gm_proto_put_hdr(buf, GM_MSG_GEMM, 1, 1, 80);
	gm_proto_put_batch(buf + GM_HDR_SIZE, &b);
	gm_proto_put_job(buf + GM_HDR_SIZE + GM_BATCH_SIZE, &d);
	put_le(buf + 96, 8, 0x4000000000000000u);  /* 2.0 */
	put_le(buf + 104, 8, 0x4008000000000000u); /* 3.0 */
	assert_memory_equal(buf, example_request, sizeof(example_request));

	frame = exact(example_request, sizeof(example_request));
	assert_int_equal(
	    check_gemm(frame, sizeof(example_request), &lim, &h, &b), GM_OK);
	exact_free(frame);
	assert_int_equal(
	    read_one(example_request, sizeof(example_request), &lim, &r),
	    GM_OK);
	assert_int_equal(r.b.priority, 1);
	assert_int_equal(r.payload_bytes, 16);
	gm_proto_jobs_begin(&it, &r.h, r.head, r.desc, r.body);
	assert_int_equal(gm_proto_jobs_next(&it, &got, &ops), GM_OK);
	assert_job_equal(&got, &d);
	assert_int_equal(get_le(ops.data[GM_OPND_A], 8), 0x4000000000000000u);
	assert_int_equal(get_le(ops.data[GM_OPND_B], 8), 0x4008000000000000u);
	assert_null(ops.data[GM_OPND_C]);
	request_free(&r);

	/* §4.3: detached, it differs in the batch flags at 0x28. */
	memcpy(buf, example_request, sizeof(example_request));
	buf[0x28] = 0x01;
	assert_int_equal(read_one(buf, sizeof(example_request), &lim, &r),
			 GM_OK);
	assert_int_equal(r.b.flags, GM_BATCH_DETACH);
	request_free(&r);
}

static void test_example_reply(void **state)
{
	static const char json[] = "{\"ok\":true,\"jobs\":[1882517841903616]}";
	gm_reply_job rj = {.status = GM_OK,
			   .dtype = GM_FP64,
			   .m = 1,
			   .n = 1,
			   .t = {12.5, 0.0, 3.25, 0.0, 40.0, 1},
			   .result_bytes = 8};
	struct stream s;
	struct answer a;

	(void)state;
	memset(buf, 0xee, 216);
	gm_proto_put_hdr(buf, GM_MSG_GEMM_REPLY, 1, 0, 184);
	gm_proto_put_reply_job(buf + GM_HDR_SIZE, &rj);
	put_le(buf + 0xd0, 8, 0x4018000000000000u); /* 6.0 */
	assert_memory_equal(buf, example_reply, sizeof(example_reply));
	for (size_t i = 0x68; i < 0xd0; i++)
		assert_int_equal(buf[i], 0);
	s = (struct stream){buf, 216, 0, 0};
	assert_int_equal(read_answer(&s, 1, &a), GM_OK);
	assert_int_equal(get_le(a.result, 8), 0x4018000000000000u);
	assert_true(a.r.t.queue_us == 12.5 && a.r.t.total_us == 40.0);
	assert_int_equal(a.r.t.start_seq, 1);
	exact_free(a.result);
	assert_int_equal(s.pos, 216);

	/* §4.3: the detached request's answer, 69 bytes. */
	gm_proto_put_hdr(buf, GM_MSG_CTRL_REPLY, 1, 0, sizeof(json) - 1);
	assert_memory_equal(buf, example_detached, sizeof(example_detached));
	assert_int_equal(sizeof(example_detached) + sizeof(json) - 1, 69);
}

static void test_example_error(void **state)
{
	struct stream s;
	struct answer a;

	(void)state;
	memset(buf, 0xee, 140);
	gm_proto_put_error(buf, 1, GM_EBUSY, NULL);
	assert_memory_equal(buf, example_error, sizeof(example_error));
	for (size_t i = 0x48; i < 0x88; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(buf[0x88], 0xee);
	s = (struct stream){buf, 136, 0, 0};
	assert_int_equal(read_answer(&s, 1, &a), GM_OK);
	assert_int_equal(a.status, GM_EBUSY);
	assert_string_equal(a.text, "queue full, try again later");
}

static void test_example_ping(void **state)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	struct request r;

	(void)state;
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 7, 0, sizeof(ping) - 1);
	assert_memory_equal(buf, example_ping, sizeof(example_ping));
	memcpy(buf + GM_HDR_SIZE, ping, sizeof(ping) - 1);
	assert_int_equal(read_one(buf, 45, &lim_small, &r), GM_OK);
	assert_memory_equal(r.body, ping, 13);
	request_free(&r);
}

/* ---- streams ---- */

/*
 * Seven frames back to back on one connection. The reader takes each
 * frame's bytes as its checks allow; a refused request is answered and
 * the rest of its body discarded, so the next frame is found where the
 * refused one's length says; a header that fails its checks ends the
 * connection, since the next frame cannot be found.
 */
static void test_stream_pipelined(void **state)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	gm_job_desc d[2] = {job(GM_FP64, 2, 2, 2), job(GM_FP32, 3, 1, 2)};
	const gm_region_ref ref[2][GM_OPND_COUNT] = {
	    [0] = {{RID, 0}, {0, 0}, {0, 0}, {RID, 64}}};
	const gm_batch b = {.priority = 1};
	size_t len = 0, ends[8];
	struct request r;
	struct stream s;
	int i;

	(void)state;
	len += put_request(buf + len, sizeof(buf) - len, 1, &b, d, NULL, 2);
	ends[0] = len;
	gm_proto_put_hdr(buf + len, GM_MSG_CTRL, 2, 0, sizeof(ping) - 1);
	memcpy(buf + len + GM_HDR_SIZE, ping, sizeof(ping) - 1);
	len += GM_HDR_SIZE + sizeof(ping) - 1;
	ends[1] = len;
	d[0].flags = GM_JOB_REGIONS;
	len += put_request(buf + len, sizeof(buf) - len, 3, &b, d, ref, 2);
	ends[2] = len;
	/* Refused at its head: priority 9. */
	len += put_request(buf + len, sizeof(buf) - len, 4, &b, d, ref, 2);
	buf[ends[2] + GM_HDR_SIZE] = 9;
	ends[3] = len;
	/* Refused at its descriptors: job 1's payload_bytes one over. */
	len += put_request(buf + len, sizeof(buf) - len, 5, &b, d, ref, 2);
	put_le(buf + ends[3] + GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE +
		   40,
	       8, 25);
	ends[4] = len;
	/* The v1 handshake's bytes, not first on the connection. */
	len += put_request(buf + len, sizeof(buf) - len, 6, &b, d, ref, 2);
	memcpy(buf + ends[4], "\0SP\0", 4);
	ends[5] = len;

	s = (struct stream){buf, len, 0, 1};
	for (i = 0; i < 3; i++) {
		assert_int_equal(read_request(&s, &lim_small, &r), GM_OK);
		assert_int_equal(r.h.id, (uint64_t)i + 1);
		assert_int_equal(s.pos, ends[i]);
		request_free(&r);
	}
	assert_int_equal(read_request(&s, &lim_small, &r), GM_EFIELD);
	assert_int_equal(r.at, AT_HEAD);
	assert_int_equal(r.h.id, 4);
	request_free(&r);
	s.pos = ends[2] + GM_HDR_SIZE + (size_t)r.h.length;
	assert_int_equal(s.pos, ends[3]);
	assert_int_equal(read_request(&s, &lim_small, &r), GM_EFIELD);
	assert_int_equal(r.at, AT_DESCS);
	assert_int_equal(r.h.id, 5);
	assert_string_equal(msg, "job 1: payload_bytes=25, must be 32 "
				 "(A 24 + B 8 + C 0)");
	request_free(&r);
	s.pos = ends[3] + GM_HDR_SIZE + (size_t)r.h.length;
	assert_int_equal(read_request(&s, &lim_small, &r), GM_EMAGIC);
	assert_int_equal(r.at, AT_HDR);
	assert_int_equal(s.pos, ends[4] + GM_HDR_SIZE);
}

/* A v1 client sends its 8-byte handshake and waits: the reader knows it
 * from the first 4 bytes, without waiting for a whole header. */
static void test_stream_v1_client(void **state)
{
	static const uint8_t hello[8] = {0x00, 'S',  'P',  0x00,
					 0x00, 0x30, 0x00, 0x00};
	struct request r;
	struct stream s = {hello, sizeof(hello), 0, 1};
	uint8_t *p = exact(hello, 3);

	(void)state;
	assert_int_equal(read_request(&s, &lim_small, &r), GM_EVERSION);
	assert_int_equal(r.at, AT_SP);
	assert_int_equal(s.pos, 0);
	/* Fewer than 4 bytes are not a handshake (and are not read). */
	assert_false(gm_proto_is_sp(p, 3));
	exact_free(p);
	assert_false(gm_proto_is_sp(example_request, 4));
}

/* A header may claim any length up to the limit: the reader takes only
 * the head before the length is found to disagree with the jobs. */
static void test_stream_lying_length(void **state)
{
	gm_job_desc d = job(GM_FP64, 1, 1, 1);
	gm_batch b = {0};
	struct request r;
	size_t len = put_request(buf, sizeof(buf), 1, &b, &d, NULL, 1);

	(void)state;
	put_le(buf + 24, 8, UINT64_MAX);
	/* The stream ends after the head: the payload is never asked for. */
	assert_int_equal(read_one(buf,
				  GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE,
				  &lim_open, &r),
			 GM_ETRAILING);
	assert_int_equal(r.at, AT_DESCS);
	request_free(&r);
	put_le(buf + 24, 8, len - GM_HDR_SIZE - 1);
	assert_int_equal(read_one(buf,
				  GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE,
				  &lim_open, &r),
			 GM_ETRUNC);
	request_free(&r);
}

/* gm_proto_check_gemm on whole buffers that disagree with the header's
 * length. */
static void test_check_gemm_buffer(void **state)
{
	gm_job_desc d = job(GM_FP32, 1, 2, 3);
	gm_batch b = {0};
	size_t len = put_request(buf, sizeof(buf), 5, &b, &d, NULL, 1);
	/* Less than a header, or less than its length says; the frame;
	 * two frames in one buffer. The id is echoed once its bytes came. */
	const size_t n[] = {
	    0,	     10,  GM_HDR_SIZE - 1, GM_HDR_SIZE, GM_HDR_SIZE + 16,
	    len - 1, len, 2 * len};
	const int want[] = {GM_ETRUNC, GM_ETRUNC, GM_ETRUNC, GM_ETRUNC,
			    GM_ETRUNC, GM_ETRUNC, GM_OK,     GM_ETRAILING};
	uint8_t *p;
	gm_hdr h;

	(void)state;
	memcpy(buf + len, buf, len);
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		p = exact(buf, n[i]);
		assert_int_equal(check_gemm(p, n[i], &lim_small, &h, &b),
				 want[i]);
		assert_int_equal(h.id, n[i] >= 16 ? 5 : 0);
		exact_free(p);
	}
	/* A CTRL is no GEMM. */
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 5, 0, 2);
	memcpy(buf + GM_HDR_SIZE, "{}", 2);
	assert_int_equal(check_gemm(buf, GM_HDR_SIZE + 2, &lim_small, &h, &b),
			 GM_EMSGTYPE);
}

/* ---- boundaries that must be accepted ---- */

static void test_accept_limits_exactly(void **state)
{
	gm_limits lim = lim_small;
	gm_job_desc d = job(GM_FP64, 64, 64, 64);
	gm_batch b = {0};
	struct request r;
	size_t len;
	gm_hdr h;

	(void)state;
	d.flags = GM_JOB_HAS_C;
	len = put_request(buf, sizeof(buf), 1, &b, &d, NULL, 1);
	/* A + B + C is exactly 3 * 64 * 64 * 8 bytes, the body 64 more. */
	lim.max_job_bytes = 3 * 64 * 64 * 8;
	lim.max_frame = len - GM_HDR_SIZE;
	assert_int_equal(check_gemm(buf, len, &lim, &h, &b), GM_OK);
	assert_int_equal(read_one(buf, len, &lim, &r), GM_OK);
	request_free(&r);
	lim.max_job_bytes--;
	assert_int_equal(read_one(buf, len, &lim, &r), GM_ETOOBIG);
	assert_int_equal(r.at, AT_DESCS);
	assert_string_equal(msg, "job 0: A+B+C of 96 KiB, more than "
				 "max_message_bytes=95.999 KiB");
	request_free(&r);
	lim.max_job_bytes++;
	lim.max_frame--;
	assert_int_equal(read_one(buf, len, &lim, &r), GM_ETOOBIG);
	assert_int_equal(r.at, AT_REQUEST);
	assert_non_null(strstr(msg, ", more than max_message_bytes="));
	lim.max_frame++;
	lim.max_dim = 63;
	assert_int_equal(read_one(buf, len, &lim, &r), GM_EDIM);
	assert_int_equal(r.at, AT_HEAD);
	assert_string_equal(msg, "job 0: m=64, more than max_dim=63");
	request_free(&r);

	/* A CTRL body of exactly max_ctrl bytes, and one over. */
	memset(buf, ' ', 100);
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 2, 0, lim_small.max_ctrl);
	assert_int_equal(
	    read_one(buf, GM_HDR_SIZE + lim_small.max_ctrl, &lim_small, &r),
	    GM_OK);
	request_free(&r);
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 2, 0, lim_small.max_ctrl + 1);
	assert_int_equal(
	    read_one(buf, GM_HDR_SIZE + lim_small.max_ctrl + 1, &lim_small, &r),
	    GM_ETOOBIG);
	assert_non_null(strstr(msg, ", more than max_ctrl_bytes="));
}

static void test_accept_hard_ceiling_dim(void **state)
{
	/* Configured limits above the ceilings are held to the ceilings. */
	gm_limits lim = {UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT64_MAX,
			 UINT64_MAX};
	gm_job_desc d = job(GM_FP16, GM_MAX_DIM, 1, 1);

	(void)state;
	assert_int_equal(gm_job_check(&d, &lim, msg, sizeof(msg)), GM_OK);
	d.m = GM_MAX_DIM + 1;
	assert_int_equal(gm_job_check(&d, &lim, msg, sizeof(msg)), GM_EDIM);
	assert_string_equal(msg, "m=1048577, more than the protocol's 1048576");
}

static void test_accept_max_jobs_exactly(void **state)
{
	static gm_job_desc d[GM_MAX_JOBS];
	static uint8_t big[GM_HDR_SIZE + GM_BATCH_SIZE +
			   GM_MAX_JOBS * (GM_JOB_HDR_SIZE + 4)];
	gm_limits lim = lim_open;
	gm_batch b = {.priority = 0};
	struct request r;
	size_t len;
	gm_hdr h;

	(void)state;
	for (uint32_t i = 0; i < GM_MAX_JOBS; i++)
		d[i] = job(GM_FP16, 1, 1, 1);
	len = put_request(big, sizeof(big), 3, &b, d, NULL, GM_MAX_JOBS);
	assert_int_equal(len, sizeof(big));
	lim.max_jobs = UINT32_MAX; /* held to GM_MAX_JOBS */
	assert_int_equal(check_gemm(big, len, &lim, &h, &b), GM_OK);
	assert_int_equal(h.count, GM_MAX_JOBS);
	assert_int_equal(read_one(big, len, &lim, &r), GM_OK);
	assert_int_equal(r.payload_bytes, GM_MAX_JOBS * 4);
	request_free(&r);
	lim.max_jobs = GM_MAX_JOBS - 1;
	assert_int_equal(read_one(big, len, &lim, &r), GM_ETOOMANY);
	assert_int_equal(r.at, AT_REQUEST);
	assert_string_equal(msg, "count=65536 jobs, more than "
				 "max_jobs_per_request=65535");
	/* One over the ceiling, whatever the configuration says. */
	put_le(big + 16, 4, GM_MAX_JOBS + 1);
	lim.max_jobs = UINT32_MAX;
	assert_int_equal(read_one(big, len, &lim, &r), GM_ETOOMANY);
	assert_string_equal(msg, "count=65537 jobs, more than the "
				 "protocol's 65536");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_example_request),
	    cmocka_unit_test(test_example_reply),
	    cmocka_unit_test(test_example_error),
	    cmocka_unit_test(test_example_ping),
	    cmocka_unit_test(test_stream_pipelined),
	    cmocka_unit_test(test_stream_v1_client),
	    cmocka_unit_test(test_stream_lying_length),
	    cmocka_unit_test(test_check_gemm_buffer),
	    cmocka_unit_test(test_accept_limits_exactly),
	    cmocka_unit_test(test_accept_hard_ceiling_dim),
	    cmocka_unit_test(test_accept_max_jobs_exactly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
