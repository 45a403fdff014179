/*
 * fuzz_proto.c - the wire-format decoders on untrusted bytes. The input
 * is read twice as a connection's byte stream: once as the daemon reads
 * requests (the first 4 bytes for a v1 client, then frame after frame:
 * header, request check, head, descriptors, payload, each read only
 * once the check before it allowed it, into a heap buffer of exactly
 * that size, and the rest of a refused frame's body skipped), and once
 * as a client reads what the daemon sent (GEMM_REPLY, ERROR,
 * CTRL_REPLY). Beyond "no crash, no sanitizer report" it checks what the
 * daemon relies on after a check passed: gm_proto_check_gemm on the
 * whole frame agrees with the stream checks, every inline operand the
 * iterator hands out lies inside the payload and the jobs fill it
 * exactly, each job header re-encodes to the bytes it came from; and
 * every failure has a known code and a NUL-terminated message. The
 * hand-off records of the region socket are decoded too.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gm_proto.h"
#include "gm_proto_region.h"

/* The daemon's defaults (PROTOCOL.md §10), so that the limits it
 * enforces are the ones fuzzed. */
static const gm_limits lim = {.max_jobs = 4096,
			      .max_dim = 65536,
			      .max_job_bytes = 1ull << 30,
			      .max_frame = 1ull << 30,
			      .max_ctrl = 1ull << 16};

/* The job count of the request a fuzzed client waits on. */
#define CLIENT_JOBS 4

/* A little-endian field of n bytes, read independently of gm_proto. */
static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | p[n];
	return v;
}

static void check_failure(int rv, const char *msg, size_t msglen)
{
	FUZZ_CHECK(rv > 0 && rv < GM_ERR_COUNT);
	FUZZ_CHECK(memchr(msg, '\0', msglen) != NULL && msg[0] != '\0');
}

/* The input as a connection: pos bytes of it read so far. */
struct stream {
	const uint8_t *p;
	size_t len, pos;
};

/* Reads the next n bytes into *out, an exact heap copy (NULL for 0
 * bytes); returns 0, reading nothing, when the input ends before them:
 * the connection would wait for bytes that never come. */
static int take(struct stream *s, uint64_t n, uint8_t **out)
{
	*out = NULL;
	if (n > s->len - s->pos)
		return 0;
	if (n != 0) {
		*out = malloc((size_t)n);
		FUZZ_CHECK(*out != NULL);
		memcpy(*out, s->p + s->pos, (size_t)n);
	}
	s->pos += (size_t)n;
	return 1;
}

/* Skips n bytes, the rest of a refused frame; 0 when they are not all
 * there. */
static int skip(struct stream *s, uint64_t n)
{
	if (n > s->len - s->pos)
		return 0;
	s->pos += (size_t)n;
	return 1;
}

/* A request frame as read so far. */
struct request {
	gm_hdr h;
	uint8_t *head, *desc, *payload;
	uint32_t ndesc;
	uint64_t payload_bytes;
};

/* Walks an accepted request with the iterator, with and without the
 * payload at hand: operands inside the payload, back to back, filling
 * it; headers that re-encode; descriptors that pass the checks. */
static void walk_jobs(const struct request *r)
{
	const uint8_t *job = r->head + GM_BATCH_SIZE;
	uint8_t again[GM_JOB_HDR_SIZE];
	gm_job_operands ops, bare_ops;
	gm_job_iter it, bare;
	gm_job_desc d, bare_d;
	char msg[GM_MSG_TEXT + 1];
	uint64_t off = 0;
	gm_job_sizes z;
	uint32_t n = 0;

	gm_proto_jobs_begin(&it, &r->h, r->head, r->desc, r->payload);
	gm_proto_jobs_begin(&bare, &r->h, r->head, r->desc, NULL);
	while (gm_proto_jobs_next(&it, &d, &ops) == GM_OK) {
		FUZZ_CHECK(gm_proto_jobs_next(&bare, &bare_d, &bare_ops) ==
			   GM_OK);
		FUZZ_CHECK(memcmp(ops.ref, bare_ops.ref, sizeof(ops.ref)) == 0);
		FUZZ_CHECK(gm_job_sizes_of(&d, &z) == GM_OK);
		if (d.flags & GM_JOB_REGIONS)
			FUZZ_CHECK(gm_proto_check_refs(&d, &z, ops.ref, msg,
						       sizeof(msg)) == GM_OK);
		else
			for (int op = 0; op < GM_OPND_COUNT; op++)
				FUZZ_CHECK(!gm_ref_in_region(ops.ref, op));
		gm_proto_put_job_refs(
		    again, &d, (d.flags & GM_JOB_REGIONS) ? ops.ref : NULL);
		FUZZ_CHECK(memcmp(again, job, GM_JOB_HDR_SIZE) == 0);
		FUZZ_CHECK(ops.inline_off == off && bare_ops.inline_off == off);
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
			uint64_t len = gm_operand_bytes(&z, op);

			FUZZ_CHECK(bare_ops.data[op] == NULL &&
				   bare_ops.off[op] == ops.off[op]);
			if (len == 0 || gm_ref_in_region(ops.ref, op)) {
				FUZZ_CHECK(ops.data[op] == NULL);
				continue;
			}
			FUZZ_CHECK(ops.off[op] == off);
			FUZZ_CHECK(len <= r->payload_bytes - off);
			FUZZ_CHECK(ops.data[op] == r->payload + off);
			off += len;
		}
		FUZZ_CHECK(ops.inline_bytes == off - ops.inline_off);
		job += GM_JOB_HDR_SIZE;
		n++;
	}
	FUZZ_CHECK(gm_proto_jobs_next(&bare, &bare_d, &bare_ops) ==
		   GM_ENOTFOUND);
	FUZZ_CHECK(n == r->h.count && off == r->payload_bytes);
}

