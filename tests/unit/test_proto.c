/*
 * test_proto.c - unit tests for proto/gm_proto, wire format v2: dtype
 * tables and job arithmetic; round trips of every frame type encoded at
 * odd addresses; the annotated bytes of PROTOCOL.md's examples; the
 * request checks run as a reader of a byte stream runs them, each given
 * only the bytes the checks before it allow, in heap buffers of exactly
 * that size (so that AddressSanitizer reports a decoder that reads
 * further); boundaries that must be accepted; and at the bottom the
 * tables of malformed frames, one row per check of PROTOCOL.md §8, §5.1
 * and §6, each with the one code the specification assigns to it and
 * the check that must give it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gm_proto.h"
#include "gm_proto_region.h"

#define MSG_LEN 256
#define RID	0x1122334455667788ull /* region ids */
#define RID2	0x99aabbccddeeff01ull

/* Room for the largest frame a test builds, plus slack for offsets. */
static uint8_t buf[1 << 18];

/* What the tables run against: 4 jobs of dims up to 64 and 4096 bytes,
 * GEMM bodies up to 1024 bytes, CTRL bodies up to 64. */
static const gm_limits lim_small = {.max_jobs = 4,
				    .max_dim = 64,
				    .max_job_bytes = 4096,
				    .max_frame = 1024,
				    .max_ctrl = 64};

/* No limit below the hard ceilings. */
static const gm_limits lim_open = {.max_jobs = GM_MAX_JOBS,
				   .max_dim = GM_MAX_DIM,
				   .max_job_bytes = UINT64_MAX,
				   .max_frame = UINT64_MAX,
				   .max_ctrl = UINT64_MAX};

