/*
 * gm_admit.c - admitting requests on the loop thread; see gm_admit.h. A
 * GEMM request is refused whole or queued whole: everything it needs is
 * allocated before any of its jobs is queued. Each job of a detached
 * request is queued as a one-job request of its own and recorded in
 * gm_detach, which keeps its reply for a wait.
 */
#include "gm_admit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_clock.h"
#include "gm_ctrl.h"
#include "gm_loop.h"
#include "gm_reply.h"
#include "gm_request.h"

/* ---- detached requests ---- */

static void free_group(gm_request_group *g, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (g->jobs[i].rep != NULL)
			nng_msg_free(g->jobs[i].rep);
		gm_sched_free_request(g->jobs[i].sr);
	}
	free(g);
}

/* What a detached request's jobs count against detach_max_bytes. */
static uint64_t detached_cost(nng_msg *msg)
{
	uint64_t cost = 0;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;
	const uint8_t *a, *b, *c;

	gm_proto_jobs_begin(nng_msg_body(msg), nng_msg_len(msg), &it);
	while (gm_proto_jobs_next(&it, &jd, &a, &b, &c) == 0) {
		gm_job_sizes_of(&jd, &z);
		cost += gm_detach_cost(GM_HDR_SIZE + GM_REPLY_JOB_SIZE + z.out);
	}
	return cost;
}

/*
 * Allocates everything a detached request needs before any of it is
 * queued, so that it is refused whole or not at all: the group, and per
 * job a one-job scheduler request and a one-job reply message of its
 * own, which the result lands in and the table keeps; and *ans, room
 * for the reply listing the ids.
 */
static int make_group(gm_loop *l, nng_msg *msg, const gm_hdr *h,
		      const gm_batch *b, gm_request_group **out, char **ans)
{
	uint32_t conn = nng_pipe_id(nng_msg_get_pipe(msg));
	gm_request_group *g =
	    calloc(1, sizeof(*g) + h->count * sizeof(gm_request));
	double now = gm_clock_now_us();
	const uint8_t *a, *bb, *c;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;

	if (g == NULL || (*ans = malloc(32 + 21 * (size_t)h->count)) == NULL) {
		free(g);
		return GM_ENOMEM;
	}
	g->req = msg;
	gm_proto_jobs_begin(nng_msg_body(msg), nng_msg_len(msg), &it);
	for (uint32_t i = 0; i < h->count; i++) {
		gm_request *rq = &g->jobs[i];
		gm_sched_request *sr = rq->sr = gm_sched_alloc_request(1);

		gm_proto_jobs_next(&it, &jd, &a, &bb, &c);
		gm_job_sizes_of(&jd, &z);
		if (sr == NULL ||
		    nng_msg_alloc(&rq->rep, GM_HDR_SIZE + GM_REPLY_JOB_SIZE +
						z.out) != 0) {
			free_group(g, i + 1);
			free(*ans);
			return GM_ENOMEM;
		}
		sr->id = h->id;
		sr->batch = *b;
		sr->conn = conn;
		sr->recv_us = now;
		sr->user = rq;
		rq->group = g;
		gm_request_fill_job(l, &sr->jobs[0].job, &jd, a,
				    (uint8_t *)nng_msg_body(rq->rep) +
					GM_HDR_SIZE);
	}
	*out = g;
	return GM_OK;
}

/* Records and queues each job of g; writes the ids reply into ans. */
static void start_group(gm_loop *l, gm_request_group *g, uint32_t n, char *ans)
{
	size_t off = (size_t)sprintf(ans, "{\"ok\":true,\"jobs\":[");

	/* A hold of its own while queueing: a job failing at once must
	 * not free the group under this loop. */
	g->left = n + 1;
	for (uint32_t i = 0; i < n; i++) {
		gm_request *rq = &g->jobs[i];

		rq->detach_id =
		    gm_detach_add(l->detach, rq->sr, nng_msg_len(rq->rep));
		off += (size_t)sprintf(ans + off, "%s%" PRIu64, i ? "," : "",
				       rq->detach_id);
		/* Cannot fail: there was room for all, on this thread. */
		(void)gm_sched_submit(l->sched, rq->sr);
	}
	strcpy(ans + off, "]}");
	gm_request_group_release(g);
}

