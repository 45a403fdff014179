/*
 * gm_request.c - GEMM requests on the loop thread: decode and validate
 * a request, fill and queue its jobs, and build its one reply when the
 * last job is back; refusals and control replies go out from here too.
 * A detached request is handed to gm_dreq.c once checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_daemon_impl.h"
#include "gm_log.h"
#include "gm_slab.h"

void gm_request_reply_error(gm_daemon *d, gm_work *w, uint64_t id, int code,
			    const char *text)
{
	nng_msg *m;

	d->stats.requests_refused++;
	d->stats.errors[code]++;
	if (nng_msg_alloc(&m, GM_HDR_SIZE + GM_ERROR_SIZE) != 0) {
		/* Nothing to say it with; the client's timeout tells. */
		GM_LOG(GM_LOG_ERROR, "request %llu: out of memory for reply",
		       (unsigned long long)id);
		gm_server_drop(w);
		return;
	}
	gm_proto_put_error(nng_msg_body(m), id, (uint32_t)code, text);
	GM_LOG(GM_LOG_DEBUG, "request %llu refused: %s: %s",
	       (unsigned long long)id, gm_errname(code), text);
	d->stats.bytes_out += nng_msg_len(m);
	gm_server_reply(w, m);
}

void gm_request_reply_ctrl(gm_daemon *d, gm_work *w, uint64_t id,
			   const char *json)
{
	size_t n = strlen(json);
	nng_msg *m;

	if (nng_msg_alloc(&m, GM_HDR_SIZE + n) != 0) {
		gm_request_reply_error(d, w, id, GM_ENOMEM,
				       "no memory for the reply");
		return;
	}
	gm_proto_put_hdr(nng_msg_body(m), GM_MSG_CTRL_REPLY, id, (uint32_t)n);
	memcpy((uint8_t *)nng_msg_body(m) + GM_HDR_SIZE, json, n);
	d->stats.bytes_out += nng_msg_len(m);
	gm_server_reply(w, m);
}

/* Reply bytes for a checked request: each job's fixed part + result
 * (none for a result written to a region). */
static uint64_t reply_size(const uint8_t *body, size_t len)
{
	uint64_t size = GM_HDR_SIZE;
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;

	gm_proto_jobs_begin(body, len, &it);
	while (gm_proto_jobs_next_ops(&it, &jd, &ops) == 0) {
		gm_job_sizes_of(&jd, &z);
		size += GM_REPLY_JOB_SIZE +
			(gm_ref_in_region(ops.ref, GM_OPND_OUT) ? 0 : z.out);
	}
	return size;
}

/* The configured kernel, unless it cannot run dtype: the tiled kernel
 * is fp64/fp32 only, so other dtypes fall back to cuBLAS. */
static uint8_t default_kernel(const gm_daemon *d, int dtype)
{
	int k = d->cfg->engine.kernel;

	if (k == GM_KERNEL_TILED && dtype != GM_FP64 && dtype != GM_FP32)
		k = GM_KERNEL_CUBLAS;
	return (uint8_t)k;
}

/* Fills job j described by jd with payload a; its result goes after the
 * reply record at rec, so the engine writes it there directly. Returns
 * the bytes of record and result. */
uint64_t gm_request_fill_job(const gm_daemon *d, gm_job *j,
			     const gm_job_desc *jd, const uint8_t *a,
			     uint8_t *rec)
{
	gm_job_sizes z;

	j->d = *jd;
	if (j->d.kernel == GM_KERNEL_DEFAULT)
		j->d.kernel = default_kernel(d, j->d.dtype);
	gm_job_sizes_of(&j->d, &z);
	j->copy_in = a;
	j->copy_in_bytes = z.a + z.b + z.c;
	j->copy_out = rec + GM_REPLY_JOB_SIZE;
	return GM_REPLY_JOB_SIZE + z.out;
}

/* A job naming regions (checked by gm_regions_check_req): points those
 * operands into them, holding each in h, and stages only the inline
 * ones. Returns the reply bytes the result no longer needs: all of them
 * when it goes to a region. */