/* Fills n bytes with a pattern that differs per seed. */
static void fill(uint8_t *p, uint64_t n, uint8_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static int same(const uint8_t *p, uint64_t n, uint8_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

static void put_le(uint8_t *p, int width, uint64_t v)
{
	for (int i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int width)
{
	uint64_t v = 0;

	while (width-- > 0)
		v = v << 8 | p[width];
	return v;
}

static gm_job_desc job(int dtype, uint32_t m, uint32_t n, uint32_t k)
{
	gm_job_desc d = {.dtype = (uint8_t)dtype, .m = m, .n = n, .k = k};

	d.alpha = 1.0;
	return d;
}

/*
 * Encodes a GEMM request for jobs d[0..n-1] at p (room bytes): header,
 * batch, job headers, the descriptors of the jobs with GM_JOB_REGIONS
 * (ref[i] for job i; ref may be NULL when no job has the flag), then
 * each job's inline operands, operand op of job i filled with seed
 * 16 * i + op. Returns the frame's length.
 */
static size_t put_request(uint8_t *p, size_t room, uint64_t id,
			  const gm_batch *b, const gm_job_desc *d,
			  const gm_region_ref (*ref)[GM_OPND_COUNT], uint32_t n)
{
	uint8_t *job = p + GM_HDR_SIZE + GM_BATCH_SIZE, *desc, *q;
	uint32_t nd = 0;
	gm_job_sizes z;

	for (uint32_t i = 0; i < n; i++)
		nd += (d[i].flags & GM_JOB_REGIONS) != 0;
	desc = job + (size_t)n * GM_JOB_HDR_SIZE;
	q = desc + (size_t)nd * GM_REGION_DESC_SIZE;
	assert_true((size_t)(q - p) <= room);
	for (uint32_t i = 0; i < n; i++, job += GM_JOB_HDR_SIZE) {
		const gm_region_ref *r = NULL;

		if (d[i].flags & GM_JOB_REGIONS) {
			assert_non_null(ref);
			r = ref[i];
			gm_proto_put_refs(desc, r);
			desc += GM_REGION_DESC_SIZE;
		}
		gm_proto_put_job_refs(job, &d[i], r);
		assert_int_equal(gm_job_sizes_of(&d[i], &z), GM_OK);
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
			uint64_t len = gm_operand_bytes(&z, op);

			if (r != NULL && gm_ref_in_region(r, op))
				continue;
			assert_true(len <= room - (size_t)(q - p));
			fill(q, len, (uint8_t)(16 * i + op));
			q += len;
		}
	}
	gm_proto_put_hdr(p, GM_MSG_GEMM, id, n,
			 (uint64_t)(q - p) - GM_HDR_SIZE);
	gm_proto_put_batch(p + GM_HDR_SIZE, b);
	return (size_t)(q - p);
}

/* ---- a reader of a byte stream ---- */

/* A heap copy of n bytes that starts at an odd address and ends exactly
 * where the bytes end, so that a decoder reading past them is a heap
 * overflow for ASan; NULL for n = 0. */
static uint8_t *exact(const uint8_t *p, uint64_t n)
{
	uint8_t *q;

	if (n == 0)
		return NULL;
	q = malloc((size_t)n + 1);
	assert_non_null(q);
	memcpy(q + 1, p, (size_t)n);
	return q + 1;
}

static void exact_free(uint8_t *p)
{
	if (p != NULL)
		free(p - 1);
}

/* A connection's bytes; pos: how many a reader has taken. */
struct stream {
	const uint8_t *p;
	size_t len, pos;
	int fresh; /* nothing read yet: the connection's first frame */
};

/* The next n bytes, as an exact copy. The stream must hold them: a
 * reader asking for bytes the checks so far did not promise is a test
 * failure. */
static uint8_t *take(struct stream *s, uint64_t n)
{
	uint8_t *q;

	assert_true(n <= s->len - s->pos);
	q = exact(s->p + s->pos, n);
	s->pos += (size_t)n;
	return q;
}

/* Which check stopped a reader; AT_END: it read the whole frame. */
enum stage {
	AT_SP = 1,    /* gm_proto_is_sp, on a connection's first 4 bytes */
	AT_HDR,	      /* gm_proto_get_hdr */
	AT_REQUEST,   /* gm_proto_check_request */
	AT_HEAD,      /* gm_proto_check_head */
	AT_DESCS,     /* gm_proto_check_descs */
	AT_REPLY_HDR, /* gm_proto_check_reply_hdr */
	AT_REPLY_JOB, /* gm_proto_get_reply_job */
	AT_ERROR,     /* gm_proto_get_error */
	AT_END,
};

/* What a request reader took from the stream, in exact copies. */
struct request {
	enum stage at;
	gm_hdr h;
	gm_batch b;
	uint32_t ndesc;
	uint64_t payload_bytes;
	uint8_t *head, *desc;
	uint8_t *body; /* a CTRL's JSON, a GEMM's payload */
};

static void request_free(struct request *r)
{
	exact_free(r->head);
	exact_free(r->desc);
	exact_free(r->body);
	r->head = r->desc = r->body = NULL;
}

/* What the daemon relies on once a request passed: the iterator, with
 * and without the payload at hand, locates every inline operand inside
 * the payload, back to back in job order; the jobs fill the payload
 * exactly; each job header re-encodes to the bytes it came from. */
static void check_walk(const struct request *r)
{
	const uint8_t *job = r->head + GM_BATCH_SIZE;
	uint8_t again[GM_JOB_HDR_SIZE];
	gm_job_operands ops, bare_ops;
	gm_job_iter it, bare;
	gm_job_desc d, bare_d;
	uint64_t off = 0;
	gm_job_sizes z;

	gm_proto_jobs_begin(&it, &r->h, r->head, r->desc, r->body);
	gm_proto_jobs_begin(&bare, &r->h, r->head, r->desc, NULL);
	for (uint32_t i = 0; i < r->h.count; i++, job += GM_JOB_HDR_SIZE) {
		assert_int_equal(gm_proto_jobs_next(&it, &d, &ops), GM_OK);
		assert_int_equal(gm_proto_jobs_next(&bare, &bare_d, &bare_ops),
				 GM_OK);
		gm_proto_put_job_refs(
		    again, &d, (d.flags & GM_JOB_REGIONS) ? ops.ref : NULL);
		assert_memory_equal(again, job, GM_JOB_HDR_SIZE);
		assert_memory_equal(ops.ref, bare_ops.ref, sizeof(ops.ref));
		assert_memory_equal(ops.off, bare_ops.off, sizeof(ops.off));
		assert_int_equal(ops.inline_off, off);
		assert_int_equal(bare_ops.inline_off, off);
		assert_int_equal(gm_job_sizes_of(&d, &z), GM_OK);
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
			uint64_t len = gm_operand_bytes(&z, op);

			assert_null(bare_ops.data[op]);
			if (len == 0 || gm_ref_in_region(ops.ref, op)) {
				assert_null(ops.data[op]);
				continue;
			}
			assert_int_equal(ops.off[op], off);
			assert_ptr_equal(ops.data[op], r->body + off);
			off += len;
		}
		assert_int_equal(ops.inline_bytes, off - ops.inline_off);
		assert_int_equal(bare_ops.inline_bytes, ops.inline_bytes);
	}
	assert_int_equal(gm_proto_jobs_next(&it, &d, &ops), GM_ENOTFOUND);
	assert_int_equal(gm_proto_jobs_next(&bare, &d, &ops), GM_ENOTFOUND);
	assert_int_equal(off, r->payload_bytes);
}

/*
 * Reads one request frame from s as the daemon reads a connection
 * (PROTOCOL.md §8): on a fresh connection its first 4 bytes (a v1
 * client?), then the header, and after each check only what it allows:
 * a CTRL's body, or a GEMM's head, descriptors and payload. Returns the
 * first failure's code, r->at naming the check, or GM_OK with the
 * frame read whole and its jobs walked.
 */
static int read_request(struct stream *s, const gm_limits *lim,
			struct request *r, char *msg, size_t msglen)
{
	uint8_t *p;
	int rv;

	memset(r, 0, sizeof(*r));
	msg[0] = '\0';
	r->at = AT_SP;
	if (s->fresh) {
		s->fresh = 0;
		assert_true(s->len - s->pos >= 4);
		p = exact(s->p + s->pos, 4);
		rv = gm_proto_is_sp(p, 4);
		exact_free(p);
		if (rv) {
			snprintf(msg, msglen, "a protocol v1 client");
			return GM_EVERSION;
		}
	}
	r->at = AT_HDR;
	p = take(s, GM_HDR_SIZE);
	rv = gm_proto_get_hdr(p, GM_HDR_SIZE, &r->h, msg, msglen);
	exact_free(p);
	if (rv != GM_OK)
		return rv;
	r->at = AT_REQUEST;
	if ((rv = gm_proto_check_request(&r->h, lim, msg, msglen)) != GM_OK)
		return rv;
	if (r->h.type == GM_MSG_CTRL) {
		r->body = take(s, r->h.length);
		r->at = AT_END;
		return GM_OK;
	}
	r->at = AT_HEAD;
	r->head = take(s, gm_proto_head_size(&r->h));
	if ((rv = gm_proto_check_head(&r->h, r->head, lim, &r->b, &r->ndesc,
				      msg, msglen)) != GM_OK)
		return rv;
	r->at = AT_DESCS;
	r->desc = take(s, (uint64_t)r->ndesc * GM_REGION_DESC_SIZE);
	if ((rv = gm_proto_check_descs(&r->h, r->head, r->desc, lim,
				       &r->payload_bytes, msg, msglen)) !=
	    GM_OK)
		return rv;
	r->at = AT_END;
	r->body = take(s, r->payload_bytes);
	check_walk(r);
	return GM_OK;
}

/* Reads a whole frame of len bytes at p as a fresh connection's first. */
static int read_one(const uint8_t *p, size_t len, const gm_limits *lim,
		    struct request *r, char *msg, size_t msglen)
{
	struct stream s = {p, len, 0, 1};
	int rv = read_request(&s, lim, r, msg, msglen);

	if (rv == GM_OK)
		assert_int_equal(s.pos, len);
	return rv;
}

/* What a client reader took from the stream. */
struct answer {
	enum stage at;
	gm_hdr h;
	gm_reply_job r;
	uint8_t *result; /* GEMM_REPLY's result bytes */
	uint32_t status; /* ERROR's */
	char text[GM_MSG_TEXT + 1];
};

/* Reads one frame from the daemon as a client waiting for the replies
 * of a request of njobs jobs does: an ERROR by gm_proto_get_error on a
 * body of the length its header says, anything else as a GEMM_REPLY,
 * its record and then its result. */
static int read_answer(struct stream *s, uint32_t njobs, struct answer *a,
		       char *msg, size_t msglen)
{
	uint8_t *p;
	int rv;

	memset(a, 0, sizeof(*a));
	msg[0] = '\0';
	a->at = AT_HDR;
	p = take(s, GM_HDR_SIZE);
	rv = gm_proto_get_hdr(p, GM_HDR_SIZE, &a->h, msg, msglen);
	exact_free(p);
	if (rv != GM_OK)
		return rv;
	if (a->h.type == GM_MSG_ERROR) {
		a->at = AT_ERROR;
		p = take(s, a->h.length);
		rv = gm_proto_get_error(&a->h, p, &a->status, a->text);
		exact_free(p);
		if (rv == GM_OK)
			a->at = AT_END;
		else
			snprintf(msg, msglen, "bad ERROR frame");
		return rv;
	}
	a->at = AT_REPLY_HDR;
	if ((rv = gm_proto_check_reply_hdr(&a->h, njobs, msg, msglen)) != 0)
		return rv;
	a->at = AT_REPLY_JOB;
	p = take(s, GM_REPLY_JOB_SIZE);
	rv = gm_proto_get_reply_job(&a->h, p, &a->r, msg, msglen);
	exact_free(p);
	if (rv != GM_OK)
		return rv;
	a->at = AT_END;
	a->result = take(s, a->r.result_bytes);
	return GM_OK;
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
	char msg[MSG_LEN];
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
	assert_int_equal(
	    gm_proto_check_gemm(buf, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_EDIM);
	assert_string_equal(msg, "job 3: m=0, must be 1..65536");
	/* payload_bytes of job 1, one short. */
	put_le(buf + GM_HDR_SIZE + GM_BATCH_SIZE + 3 * GM_JOB_HDR_SIZE + 8, 4,
	       2);
	put_le(buf + GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE + 40, 8, 31);
	assert_int_equal(
	    gm_proto_check_gemm(buf, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_EFIELD);
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
	char msg[MSG_LEN];
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
		assert_int_equal(gm_proto_check_gemm(p, len, &lim, &h, &got_b,
						     msg, sizeof(msg)),
				 GM_OK);
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
		assert_int_equal(read_one(p, len, &lim, &r, msg, sizeof(msg)),
				 GM_OK);
		assert_int_equal(r.ndesc, 0);
		check_jobs_match(&r.h, r.head, r.desc, r.body, d, NULL);
		request_free(&r);

		len = put_request(p, sizeof(buf) - off, 9, &b, dr, ref, 3);
		assert_int_equal(len, GM_HDR_SIZE + GM_BATCH_SIZE +
					  3 * GM_JOB_HDR_SIZE +
					  2 * GM_REGION_DESC_SIZE + 48 +
					  (32 + 32 + 32) + 32);
		assert_int_equal(gm_proto_check_gemm(p, len, &lim, &h, &got_b,
						     msg, sizeof(msg)),
				 GM_OK);
		check_jobs_match(&h, p + GM_HDR_SIZE,
				 p + GM_HDR_SIZE + gm_proto_head_size(&h),
				 p + GM_HDR_SIZE + gm_proto_head_size(&h) +
				     2 * GM_REGION_DESC_SIZE,
				 dr, ref);
		assert_int_equal(read_one(p, len, &lim, &r, msg, sizeof(msg)),
				 GM_OK);
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

/* A GEMM_REPLY frame for job index of a request, result filled with
 * seed 40 + index; returns its length. */
static size_t put_reply(uint8_t *p, uint64_t id, uint32_t index,
			const gm_reply_job *r)
{
	gm_proto_put_hdr(p, GM_MSG_GEMM_REPLY, id, index,
			 GM_REPLY_JOB_SIZE + r->result_bytes);
	gm_proto_put_reply_job(p + GM_HDR_SIZE, r);
	fill(p + GM_HDR_SIZE + GM_REPLY_JOB_SIZE, r->result_bytes,
	     (uint8_t)(40 + index));
	return GM_HDR_SIZE + GM_REPLY_JOB_SIZE + (size_t)r->result_bytes;
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
	char msg[MSG_LEN];
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

		assert_int_equal(read_answer(&s, 4, &a, msg, sizeof(msg)),
				 GM_OK);
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
	char msg[MSG_LEN];
	struct stream s;
	struct answer a;

	(void)state;
	gm_proto_put_error(buf + 3, 42, GM_EBUSY, "queue full: 512 jobs");
	s = (struct stream){buf + 3, GM_HDR_SIZE + GM_ERROR_SIZE, 0, 0};
	assert_int_equal(read_answer(&s, 1, &a, msg, sizeof(msg)), GM_OK);
	assert_int_equal(a.h.type, GM_MSG_ERROR);
	assert_int_equal(a.h.id, 42);
	assert_int_equal(a.h.count, 0);
	assert_int_equal(a.h.length, GM_ERROR_SIZE);
	assert_int_equal(a.status, GM_EBUSY);
	assert_string_equal(a.text, "queue full: 512 jobs");

	gm_proto_put_error(buf + 1, 0, GM_ESHUTDOWN, NULL);
	s = (struct stream){buf + 1, GM_HDR_SIZE + GM_ERROR_SIZE, 0, 0};
	assert_int_equal(read_answer(&s, 1, &a, msg, sizeof(msg)), GM_OK);
	assert_int_equal(a.h.id, 0);
	assert_string_equal(a.text, gm_strerror(GM_ESHUTDOWN));
}

/* CTRL and CTRL_REPLY: a header and length bytes of JSON. */
static void test_ctrl_round_trip(void **state)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	static const char pong[] = "{\"ok\":true,\"draining\":false}";
	char msg[MSG_LEN];
	struct request r;
	gm_hdr h;

	(void)state;
	gm_proto_put_hdr(buf + 1, GM_MSG_CTRL, 5, 0, sizeof(ping) - 1);
	memcpy(buf + 1 + GM_HDR_SIZE, ping, sizeof(ping) - 1);
	assert_int_equal(read_one(buf + 1, GM_HDR_SIZE + sizeof(ping) - 1,
				  &lim_small, &r, msg, sizeof(msg)),
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
	char msg[MSG_LEN];
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
	assert_int_equal(gm_proto_check_gemm(buf, GM_HDR_SIZE, &lim_small, &h,
					     &b, msg, sizeof(msg)),
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
	char msg[MSG_LEN];
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
	char msg[MSG_LEN];
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
	assert_int_equal(gm_proto_check_gemm(frame, sizeof(example_request),
					     &lim, &h, &b, msg, sizeof(msg)),
			 GM_OK);
	exact_free(frame);
	assert_int_equal(read_one(example_request, sizeof(example_request),
				  &lim, &r, msg, sizeof(msg)),
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
	assert_int_equal(
	    read_one(buf, sizeof(example_request), &lim, &r, msg, sizeof(msg)),
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
	char msg[MSG_LEN];
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
	assert_int_equal(read_answer(&s, 1, &a, msg, sizeof(msg)), GM_OK);
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
	char msg[MSG_LEN];
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
	assert_int_equal(read_answer(&s, 1, &a, msg, sizeof(msg)), GM_OK);
	assert_int_equal(a.status, GM_EBUSY);
	assert_string_equal(a.text, "queue full, try again later");
}

static void test_example_ping(void **state)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	char msg[MSG_LEN];
	struct request r;

	(void)state;
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 7, 0, sizeof(ping) - 1);
	assert_memory_equal(buf, example_ping, sizeof(example_ping));
	memcpy(buf + GM_HDR_SIZE, ping, sizeof(ping) - 1);
	assert_int_equal(read_one(buf, 45, &lim_small, &r, msg, sizeof(msg)),
			 GM_OK);
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
	char msg[MSG_LEN];
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
		assert_int_equal(
		    read_request(&s, &lim_small, &r, msg, sizeof(msg)), GM_OK);
		assert_int_equal(r.h.id, (uint64_t)i + 1);
		assert_int_equal(s.pos, ends[i]);
		request_free(&r);
	}
	assert_int_equal(read_request(&s, &lim_small, &r, msg, sizeof(msg)),
			 GM_EFIELD);
	assert_int_equal(r.at, AT_HEAD);
	assert_int_equal(r.h.id, 4);
	request_free(&r);
	s.pos = ends[2] + GM_HDR_SIZE + (size_t)r.h.length;
	assert_int_equal(s.pos, ends[3]);
	assert_int_equal(read_request(&s, &lim_small, &r, msg, sizeof(msg)),
			 GM_EFIELD);
	assert_int_equal(r.at, AT_DESCS);
	assert_int_equal(r.h.id, 5);
	assert_string_equal(msg, "job 1: payload_bytes=25, must be 32 "
				 "(A 24 + B 8 + C 0)");
	request_free(&r);
	s.pos = ends[3] + GM_HDR_SIZE + (size_t)r.h.length;
	assert_int_equal(read_request(&s, &lim_small, &r, msg, sizeof(msg)),
			 GM_EMAGIC);
	assert_int_equal(r.at, AT_HDR);
	assert_int_equal(s.pos, ends[4] + GM_HDR_SIZE);
}

/* A v1 client sends its 8-byte handshake and waits: the reader knows it
 * from the first 4 bytes, without waiting for a whole header. */
static void test_stream_v1_client(void **state)
{
	static const uint8_t hello[8] = {0x00, 'S',  'P',  0x00,
					 0x00, 0x30, 0x00, 0x00};
	char msg[MSG_LEN];
	struct request r;
	struct stream s = {hello, sizeof(hello), 0, 1};
	uint8_t *p = exact(hello, 3);

	(void)state;
	assert_int_equal(read_request(&s, &lim_small, &r, msg, sizeof(msg)),
			 GM_EVERSION);
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
	char msg[MSG_LEN];
	struct request r;
	size_t len = put_request(buf, sizeof(buf), 1, &b, &d, NULL, 1);

	(void)state;
	put_le(buf + 24, 8, UINT64_MAX);
	/* The stream ends after the head: the payload is never asked for. */
	assert_int_equal(read_one(buf,
				  GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE,
				  &lim_open, &r, msg, sizeof(msg)),
			 GM_ETRAILING);
	assert_int_equal(r.at, AT_DESCS);
	request_free(&r);
	put_le(buf + 24, 8, len - GM_HDR_SIZE - 1);
	assert_int_equal(read_one(buf,
				  GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE,
				  &lim_open, &r, msg, sizeof(msg)),
			 GM_ETRUNC);
	request_free(&r);
}

/* gm_proto_check_gemm on whole buffers that disagree with the header's
 * length. */
static void test_check_gemm_buffer(void **state)
{
	gm_job_desc d = job(GM_FP32, 1, 2, 3);
	gm_batch b = {0};
	char msg[MSG_LEN];
	size_t len = put_request(buf, sizeof(buf), 5, &b, &d, NULL, 1);
	static const size_t cut[] = {0, 10, GM_HDR_SIZE - 1, GM_HDR_SIZE,
				     GM_HDR_SIZE + 16};
	uint8_t *p;
	gm_hdr h;

	(void)state;
	memcpy(buf + len, buf, len);
	/* Less than a header, or less than its length says. */
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		p = exact(buf, cut[i]);
		assert_int_equal(gm_proto_check_gemm(p, cut[i], &lim_small, &h,
						     &b, msg, sizeof(msg)),
				 GM_ETRUNC);
		exact_free(p);
	}
	p = exact(buf, len - 1);
	assert_int_equal(gm_proto_check_gemm(p, len - 1, &lim_small, &h, &b,
					     msg, sizeof(msg)),
			 GM_ETRUNC);
	assert_int_equal(h.id, 5);
	exact_free(p);
	p = exact(buf, len);
	assert_int_equal(
	    gm_proto_check_gemm(p, len, &lim_small, &h, &b, msg, sizeof(msg)),
	    GM_OK);
	exact_free(p);
	/* Two frames in one buffer. */
	p = exact(buf, 2 * len);
	assert_int_equal(gm_proto_check_gemm(p, 2 * len, &lim_small, &h, &b,
					     msg, sizeof(msg)),
			 GM_ETRAILING);
	exact_free(p);
	/* A CTRL is no GEMM. */
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 5, 0, 2);
	memcpy(buf + GM_HDR_SIZE, "{}", 2);
	assert_int_equal(gm_proto_check_gemm(buf, GM_HDR_SIZE + 2, &lim_small,
					     &h, &b, msg, sizeof(msg)),
			 GM_EMSGTYPE);
}

/* ---- boundaries that must be accepted ---- */

static void test_accept_limits_exactly(void **state)
{
	gm_limits lim = lim_small;
	gm_job_desc d = job(GM_FP64, 64, 64, 64);
	gm_batch b = {0};
	char msg[MSG_LEN];
	struct request r;
	size_t len;
	gm_hdr h;

	(void)state;
	d.flags = GM_JOB_HAS_C;
	len = put_request(buf, sizeof(buf), 1, &b, &d, NULL, 1);
	/* A + B + C is exactly 3 * 64 * 64 * 8 bytes, the body 64 more. */
	lim.max_job_bytes = 3 * 64 * 64 * 8;
	lim.max_frame = len - GM_HDR_SIZE;
	assert_int_equal(
	    gm_proto_check_gemm(buf, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(read_one(buf, len, &lim, &r, msg, sizeof(msg)), GM_OK);
	request_free(&r);
	lim.max_job_bytes--;
	assert_int_equal(read_one(buf, len, &lim, &r, msg, sizeof(msg)),
			 GM_ETOOBIG);
	assert_int_equal(r.at, AT_DESCS);
	assert_string_equal(msg, "job 0: A+B+C of 96 KiB, more than "
				 "max_message_bytes=95.999 KiB");
	request_free(&r);
	lim.max_job_bytes++;
	lim.max_frame--;
	assert_int_equal(read_one(buf, len, &lim, &r, msg, sizeof(msg)),
			 GM_ETOOBIG);
	assert_int_equal(r.at, AT_REQUEST);
	assert_non_null(strstr(msg, ", more than max_message_bytes="));
	lim.max_frame++;
	lim.max_dim = 63;
	assert_int_equal(read_one(buf, len, &lim, &r, msg, sizeof(msg)),
			 GM_EDIM);
	assert_int_equal(r.at, AT_HEAD);
	assert_string_equal(msg, "job 0: m=64, more than max_dim=63");
	request_free(&r);

	/* A CTRL body of exactly max_ctrl bytes, and one over. */
	memset(buf, ' ', 100);
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 2, 0, lim_small.max_ctrl);
	assert_int_equal(read_one(buf, GM_HDR_SIZE + lim_small.max_ctrl,
				  &lim_small, &r, msg, sizeof(msg)),
			 GM_OK);
	request_free(&r);
	gm_proto_put_hdr(buf, GM_MSG_CTRL, 2, 0, lim_small.max_ctrl + 1);
	assert_int_equal(read_one(buf, GM_HDR_SIZE + lim_small.max_ctrl + 1,
				  &lim_small, &r, msg, sizeof(msg)),
			 GM_ETOOBIG);
	assert_non_null(strstr(msg, ", more than max_ctrl_bytes="));
}

static void test_accept_hard_ceiling_dim(void **state)
{
	/* Configured limits above the ceilings are held to the ceilings. */
	gm_limits lim = {UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT64_MAX,
			 UINT64_MAX};
	gm_job_desc d = job(GM_FP16, GM_MAX_DIM, 1, 1);
	char msg[MSG_LEN];

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
	char msg[MSG_LEN];
	struct request r;
	size_t len;
	gm_hdr h;

	(void)state;
	for (uint32_t i = 0; i < GM_MAX_JOBS; i++)
		d[i] = job(GM_FP16, 1, 1, 1);
	len = put_request(big, sizeof(big), 3, &b, d, NULL, GM_MAX_JOBS);
	assert_int_equal(len, sizeof(big));
	lim.max_jobs = UINT32_MAX; /* held to GM_MAX_JOBS */
	assert_int_equal(
	    gm_proto_check_gemm(big, len, &lim, &h, &b, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(h.count, GM_MAX_JOBS);
	assert_int_equal(read_one(big, len, &lim, &r, msg, sizeof(msg)), GM_OK);
	assert_int_equal(r.payload_bytes, GM_MAX_JOBS * 4);
	request_free(&r);
	lim.max_jobs = GM_MAX_JOBS - 1;
	assert_int_equal(read_one(big, len, &lim, &r, msg, sizeof(msg)),
			 GM_ETOOMANY);
	assert_int_equal(r.at, AT_REQUEST);
	assert_string_equal(msg, "count=65536 jobs, more than "
				 "max_jobs_per_request=65535");
	/* One over the ceiling, whatever the configuration says. */
	put_le(big + 16, 4, GM_MAX_JOBS + 1);
	lim.max_jobs = UINT32_MAX;
	assert_int_equal(read_one(big, len, &lim, &r, msg, sizeof(msg)),
			 GM_ETOOMANY);
	assert_string_equal(msg, "count=65537 jobs, more than the "
				 "protocol's 65536");
}

/* ---- tables of malformed frames ---- */

struct patch {
	size_t off;
	int width; /* bytes, little-endian; 0 ends the list */
	uint64_t val;
};

/* The frames the rows start from: id 77, each accepted as it is. */
enum base {
	/* GEMM, priority 2: job 0 fp32 2x2x3 with C (64 payload bytes),
	 * job 1 fp16 1x2x1 (6); body 182 bytes. */
	FR_GEMM,
	/* GEMM: job 0 fp32 2x3x4 with C and regions (A at RID+0, B
	 * inline, C at RID2+0, OUT at RID+65536: 48 payload bytes), job 1
	 * fp64 1x1x1 (16); body 240 bytes. */
	FR_REGIONS,
	/* CTRL {"op":"ping"}; body 13 bytes. */
	FR_CTRL,
	/* GEMM_REPLY of job 1 of 2: fp32 2x3 row-major, 24 result bytes;
	 * body 200. */
	FR_REPLY,
	/* GEMM_REPLY of job 1 of 2: failed, EUNSUPPORTED; body 176. */
	FR_FAILED,
	/* ERROR EBUSY, "queue full"; body 104. */
	FR_ERROR,
};

static size_t put_base(uint8_t *p, int base)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	gm_job_desc d[2] = {job(GM_FP32, 2, 2, 3), job(GM_FP16, 1, 2, 1)};
	const gm_region_ref ref[2][GM_OPND_COUNT] = {
	    [0] = {{RID, 0}, {0, 0}, {RID2, 0}, {RID, 65536}}};
	gm_reply_job rj = {.status = GM_OK,
			   .dtype = GM_FP32,
			   .m = 2,
			   .n = 3,
			   .t = {1, 2, 3, 4, 10},
			   .result_bytes = 24};
	const gm_batch b = {.priority = 2};

	d[0].flags = GM_JOB_HAS_C;
	d[0].beta = 0.5;
	d[1].alpha = -2;
	d[1].trans_b = 1;
	switch (base) {
	case FR_GEMM:
		return put_request(p, sizeof(buf), 77, &b, d, NULL, 2);
	case FR_REGIONS:
		d[0] = job(GM_FP32, 2, 3, 4);
		d[0].flags = GM_JOB_HAS_C | GM_JOB_REGIONS;
		d[1] = job(GM_FP64, 1, 1, 1);
		return put_request(p, sizeof(buf), 77, &b, d, ref, 2);
	case FR_CTRL:
		gm_proto_put_hdr(p, GM_MSG_CTRL, 77, 0, sizeof(ping) - 1);
		memcpy(p + GM_HDR_SIZE, ping, sizeof(ping) - 1);
		return GM_HDR_SIZE + sizeof(ping) - 1;
	case FR_REPLY:
		return put_reply(p, 77, 1, &rj);
	case FR_FAILED:
		rj = (gm_reply_job){.status = GM_EUNSUPPORTED,
				    .dtype = GM_BF16,
				    .layout = GM_COL_MAJOR,
				    .m = 9,
				    .n = 9,
				    .t = {.total_us = 5}};
		snprintf(rj.message, sizeof(rj.message), "tiled: no bf16");
		return put_reply(p, 77, 1, &rj);
	default:
		gm_proto_put_error(p, 77, GM_EBUSY, "queue full");
		return GM_HDR_SIZE + GM_ERROR_SIZE;
	}
}

/* Builds a row's frame in buf: the base, delta body bytes added (zeros)
 * or cut with the header's length following, then the patches. Returns
 * its length; *honest says whether the header's length is still the
 * bytes that follow it. */
static size_t make_frame(int base, long delta, const struct patch *p,
			 int *honest)
{
	size_t len = put_base(buf, base), n = (size_t)((long)len + delta);

	if (delta > 0)
		memset(buf + len, 0, (size_t)delta);
	put_le(buf + 24, 8, n - GM_HDR_SIZE);
	for (int i = 0; i < 4 && p[i].width != 0; i++)
		put_le(buf + p[i].off, p[i].width, p[i].val);
	*honest = get_le(buf + 24, 8) == n - GM_HDR_SIZE;
	return n;
}

/* A request row: the check of PROTOCOL.md §8 (its step number; 0 when
 * the frame is accepted) and the code it must give. */
struct bad_request {
	const char *name;
	int base;
	int step;
	int code;
	long delta;
	struct patch p[4];
};

#define H(x)	   (x)
#define B(x)	   (GM_HDR_SIZE + (x))
#define J0(x)	   (GM_HDR_SIZE + GM_BATCH_SIZE + (x))
#define J1(x)	   (J0(GM_JOB_HDR_SIZE) + (x))
#define D0(op, f)  (J1(GM_JOB_HDR_SIZE) + 16 * (op) + 8 * (f)) /* f 0: id */
#define U32(x)	   4, (x)
#define U64(x)	   8, (x)
#define F64_NAN	   0x7ff8000000000000u
#define F64_INF	   0x7ff0000000000000u
#define F64_NEGINF 0xfff0000000000000u
#define U32_MAX	   UINT32_MAX
#define U64_MAX	   UINT64_MAX
#define P30	   (1u << 30)
#define P31	   (1u << 31)
#define OPA	   GM_OPND_A
#define OPB	   GM_OPND_B
#define OPC	   GM_OPND_C
#define OUT	   GM_OPND_OUT
#define GEMM_BODY  182
#define REGS_BODY  240
#define CTRL_BODY  13

/* Against lim_small: 4 jobs, dims up to 64, 4096 bytes a job, GEMM
 * bodies up to 1024 bytes, CTRL up to 64. In the order of §8. */
/* clang-format off */
static const struct bad_request bad_requests[] = {
    {"GEMM: accepted", FR_GEMM, 0, GM_OK, 0, {{0}}},
    {"with regions: accepted", FR_REGIONS, 0, GM_OK, 0, {{0}}},
    {"CTRL: accepted", FR_CTRL, 0, GM_OK, 0, {{0}}},
    /* 1: a v1 client's handshake, first on a connection */
    {"v1 handshake", FR_GEMM, 1, GM_EVERSION, 0, {{H(0), U32(0x00505300)}}},
    /* 2-5: the header */
    {"bad magic", FR_GEMM, 2, GM_EMAGIC, 0, {{H(0), 1, 'g'}}},
    {"magic byte-swapped", FR_GEMM, 2, GM_EMAGIC, 0, {{H(0), U32(0x47454d4d)}}},
    {"magic before version",
     FR_GEMM, 2, GM_EMAGIC, 0, {{H(3), 1, 0}, {H(4), 2, 1}}},
    {"version 1", FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 1}}},
    {"version 3", FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 3}}},
    {"version byte-swapped", FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 0x200}}},
    {"version before type",
     FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 1}, {H(6), 2, 0}}},
    {"type 0", FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 0}}},
    {"type 6", FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 6}}},
    {"type 0x0100", FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 0x100}}},
    {"type before flags",
     FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 7}, {H(20), U32(1)}}},
    {"header flags bit 0", FR_GEMM, 5, GM_EFIELD, 0, {{H(20), U32(1)}}},
    {"header flags bit 31", FR_GEMM, 5, GM_EFIELD, 0, {{H(20), U32(P31)}}},
    {"CTRL header flags", FR_CTRL, 5, GM_EFIELD, 0, {{H(20), U32(2)}}},
    {"flags before the request type",
     FR_GEMM, 5, GM_EFIELD, 0, {{H(20), U32(1)}, {H(6), 2, GM_MSG_GEMM_REPLY}}},
    /* 6: a request type */
    {"GEMM_REPLY as a request",
     FR_GEMM, 6, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_GEMM_REPLY}}},
    {"CTRL_REPLY as a request",
     FR_CTRL, 6, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_CTRL_REPLY}}},
    {"ERROR as a request",
     FR_GEMM, 6, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_ERROR}}},
    {"type before length",
     FR_GEMM, 6, GM_EMSGTYPE, 0,
     {{H(6), 2, GM_MSG_GEMM_REPLY}, {H(24), U64(U64_MAX)}}},
    /* 7: CTRL count and length; GEMM length */
    {"CTRL count 1", FR_CTRL, 7, GM_EFIELD, 0, {{H(16), U32(1)}}},
    {"CTRL count 2^32-1", FR_CTRL, 7, GM_EFIELD, 0, {{H(16), U32(U32_MAX)}}},
    {"CTRL over max_ctrl", FR_CTRL, 7, GM_ETOOBIG, 65 - CTRL_BODY, {{0}}},
    {"CTRL length lies: 2^64-1",
     FR_CTRL, 7, GM_ETOOBIG, 0, {{H(24), U64(U64_MAX)}}},
    {"CTRL length before count",
     FR_CTRL, 7, GM_ETOOBIG, 65 - CTRL_BODY, {{H(16), U32(1)}}},
    {"CTRL of max_ctrl bytes: accepted",
     FR_CTRL, 0, GM_OK, 64 - CTRL_BODY, {{0}}},
    {"CTRL, empty: accepted", FR_CTRL, 0, GM_OK, -CTRL_BODY, {{0}}},
    {"over max_frame", FR_GEMM, 7, GM_ETOOBIG, 1025 - GEMM_BODY, {{0}}},
    {"length lies: 2^64-1", FR_GEMM, 7, GM_ETOOBIG, 0, {{H(24), U64(U64_MAX)}}},
    {"max_frame before count",
     FR_GEMM, 7, GM_ETOOBIG, 1025 - GEMM_BODY, {{H(16), U32(0)}}},
    /* 8-10: count, and the head it needs */
    {"count 0", FR_GEMM, 8, GM_EFIELD, 0, {{H(16), U32(0)}}},
    {"count 0, empty body",
     FR_GEMM, 8, GM_EFIELD, -GEMM_BODY, {{H(16), U32(0)}}},
    {"count 5, over max_jobs", FR_GEMM, 9, GM_ETOOMANY, 0, {{H(16), U32(5)}}},
    {"count 2^32-1", FR_GEMM, 9, GM_ETOOMANY, 0, {{H(16), U32(U32_MAX)}}},
    {"count lies: 4 jobs need 208 bytes",
     FR_GEMM, 10, GM_ETRUNC, 0, {{H(16), U32(4)}}},
    {"length 0", FR_GEMM, 10, GM_ETRUNC, -GEMM_BODY, {{0}}},
    {"length one short of the head",
     FR_GEMM, 10, GM_ETRUNC, 111 - GEMM_BODY, {{0}}},
    {"length lies: 0", FR_GEMM, 10, GM_ETRUNC, 0, {{H(24), U64(0)}}},
    /* 11-12: the batch header */
    {"priority 4", FR_GEMM, 11, GM_EFIELD, 0, {{B(0), 1, 4}}},
    {"priority 255", FR_GEMM, 11, GM_EFIELD, 0, {{B(0), 1, 255}}},
    {"batch reserved byte 1", FR_GEMM, 11, GM_EFIELD, 0, {{B(1), 1, 1}}},
    {"batch reserved byte 3", FR_GEMM, 11, GM_EFIELD, 0, {{B(3), 1, 0x80}}},
    {"batch reserved 12..15", FR_GEMM, 11, GM_EFIELD, 0, {{B(15), 1, 1}}},
    {"batch flags bit 1", FR_GEMM, 12, GM_EFIELD, 0, {{B(8), U32(2)}}},
    {"batch flags bit 31, DETACH",
     FR_GEMM, 12, GM_EFIELD, 0, {{B(8), U32(P31 | 1)}}},
    {"DETACH: accepted", FR_GEMM, 0, GM_OK, 0, {{B(8), U32(1)}}},
    {"priority 0, no deadline: accepted", FR_GEMM, 0, GM_OK, 0, {{B(0), 1, 0}}},
    {"priority 3, deadline 2^32-1: accepted",
     FR_GEMM, 0, GM_OK, 0, {{B(0), 1, 3}, {B(4), U32(U32_MAX)}}},
    {"batch before job headers",
     FR_GEMM, 11, GM_EFIELD, 0, {{B(0), 1, 4}, {J0(0), 1, 0}}},
    /* 13: each job header */
    {"job 0 dtype 0", FR_GEMM, 13, GM_EDTYPE, 0, {{J0(0), 1, 0}}},
    {"job 0 dtype 6", FR_GEMM, 13, GM_EDTYPE, 0, {{J0(0), 1, 6}}},
    {"job 1 dtype 255", FR_GEMM, 13, GM_EDTYPE, 0, {{J1(0), 1, 255}}},
    {"job reserved byte 7", FR_GEMM, 13, GM_EFIELD, 0, {{J0(7), 1, 1}}},
    {"job reserved 20..23", FR_GEMM, 13, GM_EFIELD, 0, {{J0(23), 1, 1}}},
    {"dtype before reserved",
     FR_GEMM, 13, GM_EDTYPE, 0, {{J0(0), 1, 9}, {J0(6), 1, 1}}},
    {"trans_a 2", FR_GEMM, 13, GM_EFIELD, 0, {{J0(1), 1, 2}}},
    {"trans_b 255", FR_GEMM, 13, GM_EFIELD, 0, {{J1(2), 1, 255}}},
    {"layout 2", FR_GEMM, 13, GM_EFIELD, 0, {{J0(3), 1, 2}}},
    {"kernel 3", FR_GEMM, 13, GM_EFIELD, 0, {{J0(4), 1, 3}}},
    {"job flag bit 2", FR_GEMM, 13, GM_EFIELD, 0, {{J0(5), 1, 0x05}}},
    {"job flag bit 7", FR_GEMM, 13, GM_EFIELD, 0, {{J1(5), 1, 0x80}}},
    {"alpha NaN", FR_GEMM, 13, GM_EFIELD, 0, {{J0(24), U64(F64_NAN)}}},
    {"alpha +inf", FR_GEMM, 13, GM_EFIELD, 0, {{J0(24), U64(F64_INF)}}},
    {"beta -inf", FR_GEMM, 13, GM_EFIELD, 0, {{J0(32), U64(F64_NEGINF)}}},
    {"beta NaN on a job without C",
     FR_GEMM, 13, GM_EFIELD, 0, {{J1(32), U64(F64_NAN)}}},
    {"fields before dims",
     FR_GEMM, 13, GM_EFIELD, 0, {{J0(3), 1, 2}, {J0(8), U32(0)}}},
    {"m 0", FR_GEMM, 13, GM_EDIM, 0, {{J0(8), U32(0)}}},
    {"n 0", FR_GEMM, 13, GM_EDIM, 0, {{J0(12), U32(0)}}},
    {"job 1 k 0", FR_GEMM, 13, GM_EDIM, 0, {{J1(16), U32(0)}}},
    {"zero dim before overflow",
     FR_GEMM, 13, GM_EDIM, 0,
     {{J0(8), U32(0)}, {J0(12), U32(U32_MAX)}, {J0(16), U32(U32_MAX)}}},
    {"A bytes overflow, before max_dim",
     FR_GEMM, 13, GM_EOVERFLOW, 0,
     {{J0(8), U32(U32_MAX)}, {J0(16), U32(U32_MAX)}}},
    {"A + B + C overflows",
     FR_GEMM, 13, GM_EOVERFLOW, 0,
     {{J0(8), U32(P30)}, {J0(12), U32(P30)}, {J0(16), U32(P31)}}},
    {"m 65, over max_dim", FR_GEMM, 13, GM_EDIM, 0, {{J0(8), U32(65)}}},
    {"n over the ceiling",
     FR_GEMM, 13, GM_EDIM, 0, {{J0(12), U32(GM_MAX_DIM + 1)}}},
    {"job 1 k 65", FR_GEMM, 13, GM_EDIM, 0, {{J1(16), U32(65)}}},
    {"job 0 before job 1",
     FR_GEMM, 13, GM_EDIM, 0, {{J0(8), U32(0)}, {J1(0), 1, 0}}},
    {"count lies: 3, payload read as job 2",
     FR_GEMM, 13, GM_EDTYPE, 0, {{H(16), U32(3)}}},
    /* 14: room for the descriptors */
    {"descriptors missing",
     FR_GEMM, 14, GM_ETRUNC, 0,
     {{J0(5), 1, GM_JOB_HAS_C | GM_JOB_REGIONS}, {J1(5), 1, GM_JOB_REGIONS}}},
    {"length ends in the descriptor",
     FR_REGIONS, 14, GM_ETRUNC, 175 - REGS_BODY, {{0}}},
    {"length lies: ends in the descriptor",
     FR_REGIONS, 14, GM_ETRUNC, 0, {{H(24), U64(175)}}},
    /* 15: the descriptors, as §14.3 */
    {"14.3/1: inline B with an offset",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OPB, 1), U64(4)}}},
    {"14.3/1: inline OUT with an offset",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OUT, 0), U64(0)}}},
    {"14.3/1: C in a region, no HAS_C",
     FR_REGIONS, 15, GM_EFIELD, 0, {{J0(5), 1, GM_JOB_REGIONS}}},
    {"14.3/2: A offset 2",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OPA, 1), U64(2)}}},
    {"14.3/2: OUT offset 65538",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OUT, 1), U64(65538)}}},
    {"14.3/3: A offset + 32 overflows",
     FR_REGIONS, 15, GM_EBOUNDS, 0, {{D0(OPA, 1), U64(U64_MAX - 3)}}},
    {"14.3/3: OUT offset + 24 overflows",
     FR_REGIONS, 15, GM_EBOUNDS, 0, {{D0(OUT, 1), U64(U64_MAX - 7)}}},
    {"14.3/2 before 3",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OPA, 1), U64(U64_MAX - 1)}}},
    {"14.3/4: OUT overlaps A",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OUT, 1), U64(16)}}},
    {"14.3/4: OUT overlaps A by 4 bytes",
     FR_REGIONS, 15, GM_EFIELD, 0,
     {{D0(OPA, 1), U64(20)}, {D0(OUT, 1), U64(0)}}},
    {"14.3/4: OUT overlaps C in part",
     FR_REGIONS, 15, GM_EFIELD, 0,
     {{D0(OUT, 0), U64(RID2)}, {D0(OUT, 1), U64(4)}}},
    {"14.3/4: OUT is C: accepted",
     FR_REGIONS, 0, GM_OK, 0, {{D0(OUT, 0), U64(RID2)}, {D0(OUT, 1), U64(0)}}},
    {"14.3/4: OUT just after A: accepted",
     FR_REGIONS, 0, GM_OK, 0, {{D0(OUT, 1), U64(32)}}},
    {"14.3/4: OUT just before A: accepted",
     FR_REGIONS, 0, GM_OK, 0, {{D0(OPA, 1), U64(24)}, {D0(OUT, 1), U64(0)}}},
    {"14.3/4: A and B overlap: accepted",
     FR_REGIONS, 0, GM_OK, -48, {{D0(OPB, 0), U64(RID)}, {J0(40), U64(0)}}},
    /* 16: inline bytes within max_job_bytes */
    {"job 0 over max_job_bytes",
     FR_GEMM, 16, GM_ETOOBIG, 0,
     {{J0(8), U32(32)}, {J0(12), U32(32)}, {J0(16), U32(32)}}},
    {"job 1 over max_job_bytes",
     FR_GEMM, 16, GM_ETOOBIG, 0,
     {{J1(8), U32(64)}, {J1(12), U32(64)}, {J1(16), U32(64)}}},
    {"inline B over max_job_bytes",
     FR_REGIONS, 16, GM_ETOOBIG, 0, {{J0(12), U32(32)}, {J0(16), U32(33)}}},
    {"all in regions: no limit",
     FR_REGIONS, 0, GM_OK, -48,
     {{D0(OPB, 0), U64(RID)}, {J0(40), U64(0)}, {J0(12), U32(32)},
      {J0(16), U32(33)}}},
    {"descriptor before max_job_bytes",
     FR_REGIONS, 15, GM_EFIELD, 0,
     {{J0(12), U32(32)}, {J0(16), U32(33)}, {D0(OUT, 1), U64(16)}}},
    /* 17: payload_bytes */
    {"payload_bytes one short", FR_GEMM, 17, GM_EFIELD, 0, {{J0(40), U64(63)}}},
    {"payload_bytes one over", FR_GEMM, 17, GM_EFIELD, 0, {{J0(40), U64(65)}}},
    {"payload_bytes 2^64-1",
     FR_GEMM, 17, GM_EFIELD, 0, {{J0(40), U64(U64_MAX)}}},
    {"job 1 payload_bytes one over",
     FR_GEMM, 17, GM_EFIELD, 0, {{J1(40), U64(7)}}},
    {"payload_bytes and length one over",
     FR_GEMM, 17, GM_EFIELD, 1, {{J0(40), U64(65)}}},
    {"C's bytes sent, HAS_C clear", FR_GEMM, 17, GM_EFIELD, 0, {{J0(5), 1, 0}}},
    {"job 0 payload_bytes before job 1 size",
     FR_GEMM, 17, GM_EFIELD, 0,
     {{J0(40), U64(63)}, {J1(8), U32(64)}, {J1(12), U32(64)},
      {J1(16), U32(64)}}},
    {"regions: payload_bytes one short",
     FR_REGIONS, 17, GM_EFIELD, 0, {{J0(40), U64(47)}}},
    {"regions: payload_bytes one over",
     FR_REGIONS, 17, GM_EFIELD, 0, {{J0(40), U64(49)}}},
    {"regions: payload_bytes as if inline",
     FR_REGIONS, 17, GM_EFIELD, 0, {{J0(40), U64(104)}}},
    /* 18: the frame's length */
    {"length one short", FR_GEMM, 18, GM_ETRUNC, -1, {{0}}},
    {"length one over", FR_GEMM, 18, GM_ETRAILING, 1, {{0}}},
    {"length of two frames", FR_GEMM, 18, GM_ETRAILING, GEMM_BODY + 32, {{0}}},
    {"length lies: 1000", FR_GEMM, 18, GM_ETRAILING, 0, {{H(24), U64(1000)}}},
    {"regions: length one short", FR_REGIONS, 18, GM_ETRUNC, -1, {{0}}},
    {"regions: length one over", FR_REGIONS, 18, GM_ETRAILING, 1, {{0}}},
    {"regions: payload missing", FR_REGIONS, 18, GM_ETRUNC, -64, {{0}}},
};
/* clang-format on */

