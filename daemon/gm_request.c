/*
 * gm_request.c - a GEMM request's record on the loop thread: its jobs
 * described and bound to their regions when it is accepted, placed in
 * its slab when the slab is granted, queued when the payload is in, and
 * each answered in place in the slab as it finishes; and the state
 * machine that takes it there, every transition in gm_request_advance
 * or a helper it calls; see gm_request.h for the diagram.
 */
#include "gm_request.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_clock.h"
#include "gm_log.h"
#include "gm_reply.h"
#include "gm_slab.h"
#include "gm_stats.h"

static bool detached(const gm_request *rq)
{
	return (rq->b.flags & GM_BATCH_DETACH) != 0;
}

/* Job i of the request. */
static gm_sched_job *job_at(const gm_request *rq, uint32_t i)
{
	return detached(rq) ? &rq->sr[i].jobs[0] : &rq->sr->jobs[i];
}

/* Bytes of a job's result that come back in its reply: none when the
 * result goes to a region. */
static uint64_t reply_result(const gm_job_desc *d, const gm_job_operands *ops)
{
	gm_job_sizes z;

	if (gm_ref_in_region(ops->ref, GM_OPND_OUT))
		return 0;
	gm_job_sizes_of(d, &z);
	return z.out;
}

uint64_t gm_request_slab_bytes(const gm_hdr *h, const uint8_t *head,
			       const uint8_t *desc, uint64_t payload)
{
	gm_job_operands ops;
	gm_slab_cursor cur;
	gm_job_iter it;
	gm_job_desc d;

	gm_slab_begin(&cur, payload);
	gm_proto_jobs_begin(&it, h, head, desc, NULL);
	while (gm_proto_jobs_next(&it, &d, &ops) == GM_OK)
		gm_slab_next(&cur, reply_result(&d, &ops));
	return gm_slab_size(&cur);
}

/* The scheduler's records: one request, or one per job when detached,
 * in one allocation. */
static gm_sched_request *alloc_sched(const gm_request *rq, uint32_t n)
{
	gm_sched_request *r;
	gm_sched_job *j;

	if (!detached(rq))
		return gm_sched_alloc_request(n);
	r = calloc(n, sizeof(*r) + sizeof(*j));
	if (r == NULL)
		return NULL;
	j = (gm_sched_job *)(r + n);
	for (uint32_t i = 0; i < n; i++) {
		r[i].njobs = 1;
		r[i].jobs = &j[i];
	}
	return r;
}

static void free_sched(gm_request *rq)
{
	if (detached(rq))
		free(rq->sr);
	else
		gm_sched_free_request(rq->sr);
}

uint8_t gm_request_default_kernel(const gm_loop *l, int dtype)
{
	int k = l->cfg->engine.kernel;

	if (k == GM_KERNEL_TILED && dtype != GM_FP64 && dtype != GM_FP32)
		k = GM_KERNEL_CUBLAS;
	return (uint8_t)k;
}

gm_request *gm_request_new(gm_loop *l, gm_conn *c, const gm_hdr *h,
			   const gm_batch *b, const uint8_t *head,
			   const uint8_t *desc, uint32_t nrefs,
			   uint64_t payload)
{
	gm_request *rq = calloc(1, sizeof(*rq));
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc d;

	if (rq == NULL)
		return NULL;
	*rq = (gm_request){
	    .l = l, .conn = c, .h = *h, .b = *b, .payload = payload};
	if ((rq->sr = alloc_sched(rq, h->count)) == NULL ||
	    (nrefs != 0 && (rq->holds = gm_regions_holds_new(nrefs)) == NULL) ||
	    (detached(rq) &&
	     (rq->detach_ids = calloc(h->count, sizeof(uint64_t))) == NULL)) {
		if (rq->sr != NULL)
			free_sched(rq);
		free(rq->holds);
		free(rq);
		return NULL;
	}
	rq->wait.bytes = gm_request_slab_bytes(h, head, desc, payload);
	gm_proto_jobs_begin(&it, h, head, desc, NULL);
	for (uint32_t i = 0; gm_proto_jobs_next(&it, &d, &ops) == GM_OK; i++) {
		gm_sched_job *j = job_at(rq, i);

		j->job.d = d;
		if (d.kernel == GM_KERNEL_DEFAULT)
			j->job.d.kernel = gm_request_default_kernel(l, d.dtype);
		if (d.flags & GM_JOB_REGIONS)
			gm_regions_bind(l->regions, &ops, &j->job, rq->holds);
	}
	for (uint32_t i = 0; i < (detached(rq) ? h->count : 1); i++) {
		gm_sched_request *r = &rq->sr[i];

		r->id = h->id;
		r->batch = *b;
		r->conn = gm_conn_id(c);
		/* The record holds the share (wait.who) past its jobs. */
		r->principal = gm_conn_share(c);
		r->reserved = 1;
		r->user = rq;
	}
	rq->seq = l->next_seq++;
	rq->state = GM_REQUEST_HEAD;
	rq->counted = true;
	gm_conn_begin(c);
	l->requests++;
	rq->live_next = l->live;
	if (l->live != NULL)
		l->live->live_prev = rq;
	l->live = rq;
	gm_conn_hold(c);
	return rq;
}