static uint64_t place_regions(gm_daemon *d, gm_sjob *j,
			      const gm_job_operands *ops, gm_region_holds *h)
{
	gm_job_sizes z;

	j->placed = gm_regions_bind(d->regions, ops, &j->job, h);
	j->job.copy_in = ops->inline_bytes != 0 ? ops->inline_start : NULL;
	j->job.copy_in_bytes = ops->inline_bytes;
	if (!(j->placed & GM_PLACED(GM_OPND_OUT)))
		return 0;
	j->job.copy_out = NULL;
	gm_job_sizes_of(&j->job.d, &z);
	return z.out;
}

/* Fills r's jobs from the request, each result at its place in the
 * reply or in its region. */
static void fill_jobs(gm_daemon *d, gm_sreq *r, const uint8_t *body, size_t len,
		      uint8_t *rep, gm_region_holds *h)
{
	uint64_t off = GM_HDR_SIZE;
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc jd;

	gm_proto_jobs_begin(body, len, &it);
	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_proto_jobs_next_ops(&it, &jd, &ops);
		off += gm_request_fill_job(d, &r->jobs[i].job, &jd,
					   ops.inline_start, rep + off);
		if (jd.flags & GM_JOB_REGIONS)
			off -= place_regions(d, &r->jobs[i], &ops, h);
	}
}

/* Why the scheduler has no room for njobs more jobs of batch b. */
void gm_request_no_room(const gm_daemon *d, int rv, const gm_batch *b,
			uint32_t njobs, char *text, size_t len)
{
	unsigned lim = d->cfg->queue_depth_prio[b->priority];

	if (rv != GM_EBUSY)
		snprintf(text, len, "gemmd is shutting down");
	else if (lim != 0 &&
		 gm_sched_queued_prio(d->sched, b->priority) + njobs > lim)
		snprintf(text, len,
			 "priority %u queue full (%u jobs): try again later",
			 b->priority, lim);
	else
		snprintf(text, len, "queue full: try again later");
}

static void handle_gemm(gm_daemon *d, gm_work *w, nng_msg *msg)
{
	const uint8_t *body = nng_msg_body(msg);
	size_t len = nng_msg_len(msg);
	char text[GM_MSG_TEXT + 1];
	gm_region_holds *holds = NULL;
	nng_msg *rep = NULL;
	uint32_t nrefs;
	gm_batch b;
	gm_hdr h;
	gm_sreq *r = NULL;
	gm_dreq *dr = NULL;
	int rv;

	if ((rv = gm_proto_check_gemm(body, len, &d->lim, &h, &b, text,
				      sizeof(text))) != 0 ||
	    (rv = gm_regions_check_req(d->regions, msg, &nrefs, text,
				       sizeof(text))) != 0)
		goto refuse;
	if ((b.flags & GM_BATCH_DETACH) && nrefs != 0) {
		rv = GM_EUNSUPPORTED;
		snprintf(text, sizeof(text),
			 "a detached request cannot name regions");
		goto refuse;
	}
	if (b.flags & GM_BATCH_DETACH) {
		gm_dreq_handle(d, w, msg, &h, &b);
		return;
	}
	rv = GM_ENOMEM;
	snprintf(text, sizeof(text), "no memory for the request");
	r = gm_sched_new_req(h.count);
	dr = malloc(sizeof(*dr));
	if (r == NULL || dr == NULL ||
	    (nrefs != 0 && (holds = gm_region_holds_new(nrefs)) == NULL) ||
	    nng_msg_alloc(&rep, (size_t)reply_size(body, len)) != 0)
		goto free;
	r->id = h.id;
	r->batch = b;
	r->conn = nng_pipe_id(nng_msg_get_pipe(msg));
	r->recv_us = gm_now_us();
	r->user = dr;
	*dr = (gm_dreq){.w = w, .req = msg, .rep = rep, .holds = holds};
	fill_jobs(d, r, body, len, nng_msg_body(rep), holds);
	d->stats.requests++;
	if ((rv = gm_sched_submit(d->sched, r)) == 0) {
		gm_daemon_arm_tick(d);
		return;
	}
	gm_request_no_room(d, rv, &b, h.count, text, sizeof(text));
	d->stats.requests--;
free:
	if (rep != NULL)
		nng_msg_free(rep);
	gm_region_holds_drop(d->regions, holds);
	gm_sched_free_req(r);
	free(dr);
refuse:
	d->stats.jobs_rejected += rv == GM_EBUSY ? h.count : 0;
	gm_request_reply_error(d, w, h.id, rv, text);
	nng_msg_free(msg);
}