/* Runs the checks after the header, as far as they pass; returns the
 * first failure's code or GM_OK. *more says whether the connection goes
 * on (its next frame is found after this one's body). */
static int read_body(struct stream *s, struct request *r, size_t start,
		     int *more)
{
	char msg[GM_MSG_TEXT + 1];
	gm_batch b;
	int rv;

	*more = 0;
	if ((rv = gm_proto_check_request(&r->h, &lim, msg, sizeof(msg))) !=
	    GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		/* A reply type, or a length over the limit: the daemon
		 * cannot find the next frame (PROTOCOL.md §8). */
		if (rv != GM_EMSGTYPE && rv != GM_ETOOBIG)
			*more = skip(s, r->h.length);
		return rv;
	}
	if (r->h.type == GM_MSG_CTRL) {
		*more = skip(s, r->h.length);
		return GM_OK;
	}
	if (!take(s, gm_proto_head_size(&r->h), &r->head))
		return -1;
	rv = gm_proto_check_head(&r->h, r->head, &lim, &b, &r->ndesc, msg,
				 sizeof(msg));
	if (rv == GM_OK) {
		FUZZ_CHECK(b.priority <= GM_BATCH_PRIO_MAX);
		FUZZ_CHECK(r->ndesc <= r->h.count);
		if (!take(s, (uint64_t)r->ndesc * GM_REGION_DESC_SIZE,
			  &r->desc))
			return -1;
		rv = gm_proto_check_descs(&r->h, r->head, r->desc, &lim,
					  &r->payload_bytes, msg, sizeof(msg));
	}
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		*more = skip(s, GM_HDR_SIZE + r->h.length - (s->pos - start));
		return rv;
	}
	FUZZ_CHECK(s->pos - start + r->payload_bytes ==
		   GM_HDR_SIZE + r->h.length);
	if (!take(s, r->payload_bytes, &r->payload))
		return -1;
	walk_jobs(r);
	*more = 1;
	return GM_OK;
}

/* The frame the stream checks judged, judged whole by
 * gm_proto_check_gemm: the same code, and the id echoed. */
static void check_whole(const struct stream *s, size_t start, const gm_hdr *h,
			int rv)
{
	size_t len = s->len - start;
	char msg[GM_MSG_TEXT + 1];
	uint8_t *frame;
	gm_batch b;
	gm_hdr wh;
	int wrv;

	if (h->length <= len - GM_HDR_SIZE)
		len = GM_HDR_SIZE + (size_t)h->length;
	else if (rv == GM_OK || rv < 0)
		return; /* the stream never judged what is not there */
	if ((frame = malloc(len)) == NULL)
		abort();
	memcpy(frame, s->p + start, len);
	wrv = gm_proto_check_gemm(frame, len, &lim, &wh, &b, msg, sizeof(msg));
	free(frame);
	FUZZ_CHECK(wh.id == h->id);
	if (len == GM_HDR_SIZE + h->length)
		FUZZ_CHECK(wrv == rv);
	else
		FUZZ_CHECK(wrv == rv || wrv == GM_ETRUNC);
}

/* Reads request frames as the daemon does until the connection would
 * close or wait. */
static void fuzz_requests(const uint8_t *data, size_t size)
{
	struct stream s = {data, size, 0};
	char msg[GM_MSG_TEXT + 1];
	int more = 1, rv;

	if (size >= 4 && gm_proto_is_sp(data, 4))
		return; /* a v1 client: answered EVERSION, closed */
	while (more) {
		struct request r = {0};
		size_t start = s.pos;
		uint8_t *hdr;

		if (!take(&s, GM_HDR_SIZE, &hdr))
			break;
		rv = gm_proto_get_hdr(hdr, GM_HDR_SIZE, &r.h, msg, sizeof(msg));
		FUZZ_CHECK(r.h.id == le(hdr + 8, 8));
		free(hdr);
		if (rv != GM_OK) {
			check_failure(rv, msg, sizeof(msg));
			check_whole(&s, start, &r.h, rv);
			break;
		}
		FUZZ_CHECK(r.h.version == GM_PROTO_VERSION);
		FUZZ_CHECK(r.h.type >= GM_MSG_GEMM && r.h.type <= GM_MSG_ERROR);
		rv = read_body(&s, &r, start, &more);
		if (r.h.type == GM_MSG_GEMM)
			check_whole(&s, start, &r.h, rv);
		free(r.head);
		free(r.desc);
		free(r.payload);
	}
}