void gm_request_place(gm_request *rq, const uint8_t *head, const uint8_t *desc)
{
	uint8_t *slab = rq->wait.slab;
	gm_job_operands ops;
	gm_slab_cursor cur;
	gm_job_iter it;
	gm_job_desc d;

	gm_slab_begin(&cur, rq->payload);
	gm_proto_jobs_begin(&it, &rq->h, head, desc, slab);
	for (uint32_t i = 0; gm_proto_jobs_next(&it, &d, &ops) == GM_OK; i++) {
		gm_sched_job *j = job_at(rq, i);
		uint64_t out = reply_result(&d, &ops);

		uint8_t inline_ops = 0;

		/* Inline operands are where the payload put them. */
		if (!gm_ref_in_region(ops.ref, GM_OPND_A)) {
			j->job.a = (void *)ops.data[GM_OPND_A];
			inline_ops |= GM_PAGEABLE_A;
		}
		if (!gm_ref_in_region(ops.ref, GM_OPND_B)) {
			j->job.b = (void *)ops.data[GM_OPND_B];
			inline_ops |= GM_PAGEABLE_B;
		}
		if ((d.flags & GM_JOB_HAS_C) &&
		    !gm_ref_in_region(ops.ref, GM_OPND_C)) {
			j->job.c = (void *)ops.data[GM_OPND_C];
			inline_ops |= GM_PAGEABLE_C;
		}
		j->reply = slab + gm_slab_next(&cur, out);
		if (out != 0) {
			j->job.out = j->reply + GM_SLAB_REPLY_HEAD;
			inline_ops |= GM_PAGEABLE_OUT;
		}
		if (rq->pageable)
			j->job.host_pageable = inline_ops;
	}
}

/* Frees the record, its slab last: giving a pool slab back may let a
 * waiting request in at once. */
static void free_request(gm_request *rq)
{
	gm_loop *l = rq->l;
	gm_conn *c = rq->conn;
	/* A copy: the record goes first. */
	gm_poolq_wait w = rq->wait;
	void *slab = w.slab;
	uint64_t bytes = w.bytes;
	bool pageable = rq->pageable;

	gm_regions_holds_drop(l->regions, rq->holds);
	free_sched(rq);
	free(rq->detach_ids);
	if (rq->live_prev != NULL)
		rq->live_prev->live_next = rq->live_next;
	else
		l->live = rq->live_next;
	if (rq->live_next != NULL)
		rq->live_next->live_prev = rq->live_prev;
	free(rq);
	l->requests--;
	gm_conn_release(c);
	if (slab != NULL && pageable)
		gm_pageable_give(&l->stats.pageable, w.who, slab, bytes);
	else if (slab != NULL)
		gm_poolq_put(l->poolq, &w);
	gm_shares_release(l->shares, w.who);
}

/* Counts a finished job of rq under its owner's uid when it came over
 * ipc://. */
static void count_owner(const gm_request *rq, int status)
{
	const gm_peer *p = gm_conn_peer(rq->conn);

	if (p->kind == GM_URL_IPC && p->has_cred)
		gm_stats_uid_job(&rq->l->stats, p->uid, status);
}

/* What a detached request's jobs take in the table: their frames. */
static uint64_t detached_cost(const gm_request *rq)
{
	uint64_t cost = 0;
	gm_job_sizes z;

	for (uint32_t i = 0; i < rq->h.count; i++) {
		gm_job_sizes_of(&job_at(rq, i)->job.d, &z);
		cost += gm_detach_cost(GM_SLAB_REPLY_HEAD + z.out);
	}
	return cost;
}