/* Loop thread: a request arrived on w. */
void gm_request_on(gm_work *w, nng_msg *msg, void *arg)
{
	gm_daemon *d = arg;
	char text[GM_MSG_TEXT + 1];
	gm_hdr h;
	int rv;

	d->stats.bytes_in += nng_msg_len(msg);
	rv = gm_proto_get_hdr(nng_msg_body(msg), nng_msg_len(msg), &h, text,
			      sizeof(text));
	if (rv == 0 && h.type == GM_MSG_CTRL) {
		gm_ctrl_handle(
		    d, w, &h, (const uint8_t *)nng_msg_body(msg) + GM_HDR_SIZE);
		nng_msg_free(msg);
		return;
	}
	if (rv == 0 && h.type != GM_MSG_GEMM) {
		rv = GM_EMSGTYPE;
		snprintf(text, sizeof(text), "message type %u is not a request",
			 h.type);
	}
	if (rv == 0 && d->stopping) {
		rv = gm_engine_faulted(d->eng) ? GM_EGPUFAULT : GM_ESHUTDOWN;
		snprintf(text, sizeof(text), "%s", gm_strerror(rv));
	} else if (rv == 0 && d->draining) {
		rv = GM_EDRAINING;
		snprintf(text, sizeof(text),
			 "gemmd is draining: no new jobs until it resumes");
	}
	if (rv != 0) {
		gm_request_reply_error(d, w, h.id, rv, text);
		nng_msg_free(msg);
		return;
	}
	handle_gemm(d, w, msg);
}

/* Writes each job's reply record; a failed job carries no result, so
 * later results move down over the room it left. */
static size_t build_reply(gm_sreq *r, uint8_t *rep)
{
	size_t off = GM_HDR_SIZE;

	gm_proto_put_hdr(rep, GM_MSG_GEMM_REPLY, r->id, r->njobs);
	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_sjob *j = &r->jobs[i];
		gm_reply_job rj = {.status = (uint32_t)j->job.status,
				   .dtype = j->job.d.dtype,
				   .layout = j->job.d.layout,
				   .m = j->job.d.m,
				   .n = j->job.d.n,
				   .t = j->t};
		gm_job_sizes z;

		gm_job_sizes_of(&j->job.d, &z);
		if (j->job.status != 0)
			GM_LOGJ(GM_LOG_DEBUG, r->id, i, "failed: %s: %s",
				gm_errname(j->job.status), j->job.msg);
		if (j->job.status == 0 && j->job.copy_out != NULL) {
			rj.result_bytes = z.out;
			/* Usually already in place: then no pass over it. */
			if (rep + off + GM_REPLY_JOB_SIZE != j->job.copy_out)
				memmove(rep + off + GM_REPLY_JOB_SIZE,
					j->job.copy_out, z.out);
		} else if (j->job.status != 0) { /* 0: in its region */
			snprintf(rj.message, sizeof(rj.message), "%s",
				 j->job.msg[0] ? j->job.msg
					       : gm_strerror(j->job.status));
		}
		gm_proto_put_reply_job(rep + off, &rj);
		off += GM_REPLY_JOB_SIZE + rj.result_bytes;
	}
	return off;
}

/* Scheduler: every job of r is back. */
void gm_request_done(gm_sreq *r, void *arg)
{
	gm_daemon *d = arg;
	gm_dreq *dr = r->user;
	size_t len = nng_msg_len(dr->rep);
	size_t used = build_reply(r, nng_msg_body(dr->rep));

	nng_msg_chop(dr->rep, len - used);
	gm_region_holds_drop(d->regions, dr->holds);
	if (dr->batch != NULL) {
		/* Detached: the table keeps the reply for a wait. */
		gm_detach_done(d->detach, dr->detach_id, dr->rep);
		gm_sched_free_req(r);
		gm_dreq_release(dr->batch);
		return;
	}
	d->stats.bytes_out += used;
	gm_server_reply(dr->w, dr->rep);
	nng_msg_free(dr->req);
	free(dr);
	gm_sched_free_req(r);
}
