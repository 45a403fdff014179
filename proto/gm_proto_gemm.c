/*
 * gm_proto_gemm.c - gemmd wire format v2: GEMM requests, their batch
 * header, their jobs' headers and payloads, and the region descriptors
 * of jobs that have them (gm_proto_region.h); see gm_proto.h. Decoders
 * check as gm_proto.c's do: in PROTOCOL.md's order, trusting no length
 * not compared with the bytes present, allocating nothing.
 */
#include "gm_proto.h"
#include "gm_proto_impl.h"
#include "gm_proto_region.h"

#include <inttypes.h>
#include <string.h>

void gm_proto_put_batch(uint8_t *p, const gm_batch *b)
{
	memset(p, 0, GM_BATCH_SIZE);
	p[0] = b->priority;
	put_u32(p + 4, b->deadline_ms);
	put_u32(p + 8, b->flags);
}

static int check_batch(const uint8_t *p, gm_batch *b, char *msg, size_t msglen)
{
	b->priority = p[0];
	b->deadline_ms = get_u32(p + 4);
	b->flags = get_u32(p + 8);
	if (b->priority > GM_BATCH_PRIO_MAX)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "batch priority=%u, must be 0..%d",
				     b->priority, GM_BATCH_PRIO_MAX);
	if (p[1] != 0 || p[2] != 0 || p[3] != 0 || get_u32(p + 12) != 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "batch reserved bytes must be 0");
	if (b->flags & ~GM_BATCH_DETACH)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "batch flags=0x%" PRIx32
				     ", only bit 0 (detach) is defined",
				     b->flags);
	return GM_OK;
}

/* Prefixes a job's failure with its index. */
static int job_fail(int rv, uint32_t i, const char *detail, char *msg,
		    size_t msglen)
{
	return gm_proto_fail(rv, msg, msglen, "job %" PRIu32 ": %s", i, detail);
}

int gm_proto_check_head(const gm_hdr *h, const uint8_t *head,
			const gm_limits *lim, gm_batch *b, uint32_t *ndesc,
			char *msg, size_t msglen)
{
	char detail[2 * GM_MSG_TEXT];
	const uint8_t *p = head + GM_BATCH_SIZE;
	uint64_t need;
	int rv;

	memset(b, 0, sizeof(*b));
	*ndesc = 0;
	if ((rv = check_batch(head, b, msg, msglen)) != 0)
		return rv;
	for (uint32_t i = 0; i < h->count; i++, p += GM_JOB_HDR_SIZE) {
		rv = gm_proto_check_job_head(p, lim, detail, sizeof(detail));
		if (rv != 0)
			return job_fail(rv, i, detail, msg, msglen);
		*ndesc += (p[5] & GM_JOB_REGIONS) != 0;
	}
	need = gm_proto_head_size(h) + (uint64_t)*ndesc * GM_REGION_DESC_SIZE;
	if (h->length < need)
		return gm_proto_fail(GM_ETRUNC, msg, msglen,
				     "%" PRIu32
				     " region descriptors need %" PRIu64
				     " body bytes, length=%" PRIu64,
				     *ndesc, need, h->length);
	return GM_OK;
}

/* Checks one job's descriptor (when it has one) and payload_bytes, and
 * adds its inline bytes to *sum. */
static int check_job_payload(const uint8_t *p, const uint8_t *desc,
			     const gm_limits *lim, uint64_t *sum, char *msg,
			     size_t msglen)
{
	gm_region_ref ref[GM_OPND_COUNT] = {{0}};
	uint64_t payload = get_u64(p + 40), inl;
	gm_job_desc d;
	gm_job_sizes sz;
	int rv;

	gm_proto_parse_job(p, &d);
	gm_job_sizes_of(&d, &sz);
	if (desc != NULL) {
		gm_proto_get_refs(desc, ref);
		if ((rv = gm_proto_check_refs(&d, &sz, ref, msg, msglen)) != 0)
			return rv;
	}
	inl = gm_proto_inline_bytes(&sz, ref);
	if ((rv = gm_proto_check_job_bytes(
		 inl, lim, desc ? "inline A+B+C" : "A+B+C", msg, msglen)) != 0)
		return rv;
	if (payload != inl)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "payload_bytes=%" PRIu64
				     ", must be %" PRIu64 " (A %" PRIu64
				     " + B %" PRIu64 " + C %" PRIu64 "%s)",
				     payload, inl, sz.a, sz.b, sz.c,
				     desc ? ", those inline" : "");
	/* Dims are at most GM_MAX_DIM, so each inl is below 3 * 2^43, and
	 * count is at most 2^16: the sum stays below 2^62 whatever
	 * max_job_bytes is. */
	*sum += inl;
	return GM_OK;
}

