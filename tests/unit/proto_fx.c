/*
 * proto_fx.c - the tests of proto/gm_proto share these; see proto_fx.h.
 */
#include "proto_fx.h"

uint8_t buf[PROTO_BUF];
char msg[MSG_LEN];

const gm_limits lim_small = {.max_jobs = 4,
			     .max_dim = 64,
			     .max_job_bytes = 4096,
			     .max_frame = 1024,
			     .max_ctrl = 64};

const gm_limits lim_open = {.max_jobs = GM_MAX_JOBS,
			    .max_dim = GM_MAX_DIM,
			    .max_job_bytes = UINT64_MAX,
			    .max_frame = UINT64_MAX,
			    .max_ctrl = UINT64_MAX};

void fill(uint8_t *p, uint64_t n, uint8_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

int same(const uint8_t *p, uint64_t n, uint8_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

void put_le(uint8_t *p, int width, uint64_t v)
{
	for (int i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t get_le(const uint8_t *p, int width)
{
	uint64_t v = 0;

	while (width-- > 0)
		v = v << 8 | p[width];
	return v;
}

void apply_patches(uint8_t *frame, const struct patch *p, int max)
{
	for (int i = 0; i < max && p[i].width != 0; i++)
		put_le(frame + p[i].off, p[i].width, p[i].val);
}

gm_job_desc job(int dtype, uint32_t m, uint32_t n, uint32_t k)
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
size_t put_request(uint8_t *p, size_t room, uint64_t id, const gm_batch *b,
		   const gm_job_desc *d,
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
uint8_t *exact(const uint8_t *p, uint64_t n)
{
	uint8_t *q;

	if (n == 0)
		return NULL;
	q = malloc((size_t)n + 1);
	assert_non_null(q);
	memcpy(q + 1, p, (size_t)n);
	return q + 1;
}

void exact_free(uint8_t *p)
{
	if (p != NULL)
		free(p - 1);
}

uint8_t *take(struct stream *s, uint64_t n)
{
	uint8_t *q;

	assert_true(n <= s->len - s->pos);
	q = exact(s->p + s->pos, n);
	s->pos += (size_t)n;
	return q;
}

void request_free(struct request *r)
{
	exact_free(r->head);
	exact_free(r->desc);
	exact_free(r->body);
	r->head = r->desc = r->body = NULL;
}

void check_walk(const struct request *r)
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

int read_request(struct stream *s, const gm_limits *lim, struct request *r)
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
			snprintf(msg, sizeof(msg), "a protocol v1 client");
			return GM_EVERSION;
		}
	}
	r->at = AT_HDR;
	p = take(s, GM_HDR_SIZE);
	rv = gm_proto_get_hdr(p, GM_HDR_SIZE, &r->h, msg, sizeof(msg));
	exact_free(p);
	if (rv != GM_OK)
		return rv;
	r->at = AT_REQUEST;
	if ((rv = gm_proto_check_request(&r->h, lim, msg, sizeof(msg))) !=
	    GM_OK)
		return rv;
	if (r->h.type == GM_MSG_CTRL) {
		r->body = take(s, r->h.length);
		r->at = AT_END;
		return GM_OK;
	}
	r->at = AT_HEAD;
	r->head = take(s, gm_proto_head_size(&r->h));
	if ((rv = gm_proto_check_head(&r->h, r->head, lim, &r->b, &r->ndesc,
				      msg, sizeof(msg))) != GM_OK)
		return rv;
	r->at = AT_DESCS;
	r->desc = take(s, (uint64_t)r->ndesc * GM_REGION_DESC_SIZE);
	if ((rv = gm_proto_check_descs(&r->h, r->head, r->desc, lim,
				       &r->payload_bytes, msg, sizeof(msg))) !=
	    GM_OK)
		return rv;
	r->at = AT_END;
	r->body = take(s, r->payload_bytes);
	check_walk(r);
	return GM_OK;
}

int read_one(const uint8_t *p, size_t len, const gm_limits *lim,
	     struct request *r)
{
	struct stream s = {p, len, 0, 1};
	int rv = read_request(&s, lim, r);

	if (rv == GM_OK)
		assert_int_equal(s.pos, len);
	return rv;
}

int check_gemm(const uint8_t *p, size_t len, const gm_limits *lim, gm_hdr *h,
	       gm_batch *b)
{
	return gm_proto_check_gemm(p, len, lim, h, b, msg, sizeof(msg));
}

int read_answer(struct stream *s, uint32_t njobs, struct answer *a)
{
	uint8_t *p;
	int rv;

	memset(a, 0, sizeof(*a));
	msg[0] = '\0';
	a->at = AT_HDR;
	p = take(s, GM_HDR_SIZE);
	rv = gm_proto_get_hdr(p, GM_HDR_SIZE, &a->h, msg, sizeof(msg));
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
			snprintf(msg, sizeof(msg), "bad ERROR frame");
		return rv;
	}
	a->at = AT_REPLY_HDR;
	if ((rv = gm_proto_check_reply_hdr(&a->h, njobs, msg, sizeof(msg))) !=
	    0)
		return rv;
	a->at = AT_REPLY_JOB;
	p = take(s, GM_REPLY_JOB_SIZE);
	rv = gm_proto_get_reply_job(&a->h, p, &a->r, msg, sizeof(msg));
	exact_free(p);
	if (rv != GM_OK)
		return rv;
	a->at = AT_END;
	a->result = take(s, a->r.result_bytes);
	return GM_OK;
}

void assert_job_equal(const gm_job_desc *x, const gm_job_desc *y)
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

size_t put_reply(uint8_t *p, uint64_t id, uint32_t index, const gm_reply_job *r)
{
	gm_proto_put_hdr(p, GM_MSG_GEMM_REPLY, id, index,
			 GM_REPLY_JOB_SIZE + r->result_bytes);
	gm_proto_put_reply_job(p + GM_HDR_SIZE, r);
	fill(p + GM_HDR_SIZE + GM_REPLY_JOB_SIZE, r->result_bytes,
	     (uint8_t)(40 + index));
	return GM_HDR_SIZE + GM_REPLY_JOB_SIZE + (size_t)r->result_bytes;
}
