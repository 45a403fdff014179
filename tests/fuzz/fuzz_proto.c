/*
 * fuzz_proto.c - the wire-format decoders on untrusted bytes: the common
 * header, a whole GEMM request (then every job, by the iterator the
 * daemon uses), a GEMM reply (as a client checks one) and an ERROR
 * message. Beyond "no crash, no sanitizer report", it checks what the
 * daemon relies on after a check passed: every inline operand lies inside
 * the buffer and the jobs fill it exactly, a region descriptor passes
 * gm_proto_check_refs, each job header re-encodes to the bytes it came
 * from, and every failure has a known code and a NUL-terminated message.
 * The hand-off records of the region socket are decoded too.
 */
#include <string.h>

#include "fuzz.h"
#include "gm_proto.h"
#include "gm_proto_region.h"

/* The daemon's defaults (config/gemmd.json), so that the limits it
 * enforces are the ones fuzzed. */
static const gm_limits lim = {
    .max_jobs = 4096, .max_dim = 65536, .max_job_bytes = 1ull << 30};

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
	FUZZ_CHECK(memchr(msg, '\0', msglen) != NULL);
}

static void fuzz_hdr(const uint8_t *data, size_t size)
{
	char msg[GM_MSG_TEXT + 1];
	gm_hdr h;
	int rv;

	rv = gm_proto_get_hdr(data, size, &h, msg, sizeof(msg));
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		FUZZ_CHECK(h.id == (size >= 16 ? le(data + 8, 8) : 0));
		return;
	}
	FUZZ_CHECK(size >= GM_HDR_SIZE && h.version == GM_PROTO_VERSION);
	if (h.type != GM_MSG_GEMM && h.type != GM_MSG_GEMM_REPLY)
		FUZZ_CHECK(h.count == size - GM_HDR_SIZE);
}

/* Locates the inline operands of a job that starts at job (its header)
 * independently of the iterator; returns the end of its payload. */
static const uint8_t *check_operands(const uint8_t *job, const uint8_t *end,
				     const gm_job_desc *d,
				     const gm_job_operands *ops)
{
	const uint8_t *q = job + GM_JOB_HDR_SIZE;
	char msg[GM_MSG_TEXT + 1];
	gm_job_sizes z;

	FUZZ_CHECK(gm_job_sizes_of(d, &z) == GM_OK);
	if (d->flags & GM_JOB_REGIONS) {
		FUZZ_CHECK(gm_proto_check_refs(d, &z, ops->ref, msg,
					       sizeof(msg)) == GM_OK);
		q += GM_REGION_DESC_SIZE;
	} else {
		FUZZ_CHECK(gm_job_check(d, &lim, msg, sizeof(msg)) == GM_OK);
		for (int op = 0; op < GM_OPND_COUNT; op++)
			FUZZ_CHECK(!gm_ref_in_region(ops->ref, op));
	}
	for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
		uint64_t len = gm_operand_bytes(&z, op);

		if (len == 0 || gm_ref_in_region(ops->ref, op)) {
			FUZZ_CHECK(ops->data[op] == NULL);
			continue;
		}
		FUZZ_CHECK(ops->data[op] == q);
		FUZZ_CHECK(len <= (uint64_t)(end - q));
		q += len;
	}
	return q;
}

/* Walks a request that gm_proto_check_gemm accepted, with both
 * iterators: every operand lies inside the buffer, the jobs fill it
 * exactly, and each job header re-encodes to the bytes it came from. */