/* A request with GM_BATCH_DETACH: answered at once with its job ids. */
static void admit_detached(gm_loop *l, gm_work *w, nng_msg *msg,
			   const gm_hdr *h, const gm_batch *b)
{
	char text[GM_MSG_TEXT + 1], *ans = NULL;
	gm_request_group *g = NULL;
	int rv;

	if ((rv = gm_sched_room(l->sched, b->priority, h->count)) != 0)
		gm_request_no_room(l, rv, b, h->count, text, sizeof(text));
	else if ((rv = gm_detach_room(l->detach, h->count,
				      detached_cost(msg))) != 0)
		snprintf(text, sizeof(text), "%s",
			 rv == GM_EBUSY ? "no room for more detached results "
					  "(detach_max_bytes): wait for or "
					  "cancel some"
					: "no memory for the request");
	else if ((rv = make_group(l, msg, h, b, &g, &ans)) != 0)
		snprintf(text, sizeof(text), "no memory for the request");
	if (rv != 0) {
		l->stats.jobs_rejected += rv == GM_EBUSY ? h->count : 0;
		gm_reply_error(l, w, h->id, rv, text);
		nng_msg_free(msg);
		return;
	}
	l->stats.requests++;
	start_group(l, g, h->count, ans);
	gm_reply_json(l, w, h->id, ans);
	free(ans);
	gm_loop_arm_tick(l);
}

/* ---- GEMM requests ---- */

static void admit_gemm(gm_loop *l, gm_work *w, nng_msg *msg)
{
	const uint8_t *body = nng_msg_body(msg);
	size_t len = nng_msg_len(msg);
	char text[GM_MSG_TEXT + 1];
	gm_region_holds *holds = NULL;
	nng_msg *rep = NULL;
	uint32_t nrefs;
	gm_batch b;
	gm_hdr h;
	gm_sched_request *sr = NULL;
	gm_request *rq = NULL;
	int rv;

	if ((rv = gm_proto_check_gemm(body, len, &l->lim, &h, &b, text,
				      sizeof(text))) != 0 ||
	    (rv = gm_regions_check_req(l->regions, msg, &nrefs, text,
				       sizeof(text))) != 0)
		goto refuse;
	if ((b.flags & GM_BATCH_DETACH) && nrefs != 0) {
		rv = GM_EUNSUPPORTED;
		snprintf(text, sizeof(text),
			 "a detached request cannot name regions");
		goto refuse;
	}
	if (b.flags & GM_BATCH_DETACH) {
		admit_detached(l, w, msg, &h, &b);
		return;
	}
	rv = GM_ENOMEM;
	snprintf(text, sizeof(text), "no memory for the request");
	sr = gm_sched_alloc_request(h.count);
	rq = malloc(sizeof(*rq));
	if (sr == NULL || rq == NULL ||
	    (nrefs != 0 && (holds = gm_regions_holds_new(nrefs)) == NULL) ||
	    nng_msg_alloc(&rep, (size_t)gm_request_reply_size(body, len)) != 0)
		goto free;
	sr->id = h.id;
	sr->batch = b;
	sr->conn = nng_pipe_id(nng_msg_get_pipe(msg));
	sr->recv_us = gm_clock_now_us();
	sr->user = rq;
	*rq = (gm_request){
	    .sr = sr, .w = w, .req = msg, .rep = rep, .holds = holds};
	gm_request_fill_jobs(l, sr, body, len, nng_msg_body(rep), holds);
	l->stats.requests++;
	if ((rv = gm_sched_submit(l->sched, sr)) == 0) {
		gm_loop_arm_tick(l);
		return;
	}
	gm_request_no_room(l, rv, &b, h.count, text, sizeof(text));
	l->stats.requests--;
free:
	if (rep != NULL)
		nng_msg_free(rep);
	gm_regions_holds_drop(l->regions, holds);
	gm_sched_free_request(sr);
	free(rq);
refuse:
	l->stats.jobs_rejected += rv == GM_EBUSY ? h.count : 0;
	gm_reply_error(l, w, h.id, rv, text);
	nng_msg_free(msg);
}

void gm_admit_on(gm_work *w, nng_msg *msg, void *arg)
{
	gm_loop *l = arg;
	char text[GM_MSG_TEXT + 1];
	gm_hdr h;
	int rv;

	l->stats.bytes_in += nng_msg_len(msg);
	rv = gm_proto_get_hdr(nng_msg_body(msg), nng_msg_len(msg), &h, text,
			      sizeof(text));
	if (rv == 0 && h.type == GM_MSG_CTRL) {
		gm_ctrl_handle(
		    l, w, &h, (const uint8_t *)nng_msg_body(msg) + GM_HDR_SIZE);
		nng_msg_free(msg);
		return;
	}
	if (rv == 0 && h.type != GM_MSG_GEMM) {
		rv = GM_EMSGTYPE;
		snprintf(text, sizeof(text), "message type %u is not a request",
			 h.type);
	}
	if (rv == 0 && l->stopping) {
		rv = gm_engine_faulted(l->eng) ? GM_EGPUFAULT : GM_ESHUTDOWN;
		snprintf(text, sizeof(text), "%s", gm_strerror(rv));
	} else if (rv == 0 && l->draining) {
		rv = GM_EDRAINING;
		snprintf(text, sizeof(text),
			 "gemmd is draining: no new jobs until it resumes");
	}
	if (rv != 0) {
		gm_reply_error(l, w, h.id, rv, text);
		nng_msg_free(msg);
		return;
	}
	admit_gemm(l, w, msg);
}