/* Job j's reply frame, in place in the slab; returns its length. */
static uint64_t write_reply(const gm_request *rq, gm_sched_job *j, uint32_t idx)
{
	gm_reply_job rj = {.status = (uint32_t)j->job.status,
			   .dtype = j->job.d.dtype,
			   .layout = j->job.d.layout,
			   .m = j->job.d.m,
			   .n = j->job.d.n,
			   .t = j->t};
	gm_job_sizes z;

	gm_job_sizes_of(&j->job.d, &z);
	if (j->job.status == GM_OK &&
	    (uint8_t *)j->job.out == j->reply + GM_SLAB_REPLY_HEAD)
		rj.result_bytes = z.out;
	if (j->job.status != GM_OK) {
		GM_LOGJ(GM_LOG_INFO, rq->h.id, idx, "failed: %s: %s",
			gm_errname(j->job.status),
			j->job.msg[0] ? j->job.msg
				      : gm_strerror(j->job.status));
		snprintf(rj.message, sizeof(rj.message), "%s",
			 j->job.msg[0] ? j->job.msg
				       : gm_strerror(j->job.status));
	}
	if (j->t.start_seq != 0) /* it ran: its place among the jobs handed */
		GM_LOGJ(GM_LOG_DEBUG, rq->h.id, idx,
			"ran: %" PRIu32 "x%" PRIu32 "x%" PRIu32
			" %s, priority %u, start %" PRIu64
			", queued %.0f us, %.0f us in all",
			j->job.d.m, j->job.d.n, j->job.d.k,
			gm_dtype_name(j->job.d.dtype), rq->b.priority,
			(uint64_t)j->t.start_seq, j->t.queue_us, j->t.total_us);
	gm_proto_put_hdr(j->reply, GM_MSG_GEMM_REPLY, rq->h.id, idx,
			 GM_REPLY_JOB_SIZE + rj.result_bytes);
	gm_proto_put_reply_job(j->reply + GM_HDR_SIZE, &rj);
	return GM_SLAB_REPLY_HEAD + rj.result_bytes;
}

/* The ids of a detached request's jobs, as its CTRL_REPLY says them. */
static void answer_ids(gm_request *rq)
{
	char *ans = malloc(32 + 21 * (size_t)rq->h.count);
	size_t off;

	if (ans == NULL) {
		gm_conn_error(rq->conn, rq->h.id, GM_ENOMEM,
			      "no memory for the reply: the jobs run, ids "
			      "lost");
		return;
	}
	off = (size_t)sprintf(ans, "{\"ok\":true,\"jobs\":[");
	for (uint32_t i = 0; i < rq->h.count; i++)
		off += (size_t)sprintf(ans + off, "%s%" PRIu64, i ? "," : "",
				       rq->detach_ids[i]);
	strcpy(ans + off, "]}");
	gm_reply_json(rq->conn, rq->h.id, ans);
	free(ans);
}

void gm_request_no_detach_room(const gm_loop *l, int rv, char *text, size_t len)
{
	char held[GM_SIZE_TEXT], limit[GM_SIZE_TEXT];
	gm_stats_detach n;

	if (rv == GM_EIO) {
		snprintf(text, len, "no random job id could be drawn");
		return;
	}
	if (rv != GM_EBUSY) {
		snprintf(text, len, "no memory for the request");
		return;
	}
	gm_detach_counts(l->detach, &n);
	snprintf(text, len,
		 "no room for detached results: %s kept, "
		 "detach_max_bytes=%s; wait for or cancel some",
		 gm_size_text(n.bytes, held), gm_size_text(n.limit, limit));
}

/* ---- the state machine ---- */

/* Leaves the states in which rq counts against its connection's
 * conn_max_inflight: every reply queued, or answered with ids. */
static void leave_inflight(gm_request *rq)
{
	if (!rq->counted)
		return;
	rq->counted = false;
	gm_conn_end(rq->conn);
}

/* DONE from HEAD, WAIT_POOL or PAYLOAD: its jobs never reached the
 * scheduler, whose room and the connection's go back. */
static void done_unqueued(gm_request *rq)
{
	gm_sched_unreserve(rq->l->sched, rq->b.priority, rq->h.count);
	if (!detached(rq))
		gm_conn_unreserve(rq->conn, rq->h.count);
	leave_inflight(rq);
	rq->state = GM_REQUEST_DONE;
	free_request(rq);
}

/* PAYLOAD -> QUEUED, or DONE when a detached request's results no
 * longer fit: room for them was there when it was accepted; its payload
 * came since, and others may have taken it. */