static void walk_jobs(const uint8_t *data, size_t size, uint32_t count)
{
	const uint8_t *end = data + size, *a, *b, *c;
	const uint8_t *job = data + GM_HDR_SIZE + GM_BATCH_SIZE;
	uint8_t again[GM_JOB_HDR_SIZE];
	gm_job_iter it, it2;
	gm_job_operands ops;
	gm_job_desc d, d2;
	uint32_t n = 0;

	gm_proto_jobs_begin(data, size, &it);
	gm_proto_jobs_begin(data, size, &it2);
	while (gm_proto_jobs_next_ops(&it, &d, &ops) == GM_OK) {
		FUZZ_CHECK(gm_proto_jobs_next(&it2, &d2, &a, &b, &c) == GM_OK);
		FUZZ_CHECK(a == ops.data[GM_OPND_A] &&
			   b == ops.data[GM_OPND_B] &&
			   c == ops.data[GM_OPND_C]);
		gm_proto_put_job_refs(
		    again, &d, (d.flags & GM_JOB_REGIONS) ? ops.ref : NULL);
		FUZZ_CHECK(memcmp(again, job, GM_JOB_HDR_SIZE) == 0);
		job = check_operands(job, end, &d, &ops);
		n++;
	}
	FUZZ_CHECK(gm_proto_jobs_next(&it2, &d2, &a, &b, &c) == GM_ENOTFOUND);
	FUZZ_CHECK(n == count && job == end);
}

static void fuzz_gemm(const uint8_t *data, size_t size)
{
	uint8_t again[GM_HDR_SIZE + GM_BATCH_SIZE];
	char msg[GM_MSG_TEXT + 1];
	gm_batch b;
	gm_hdr h;
	int rv;

	rv = gm_proto_check_gemm(data, size, &lim, &h, &b, msg, sizeof(msg));
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		return;
	}
	FUZZ_CHECK(h.type == GM_MSG_GEMM && h.count >= 1 &&
		   h.count <= lim.max_jobs);
	FUZZ_CHECK(b.priority <= GM_BATCH_PRIO_MAX);
	gm_proto_put_hdr(again, GM_MSG_GEMM, h.id, h.count);
	gm_proto_put_batch(again + GM_HDR_SIZE, &b);
	FUZZ_CHECK(memcmp(again, data, sizeof(again)) == 0);
	walk_jobs(data, size, h.count);
}

/* A client checks a reply against the id and job count it sent; take
 * both from the bytes so that valid replies are reachable. */
static void fuzz_reply(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size;
	char msg[GM_MSG_TEXT + 1];
	gm_reply_job r;
	gm_job_iter it;
	uint32_t count, n = 0;
	int rv;

	if (size < GM_HDR_SIZE)
		return;
	count = (uint32_t)le(data + 16, 4);
	rv = gm_proto_check_reply(data, size, le(data + 8, 8), count, msg,
				  sizeof(msg));
	if (rv != GM_OK) {
		check_failure(rv, msg, sizeof(msg));
		return;
	}
	gm_proto_reply_begin(data, size, &it);
	while (gm_proto_reply_next(&it, &r) == GM_OK) {
		FUZZ_CHECK(strlen(r.message) <= GM_MSG_TEXT);
		if (r.result_bytes != 0) {
			FUZZ_CHECK(r.status == GM_OK && r.result != NULL);
			FUZZ_CHECK(r.result >= data && r.result < end);
			FUZZ_CHECK(r.result_bytes <=
				   (uint64_t)(end - r.result));
		}
		n++;
	}
	FUZZ_CHECK(n == count);
}

static void fuzz_error(const uint8_t *data, size_t size)
{
	char message[GM_MSG_TEXT + 1];
	uint32_t status;
	int rv;

	rv = gm_proto_get_error(data, size, &status, message);
	FUZZ_CHECK(rv >= 0 && rv < GM_ERR_COUNT);
	FUZZ_CHECK(strlen(message) <= GM_MSG_TEXT);
	if (rv == GM_OK)
		FUZZ_CHECK(size == GM_HDR_SIZE + GM_ERROR_SIZE);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_hdr(data, size);
	fuzz_gemm(data, size);
	fuzz_reply(data, size);
	fuzz_error(data, size);
	fuzz_handoff(data, size);
	return 0;
}