int gm_proto_check_descs(const gm_hdr *h, const uint8_t *head,
			 const uint8_t *desc, const gm_limits *lim,
			 uint64_t *payload, char *msg, size_t msglen)
{
	char detail[2 * GM_MSG_TEXT];
	const uint8_t *p = head + GM_BATCH_SIZE;
	uint64_t sum = 0, front;
	uint32_t nd = 0;
	int rv;

	*payload = 0;
	for (uint32_t i = 0; i < h->count; i++, p += GM_JOB_HDR_SIZE) {
		const uint8_t *d = NULL;

		if (p[5] & GM_JOB_REGIONS)
			d = desc + (uint64_t)nd++ * GM_REGION_DESC_SIZE;
		rv = check_job_payload(p, d, lim, &sum, detail, sizeof(detail));
		if (rv != 0)
			return job_fail(rv, i, detail, msg, msglen);
	}
	front = gm_proto_head_size(h) + (uint64_t)nd * GM_REGION_DESC_SIZE;
	if (h->length - front < sum)
		return gm_proto_fail(
		    GM_ETRUNC, msg, msglen,
		    "length=%" PRIu64 ", the jobs need %" PRIu64
		    " (head and descriptors %" PRIu64 " + payload %" PRIu64 ")",
		    h->length, front + sum, front, sum);
	if (h->length - front > sum)
		return gm_proto_fail(
		    GM_ETRAILING, msg, msglen,
		    "length=%" PRIu64 ", the jobs need %" PRIu64
		    " (head and descriptors %" PRIu64 " + payload %" PRIu64 ")",
		    h->length, front + sum, front, sum);
	*payload = sum;
	return GM_OK;
}

int gm_proto_check_gemm(const void *buf, size_t len, const gm_limits *lim,
			gm_hdr *h, gm_batch *b, char *msg, size_t msglen)
{
	const uint8_t *p = buf;
	uint64_t payload;
	uint32_t ndesc;
	int rv;

	memset(b, 0, sizeof(*b));
	if ((rv = gm_proto_get_hdr(p, len, h, msg, msglen)) != 0)
		return rv;
	if ((rv = gm_proto_want_type(h, GM_MSG_GEMM, msg, msglen)) != 0)
		return rv;
	if (h->length != len - GM_HDR_SIZE)
		return gm_proto_fail(
		    h->length > len - GM_HDR_SIZE ? GM_ETRUNC : GM_ETRAILING,
		    msg, msglen, "length=%" PRIu64 ", %zu body bytes present",
		    h->length, len - GM_HDR_SIZE);
	if ((rv = gm_proto_check_request(h, lim, msg, msglen)) != 0 ||
	    (rv = gm_proto_check_head(h, p + GM_HDR_SIZE, lim, b, &ndesc, msg,
				      msglen)) != 0)
		return rv;
	return gm_proto_check_descs(h, p + GM_HDR_SIZE,
				    p + GM_HDR_SIZE + gm_proto_head_size(h),
				    lim, &payload, msg, msglen);
}

int gm_proto_gemm_size(const gm_job_desc *d, uint32_t n, uint64_t *size)
{
	uint64_t total = GM_HDR_SIZE + GM_BATCH_SIZE;
	gm_job_sizes sz;
	uint32_t i;
	int rv;

	*size = 0;
	for (i = 0; i < n; i++) {
		if ((rv = gm_job_sizes_of(&d[i], &sz)) != 0)
			return rv;
		if (__builtin_add_overflow(total, GM_JOB_HDR_SIZE, &total) ||
		    __builtin_add_overflow(total, sz.a + sz.b + sz.c, &total))
			return GM_EOVERFLOW;
	}
	*size = total;
	return GM_OK;
}