static void queue_jobs(gm_request *rq)
{
	gm_loop *l = rq->l;
	double now = gm_clock_now_us();
	uint32_t n = detached(rq) ? rq->h.count : 1;
	char text[GM_MSG_TEXT + 1];
	gm_job_sizes z;
	int rv;

	if (detached(rq) && (rv = gm_detach_room(l->detach, rq->h.count,
						 detached_cost(rq))) != GM_OK) {
		gm_request_no_detach_room(l, rv, text, sizeof(text));
		gm_conn_error(rq->conn, rq->h.id, rv, text);
		l->stats.jobs_rejected += rq->h.count;
		done_unqueued(rq);
		return;
	}
	rq->state = GM_REQUEST_QUEUED;
	/* Each job until it is answered, and a hold of our own: jobs can
	 * all come back before gm_sched_submit returns. */
	rq->pending = rq->h.count + 1;
	for (uint32_t i = 0; i < n; i++) {
		rq->sr[i].recv_us = now;
		if (detached(rq)) {
			gm_job_sizes_of(&rq->sr[i].jobs[0].job.d, &z);
			rq->detach_ids[i] = gm_detach_add(
			    l->detach, &rq->sr[i], GM_SLAB_REPLY_HEAD + z.out,
			    gm_conn_principal(rq->conn));
		}
		/* Cannot fail: its room was reserved. */
		(void)gm_sched_submit(l->sched, &rq->sr[i]);
	}
	gm_loop_arm_tick(l);
	if (detached(rq)) {
		answer_ids(rq);
		leave_inflight(rq);
	}
	gm_request_advance(rq, GM_REQUEST_GONE, 1);
}

/* HEAD, WAIT_POOL or PAYLOAD -> DONE: the client closed its connection
 * before the payload was in. Its jobs never run, and count as failed,
 * ECANCELED, as the scheduler counts a job failed before it started, so
 * that by dtype, by status and by uid agree with the totals. */
static void abandon(gm_request *rq)
{
	const gm_timings none = {0};

	if (rq->state == GM_REQUEST_WAIT_POOL)
		gm_poolq_cancel(rq->l->poolq, &rq->wait);
	for (uint32_t i = 0; i < rq->h.count; i++) {
		gm_stats_job(&rq->l->stats, &job_at(rq, i)->job.d,
			     rq->b.priority, GM_ECANCELED, &none);
		count_owner(rq, GM_ECANCELED);
	}
	done_unqueued(rq);
}

/* QUEUED: job j is answered; the last one's answer takes rq to
 * REPLYING. A reply frame goes to the connection, holding rq until it
 * is gone; a detached job's result goes to the table, which keeps its
 * own copy, the slab going with the request. */
static void job_back(gm_request *rq, gm_sched_job *j)
{
	uint32_t idx = detached(rq) ? (uint32_t)(j->req - rq->sr) : j->idx;
	uint64_t len = write_reply(rq, j, idx);
	uint8_t *copy;

	count_owner(rq, j->job.status);
	if (++rq->answered == rq->h.count && !detached(rq)) {
		rq->state = GM_REQUEST_REPLYING;
		leave_inflight(rq);
	}
	if (detached(rq)) {
		if ((copy = malloc(len)) != NULL)
			memcpy(copy, j->reply, len);
		gm_detach_done(rq->l->detach, rq->detach_ids[idx], copy, len);
		gm_request_advance(rq, GM_REQUEST_GONE, 1);
		return;
	}
	/* Last: on a closing connection the frame is gone at once. */
	gm_conn_push_frame(rq->conn, j->reply, len, rq, rq->seq);
}

void gm_request_advance(gm_request *rq, int event, uint32_t n)
{
	switch (event) {
	case GM_REQUEST_SLAB: /* HEAD, WAIT_POOL -> PAYLOAD */
		rq->state = GM_REQUEST_PAYLOAD;
		break;
	case GM_REQUEST_NO_ROOM: /* HEAD -> WAIT_POOL */
		rq->state = GM_REQUEST_WAIT_POOL;
		break;
	case GM_REQUEST_PAYLOAD_IN: /* PAYLOAD -> QUEUED, or DONE */
		queue_jobs(rq);
		break;
	case GM_REQUEST_CLOSED: /* HEAD, WAIT_POOL, PAYLOAD -> DONE */
		abandon(rq);
		break;
	default: /* GM_REQUEST_GONE: QUEUED, REPLYING -> DONE */
		if ((rq->pending -= n) != 0)
			break;
		rq->state = GM_REQUEST_DONE;
		free_request(rq);
	}
}

void gm_request_granted(gm_poolq_wait *w, void *arg)
{
	gm_request *rq =
	    (gm_request *)(void *)((char *)w - offsetof(gm_request, wait));

	(void)arg;
	gm_request_advance(rq, GM_REQUEST_SLAB, 0);
	/* Its connection's reader places it and reads its payload. */
	gm_conn_wake(rq->conn);
}

void gm_request_job_done(gm_sched_job *j, void *arg)
{
	(void)arg;
	job_back(j->req->user, j);
}

void gm_request_frames_done(void *owner, uint32_t n, void *arg)
{
	(void)arg;
	gm_request_advance(owner, GM_REQUEST_GONE, n);
}