/* The check of §8 that each step belongs to. */
static enum stage step_stage(int step)
{
	if (step == 0)
		return AT_END;
	if (step == 1)
		return AT_SP;
	if (step <= 5)
		return AT_HDR;
	if (step <= 10)
		return AT_REQUEST;
	return step <= 14 ? AT_HEAD : AT_DESCS;
}

/* What gm_proto_check_gemm says of a whole frame that a stream reader
 * refuses at step: the handshake is no GEMM header, a CTRL no GEMM. */
static int whole_code(const struct bad_request *c)
{
	if (c->step == 1)
		return GM_EMAGIC;
	if (c->base == FR_CTRL && c->step != 5)
		return GM_EMSGTYPE;
	return c->code;
}

static const char *const stage_names[] = {
    [AT_SP] = "is_sp",
    [AT_HDR] = "get_hdr",
    [AT_REQUEST] = "check_request",
    [AT_HEAD] = "check_head",
    [AT_DESCS] = "check_descs",
    [AT_REPLY_HDR] = "check_reply_hdr",
    [AT_REPLY_JOB] = "get_reply_job",
    [AT_ERROR] = "get_error",
    [AT_END] = "the end",
};

static int check_row(const char *name, int rv, int want, enum stage at,
		     enum stage want_at, const char *msg)
{
	if (rv != want || at != want_at) {
		print_error("\"%s\": got %s at %s (%s), want %s at %s\n", name,
			    gm_errname(rv), stage_names[at], msg,
			    gm_errname(want), stage_names[want_at]);
		return 1;
	}
	if (rv != GM_OK && msg[0] == '\0') {
		print_error("\"%s\": no message\n", name);
		return 1;
	}
	return 0;
}