/* One GEMM_REPLY as a client reads it: header checks, the record, then
 * exactly the result it announces. Returns 0 when the client would drop
 * the connection or wait. */
static int read_reply(struct stream *s, const gm_hdr *h)
{
	char msg[GM_MSG_TEXT + 1];
	uint8_t *rec, *result;
	gm_reply_job r;
	int rv;

	rv = gm_proto_check_reply_hdr(h, CLIENT_JOBS, msg, sizeof(msg));
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		return 0;
	}
	FUZZ_CHECK(h->count < CLIENT_JOBS && h->length >= GM_REPLY_JOB_SIZE);
	if (!take(s, GM_REPLY_JOB_SIZE, &rec))
		return 0;
	rv = gm_proto_get_reply_job(h, rec, &r, msg, sizeof(msg));
	free(rec);
	FUZZ_CHECK(strlen(r.message) <= GM_MSG_TEXT);
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		return 0;
	}
	FUZZ_CHECK(h->length == GM_REPLY_JOB_SIZE + r.result_bytes);
	if (r.status != GM_OK) {
		FUZZ_CHECK(r.result_bytes == 0);
	} else if (r.result_bytes != 0) {
		FUZZ_CHECK(r.m >= 1 && r.m <= GM_MAX_DIM);
		FUZZ_CHECK(r.n >= 1 && r.n <= GM_MAX_DIM);
		FUZZ_CHECK(r.layout <= GM_COL_MAJOR);
		FUZZ_CHECK(r.result_bytes ==
			   (uint64_t)r.m * r.n * gm_dtype_size(r.dtype));
	}
	if (!take(s, r.result_bytes, &result))
		return 0;
	free(result);
	return 1;
}

/* Reads what the daemon sent, as a client waiting on a request of
 * CLIENT_JOBS jobs, until it would drop the connection or wait. */
static void fuzz_answers(const uint8_t *data, size_t size)
{
	struct stream s = {data, size, 0};
	char msg[GM_MSG_TEXT + 1];
	int more = 1;

	while (more) {
		char text[GM_MSG_TEXT + 1];
		uint32_t status;
		uint8_t *p;
		gm_hdr h;
		int rv;

		if (!take(&s, GM_HDR_SIZE, &p))
			break;
		rv = gm_proto_get_hdr(p, GM_HDR_SIZE, &h, msg, sizeof(msg));
		free(p);
		if (rv != GM_OK) {
			check_failure(rv, msg, sizeof(msg));
			break;
		}
		switch (h.type) {
		case GM_MSG_ERROR:
			if (!(more = take(&s, h.length, &p)))
				break;
			rv = gm_proto_get_error(&h, p, &status, text);
			free(p);
			FUZZ_CHECK(rv == GM_OK || rv == GM_EFIELD);
			FUZZ_CHECK(strlen(text) <= GM_MSG_TEXT);
			if (rv == GM_OK)
				FUZZ_CHECK(status != GM_OK && h.count == 0 &&
					   h.length == GM_ERROR_SIZE);
			break;
		case GM_MSG_CTRL_REPLY:
			more = skip(&s, h.length);
			break;
		default:
			more = read_reply(&s, &h);
		}
	}
}

/* The records of the region hand-off socket, which any local process
 * may connect to. */
static void fuzz_handoff(const uint8_t *data, size_t size)
{
	uint8_t again[GM_HANDOFF_REQ_SIZE];
	char msg[GM_MSG_TEXT + 1];
	gm_handoff_req req;
	gm_handoff_rep rep;
	int rv;

	rv = gm_handoff_get_req(data, size, &req, msg, sizeof(msg));
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
	} else {
		FUZZ_CHECK(size == GM_HANDOFF_REQ_SIZE);
		gm_handoff_put_req(again, &req);
		FUZZ_CHECK(memcmp(again, data, sizeof(again)) == 0);
	}
	rv = gm_handoff_get_rep(data, size, &rep, msg, sizeof(msg));
	if (rv != GM_OK)
		check_failure(rv, msg, sizeof(msg));
	else
		FUZZ_CHECK(size == GM_HANDOFF_REP_SIZE &&
			   strlen(rep.message) <= GM_MSG_TEXT);
}

/* The header alone, on inputs of any length: the id is echoed whenever
 * its bytes are there. */
static void fuzz_hdr(const uint8_t *data, size_t size)
{
	char msg[GM_MSG_TEXT + 1];
	gm_hdr h;
	int rv;

	rv = gm_proto_get_hdr(data, size, &h, msg, sizeof(msg));
	FUZZ_CHECK(h.id == (size >= 16 ? le(data + 8, 8) : 0));
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		return;
	}
	FUZZ_CHECK(size >= GM_HDR_SIZE && h.flags == 0);
	FUZZ_CHECK(h.length == le(data + 24, 8) && h.count == le(data + 16, 4));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_hdr(data, size);
	fuzz_requests(data, size);
	fuzz_answers(data, size);
	fuzz_handoff(data, size);
	return 0;
}
