/*
 * gm_proto_reply.c - GEMM_REPLY and ERROR frames: writers and the
 * validating decoders a client runs on what the daemon sent.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gm_proto.h"
#include "gm_proto_impl.h"

/* ---- GEMM reply ---- */

void gm_proto_put_reply_job(uint8_t *p, const gm_reply_job *r)
{
	memset(p, 0, GM_REPLY_JOB_SIZE);
	put_u32(p, r->status);
	p[4] = r->dtype;
	p[5] = r->layout;
	put_u32(p + 8, r->m);
	put_u32(p + 12, r->n);
	put_f64(p + 16, r->t.queue_us);
	put_f64(p + 24, r->t.h2d_us);
	put_f64(p + 32, r->t.kernel_us);
	put_f64(p + 40, r->t.d2h_us);
	put_f64(p + 48, r->t.total_us);
	put_u64(p + 56, r->result_bytes);
	put_u64(p + 64, r->t.start_seq);
	put_text(p + 80, r->message);
}

static void get_reply_job(const uint8_t *p, gm_reply_job *r)
{
	r->status = get_u32(p);
	r->dtype = p[4];
	r->layout = p[5];
	r->m = get_u32(p + 8);
	r->n = get_u32(p + 12);
	r->t.queue_us = get_f64(p + 16);
	r->t.h2d_us = get_f64(p + 24);
	r->t.kernel_us = get_f64(p + 32);
	r->t.d2h_us = get_f64(p + 40);
	r->t.total_us = get_f64(p + 48);
	r->result_bytes = get_u64(p + 56);
	r->t.start_seq = get_u64(p + 64);
	get_text(p + 80, r->message);
}

/* Result bytes a reply job must carry. A failed job carries none and may
 * echo fields that were themselves the reason it failed, so only a
 * successful job's shape is checked. */
static int reply_result_bytes(const gm_reply_job *r, uint64_t *want, char *msg,
			      size_t msglen)
{
	*want = 0;
	if (r->status != GM_OK)
		return GM_OK;
	if (gm_dtype_size(r->dtype) == 0)
		return gm_proto_fail(GM_EDTYPE, msg, msglen, "dtype=%u",
				     r->dtype);
	if (r->layout > GM_COL_MAJOR)
		return gm_proto_fail(GM_EFIELD, msg, msglen, "layout=%u",
				     r->layout);
	if (r->m == 0 || r->m > GM_MAX_DIM || r->n == 0 || r->n > GM_MAX_DIM)
		return gm_proto_fail(GM_EDIM, msg, msglen,
				     "m=%" PRIu32 " n=%" PRIu32
				     ", must be 1..%u",
				     r->m, r->n, GM_MAX_DIM);
	/* Within the ceilings m * n * 8 < 2^43: no overflow. */
	*want = (uint64_t)r->m * r->n * gm_dtype_size(r->dtype);
	return GM_OK;
}

int gm_proto_check_reply_hdr(const gm_hdr *h, uint32_t njobs, char *msg,
			     size_t msglen)
{
	int rv;

	if ((rv = gm_proto_want_type(h, GM_MSG_GEMM_REPLY, msg, msglen)) != 0)
		return rv;
	if (h->count >= njobs)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "count=%" PRIu32 " (job index), request "
				     "had %" PRIu32 " jobs",
				     h->count, njobs);
	if (h->length < GM_REPLY_JOB_SIZE)
		return gm_proto_fail(GM_ETRUNC, msg, msglen,
				     "length=%" PRIu64 ", a reply record needs "
				     "%d",
				     h->length, GM_REPLY_JOB_SIZE);
	return GM_OK;
}

int gm_proto_get_reply_job(const gm_hdr *h, const uint8_t *rec, gm_reply_job *r,
			   char *msg, size_t msglen)
{
	uint64_t want, body;
	int rv;

	get_reply_job(rec, r);
	if (get_u16(rec + 6) != 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "reserved bytes 6..7 must be 0");
	if (get_u64(rec + 72) != 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "reserved bytes 72..79 must be 0");
	if ((rv = reply_result_bytes(r, &want, msg, msglen)) != 0)
		return rv;
	/* 0 on success: the result went to a region (GM_JOB_REGIONS). */
	if (r->result_bytes != want &&
	    !(r->status == GM_OK && r->result_bytes == 0))
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "result_bytes=%" PRIu64
				     ", must be %" PRIu64
				     " for status %" PRIu32,
				     r->result_bytes, want, r->status);
	body = GM_REPLY_JOB_SIZE + r->result_bytes;
	if (h->length != body)
		return gm_proto_fail(
		    h->length < body ? GM_ETRUNC : GM_ETRAILING, msg, msglen,
		    "length=%" PRIu64 ", record and result are %" PRIu64,
		    h->length, body);
	return GM_OK;
}

/* ---- ERROR ---- */

void gm_proto_put_error(uint8_t *p, uint64_t id, uint32_t status,
			const char *message)
{
	gm_proto_put_hdr(p, GM_MSG_ERROR, id, 0, GM_ERROR_SIZE);
	p += GM_HDR_SIZE;
	put_u32(p, status);
	put_u32(p + 4, 0);
	put_text(p + 8, message != NULL ? message : gm_strerror((int)status));
}

int gm_proto_get_error(const gm_hdr *h, const uint8_t *body, uint32_t *status,
		       char message[GM_MSG_TEXT + 1])
{
	*status = GM_OK;
	message[0] = '\0';
	if (h->type != GM_MSG_ERROR)
		return GM_EMSGTYPE;
	/* A status of 0 would read as success for a request refused whole. */
	if (h->count != 0 || h->length != GM_ERROR_SIZE ||
	    get_u32(body) == GM_OK || get_u32(body + 4) != 0)
		return GM_EFIELD;
	*status = get_u32(body);
	get_text(body + 8, message);
	return GM_OK;
}