static void test_bad_requests(void **state)
{
	char msg[MSG_LEN];
	struct request r;
	int failed = 0, honest, rv;
	uint8_t *frame;
	gm_batch b;
	gm_hdr h;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]);
	     i++) {
		const struct bad_request *c = &bad_requests[i];
		size_t len = make_frame(c->base, c->delta, c->p, &honest);

		rv = read_one(buf, len, &lim_small, &r, msg, sizeof(msg));
		failed += check_row(c->name, rv, c->code, r.at,
				    step_stage(c->step), msg);
		if (r.at > AT_SP)
			assert_int_equal(r.h.id, 77);
		request_free(&r);
		if (!honest)
			continue;
		/* The same frame whole, in a buffer of its size. */
		frame = exact(buf, len);
		msg[0] = '\0';
		rv = gm_proto_check_gemm(frame, len, &lim_small, &h, &b, msg,
					 sizeof(msg));
		exact_free(frame);
		failed +=
		    check_row(c->name, rv, whole_code(c), AT_END, AT_END, msg);
		assert_int_equal(h.id, 77);
	}
	assert_int_equal(failed, 0);
}

/* A reply-side row: the check that refuses it (enum stage; AT_END when
 * the frame is accepted) and its code. */
struct bad_reply {
	const char *name;
	int base;
	enum stage at;
	int code;
	long delta;
	struct patch p[4];
};

#define R(x) (GM_HDR_SIZE + (x))

/* Against a client waiting for the replies of a request of 2 jobs. In
 * the order of §5.1, then §6. */
/* clang-format off */
static const struct bad_reply bad_replies[] = {
    {"reply: accepted", FR_REPLY, AT_END, GM_OK, 0, {{0}}},
    {"failed: accepted", FR_FAILED, AT_END, GM_OK, 0, {{0}}},
    {"bad magic", FR_REPLY, AT_HDR, GM_EMAGIC, 0, {{H(1), 1, 'e'}}},
    {"version 1", FR_REPLY, AT_HDR, GM_EVERSION, 0, {{H(4), 2, 1}}},
    {"type 9", FR_REPLY, AT_HDR, GM_EMSGTYPE, 0, {{H(6), 2, 9}}},
    {"header flags", FR_REPLY, AT_HDR, GM_EFIELD, 0, {{H(20), U32(4)}}},
    {"a GEMM request",
     FR_REPLY, AT_REPLY_HDR, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_GEMM}}},
    {"a CTRL_REPLY",
     FR_REPLY, AT_REPLY_HDR, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_CTRL_REPLY}}},
    {"type before index",
     FR_REPLY, AT_REPLY_HDR, GM_EMSGTYPE, 0,
     {{H(6), 2, GM_MSG_CTRL}, {H(16), U32(9)}}},
    {"job index 2 of 2",
     FR_REPLY, AT_REPLY_HDR, GM_EFIELD, 0, {{H(16), U32(2)}}},
    {"job index 2^32-1",
     FR_FAILED, AT_REPLY_HDR, GM_EFIELD, 0, {{H(16), U32(U32_MAX)}}},
    {"length 159", FR_FAILED, AT_REPLY_HDR, GM_ETRUNC, -1, {{0}}},
    {"length 0", FR_REPLY, AT_REPLY_HDR, GM_ETRUNC, -184, {{0}}},
    {"index before length",
     FR_REPLY, AT_REPLY_HDR, GM_EFIELD, -184, {{H(16), U32(2)}}},
    {"reserved byte 6", FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(6), 1, 1}}},
    {"reserved byte 7, failed",
     FR_FAILED, AT_REPLY_JOB, GM_EFIELD, 0, {{R(7), 1, 0x80}}},
    {"reserved before dtype",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(6), 1, 1}, {R(4), 1, 0}}},
    {"ok, dtype 0", FR_REPLY, AT_REPLY_JOB, GM_EDTYPE, 0, {{R(4), 1, 0}}},
    {"ok, dtype 6", FR_REPLY, AT_REPLY_JOB, GM_EDTYPE, 0, {{R(4), 1, 6}}},
    {"dtype before layout",
     FR_REPLY, AT_REPLY_JOB, GM_EDTYPE, 0, {{R(4), 1, 0}, {R(5), 1, 2}}},
    {"ok, layout 2", FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(5), 1, 2}}},
    {"layout before dims",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(5), 1, 2}, {R(8), U32(0)}}},
    {"ok, m 0", FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(8), U32(0)}}},
    {"ok, n 0", FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(12), U32(0)}}},
    {"ok, m over the ceiling",
     FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(8), U32(GM_MAX_DIM + 1)}}},
    {"ok, n 2^32-1",
     FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(12), U32(U32_MAX)}}},
    {"dims before result_bytes",
     FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(8), U32(0)}, {R(56), U64(1)}}},
    {"ok, result_bytes 23",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(56), U64(23)}}},
    {"ok, result_bytes 25",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(56), U64(25)}}},
    {"ok, result_bytes 2^64-1",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(56), U64(U64_MAX)}}},
    {"ok, result_bytes and length one over",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 1, {{R(56), U64(25)}}},
    {"ok, result in a region: accepted",
     FR_REPLY, AT_END, GM_OK, -24, {{R(56), U64(0)}}},
    {"ok, result in a region and sent",
     FR_REPLY, AT_REPLY_JOB, GM_ETRAILING, 0, {{R(56), U64(0)}}},
    {"ok, fp64 of 48 bytes: accepted",
     FR_REPLY, AT_END, GM_OK, 24, {{R(4), 1, GM_FP64}, {R(56), U64(48)}}},
    {"ok, column-major: accepted",
     FR_REPLY, AT_END, GM_OK, 0, {{R(5), 1, GM_COL_MAJOR}}},
    {"ok, length one short", FR_REPLY, AT_REPLY_JOB, GM_ETRUNC, -1, {{0}}},
    {"ok, length one over", FR_REPLY, AT_REPLY_JOB, GM_ETRAILING, 1, {{0}}},
    {"ok, length lies: 2^64-1",
     FR_REPLY, AT_REPLY_JOB, GM_ETRAILING, 0, {{H(24), U64(U64_MAX)}}},
    {"failed, with a result",
     FR_FAILED, AT_REPLY_JOB, GM_EFIELD, 24, {{R(56), U64(24)}}},
    {"failed, nonsense shape: accepted",
     FR_FAILED, AT_END, GM_OK, 0,
     {{R(4), 1, 200}, {R(5), 1, 7}, {R(8), U32(0)}, {R(12), U32(U32_MAX)}}},
    {"failed, unknown status: accepted",
     FR_FAILED, AT_END, GM_OK, 0, {{R(0), U32(1000)}}},
    {"failed, length one over",
     FR_FAILED, AT_REPLY_JOB, GM_ETRAILING, 1, {{0}}},
    /* §6 */
    {"ERROR: accepted", FR_ERROR, AT_END, GM_OK, 0, {{0}}},
    {"ERROR count 1", FR_ERROR, AT_ERROR, GM_EFIELD, 0, {{H(16), U32(1)}}},
    {"ERROR length 103", FR_ERROR, AT_ERROR, GM_EFIELD, -1, {{0}}},
    {"ERROR length 105", FR_ERROR, AT_ERROR, GM_EFIELD, 1, {{0}}},
    {"ERROR length 0", FR_ERROR, AT_ERROR, GM_EFIELD, -GM_ERROR_SIZE, {{0}}},
    {"ERROR status 0", FR_ERROR, AT_ERROR, GM_EFIELD, 0, {{R(0), U32(0)}}},
    {"ERROR reserved 4..7", FR_ERROR, AT_ERROR, GM_EFIELD, 0, {{R(7), 1, 1}}},
    {"ERROR unknown status: accepted",
     FR_ERROR, AT_END, GM_OK, 0, {{R(0), U32(1000)}}},
    {"ERROR as a GEMM_REPLY",
     FR_ERROR, AT_REPLY_HDR, GM_ETRUNC, 0, {{H(6), 2, GM_MSG_GEMM_REPLY}}},
    {"GEMM_REPLY as an ERROR",
     FR_REPLY, AT_ERROR, GM_EFIELD, 0, {{H(6), 2, GM_MSG_ERROR}}},
};
/* clang-format on */

static void test_bad_replies(void **state)
{
	char msg[MSG_LEN];
	struct answer a;
	int failed = 0, honest, rv;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_replies) / sizeof(bad_replies[0]);
	     i++) {
		const struct bad_reply *c = &bad_replies[i];
		size_t len = make_frame(c->base, c->delta, c->p, &honest);
		struct stream s = {buf, len, 0, 0};

		rv = read_answer(&s, 2, &a, msg, sizeof(msg));
		failed += check_row(c->name, rv, c->code, a.at, c->at, msg);
		assert_int_equal(a.h.id, 77);
		if (rv == GM_OK)
			assert_int_equal(s.pos, len);
		exact_free(a.result);
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
	    cmocka_unit_test(test_ctrl_round_trip),
	    cmocka_unit_test(test_message_text_cut),
	    cmocka_unit_test(test_id_echo),
	    cmocka_unit_test(test_hdr_prefix),
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
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_bad_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
