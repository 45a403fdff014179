/*
 * gm_admit.c - admitting requests on the loop thread; see gm_admit.h. A
 * GEMM request is refused whole or accepted whole: its queue room, its
 * room on the connection's queue and, once granted, its slab are
 * reserved before any of its payload is read, so that nothing it needs
 * later can fail.
 */
#include "gm_admit.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_reply.h"
#include "gm_request.h"

/* Writes into text why the scheduler has no room (rv from gm_sched) for
 * njobs more jobs of batch b, naming the limit and its key. */
static void no_room(const gm_loop *l, int rv, const gm_batch *b, uint32_t njobs,
		    char *text, size_t len)
{
	uint64_t held, limit;

	if (rv != GM_EBUSY)
		snprintf(text, len, "gemmd is shutting down");
	else if (gm_sched_full(l->sched, b->priority, njobs, &held, &limit))
		snprintf(text, len,
			 "priority %u queue full: %" PRIu64 " jobs + %" PRIu32
			 " over queue_depth_per_priority[%u]=%" PRIu64,
			 b->priority, held, njobs, b->priority, limit);
	else
		snprintf(text, len,
			 "queue full: %" PRIu64 " jobs + %" PRIu32
			 " over queue_depth=%" PRIu64 ", try again later",
			 held, njobs, limit);
}

/* Writes into text why gm_detach_room (rv) has no room for a detached
 * request; a full table names the limit and its key. */
static void no_detach_room(const gm_loop *l, int rv, char *text, size_t len)
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

/* What the detached jobs of a request would keep: their reply frames. */
static uint64_t detached_cost(const gm_hdr *h, const uint8_t *head,
			      const uint8_t *desc)
{
	gm_job_operands ops;
	uint64_t cost = 0;
	gm_job_iter it;
	gm_job_desc d;
	gm_job_sizes z;

	gm_proto_jobs_begin(&it, h, head, desc, NULL);
	while (gm_proto_jobs_next(&it, &d, &ops) == GM_OK) {
		gm_job_sizes_of(&d, &z);
		cost += gm_detach_cost(GM_HDR_SIZE + GM_REPLY_JOB_SIZE + z.out);
	}
	return cost;
}

/* Step 19: a detached request names no region. Checked before the
 * regions are looked up, so that it is refused alike whether they exist
 * or not. */
static int check_detach(const gm_hdr *h, const gm_batch *b, const uint8_t *head,
			const uint8_t *desc, char *text, size_t len)
{
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc d;

	if (!(b->flags & GM_BATCH_DETACH))
		return GM_OK;
	gm_proto_jobs_begin(&it, h, head, desc, NULL);
	while (gm_proto_jobs_next(&it, &d, &ops) == GM_OK)
		for (int o = 0; o < GM_OPND_COUNT; o++)
			if (gm_ref_in_region(ops.ref, o)) {
				snprintf(text, len,
					 "a detached request "
					 "cannot name regions");
				return GM_EUNSUPPORTED;
			}
	return GM_OK;
}

/* Steps 21-24 (19 and 20, the regions, came first), for a request of
 * principal who: GM_OK with the queue room reserved and *pageable saying
 * where the slab comes from, or the refusal and text. */
static int check_state(gm_loop *l, const gm_hdr *h, const gm_batch *b,
		       const uint8_t *head, const uint8_t *desc, uint64_t slab,
		       const gm_share *who, bool *pageable, char *text,
		       size_t len)
{
	int detach = (b->flags & GM_BATCH_DETACH) != 0, rv;

	if (l->stopping) {
		rv = gm_engine_faulted(l->eng) ? GM_EGPUFAULT : GM_ESHUTDOWN;
		snprintf(text, len, "%s", gm_strerror(rv));
		return rv;
	}
	if (l->draining) {
		snprintf(text, len,
			 "gemmd is draining: no new jobs until it resumes");
		return GM_EDRAINING;
	}
	if ((rv = gm_sched_room(l->sched, b->priority, h->count)) != GM_OK) {
		no_room(l, rv, b, h->count, text, len);
		return rv;
	}
	if (detach &&
	    (rv = gm_detach_room(l->detach, h->count,
				 detached_cost(h, head, desc))) != GM_OK) {
		no_detach_room(l, rv, text, len);
		return rv;
	}
	if ((rv = gm_pageable_admit(&l->stats.pageable, gm_pool_size(l->pool),
				    slab, who, pageable, text, len)) != GM_OK)
		return rv;
	return gm_sched_reserve(l->sched, b->priority, h->count);
}

void gm_admit_granted(gm_poolq_wait *w, void *arg)
{
	gm_request *rq =
	    (gm_request *)(void *)((char *)w - offsetof(gm_request, wait));

	(void)arg;
	rq->waiting = false;
	/* Its connection's reader places it and reads its payload. */
	gm_conn_wake(rq->conn);
}

gm_request *gm_admit_gemm(gm_loop *l, gm_conn *c, const gm_hdr *h,
			  const gm_batch *b, const uint8_t *head,
			  const uint8_t *desc, uint64_t payload)
{
	char text[GM_MSG_TEXT + 1];
	int detach = (b->flags & GM_BATCH_DETACH) != 0;
	uint64_t slab = gm_request_slab_bytes(h, head, desc, payload);
	gm_share *who = gm_conn_share(c);
	gm_request *rq = NULL;
	bool pageable;
	uint32_t nrefs;
	void *mem = NULL;
	int rv;

	if ((rv = check_detach(h, b, head, desc, text, sizeof(text))) !=
		GM_OK ||
	    (rv = gm_regions_check_req(l->regions, gm_conn_peer(c), h, head,
				       desc, &nrefs, text, sizeof(text))) !=
		GM_OK ||
	    (rv = check_state(l, h, b, head, desc, slab, who, &pageable, text,
			      sizeof(text))) != GM_OK) {
		l->stats.jobs_rejected += h->count;
		gm_conn_error(c, h->id, rv, text);
		return NULL;
	}
	if ((!detach && gm_conn_reserve(c, h->count) != GM_OK) ||
	    (pageable &&
	     gm_pageable_take(&l->stats.pageable, who, slab, &mem) != GM_OK) ||
	    (rq = gm_request_new(l, c, h, b, head, desc, nrefs, payload)) ==
		NULL) {
		if (mem != NULL)
			gm_pageable_give(&l->stats.pageable, who, mem, slab);
		if (!detach)
			gm_conn_unreserve(c, h->count);
		gm_sched_unreserve(l->sched, b->priority, h->count);
		l->stats.jobs_rejected += h->count;
		gm_conn_error(c, h->id, GM_ENOMEM, "no memory for the request");
		return NULL;
	}
	l->stats.requests++;
	gm_conn_begin(c);
	/* Its own holder: the record may outlive its connection. */
	rq->wait.who = gm_share_hold(who);
	if (pageable) {
		/* Its own memory, never waited for. */
		rq->pageable = true;
		rq->wait.slab = mem;
	} else if (gm_poolq_get(l->poolq, &rq->wait) != GM_OK) {
		rq->waiting = true; /* never GM_ETOOBIG: step 24 */
	}
	return rq;
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

void gm_admit_payload(gm_request *rq)
{
	gm_loop *l = rq->l;
	gm_conn *c = rq->conn;
	int detach = (rq->b.flags & GM_BATCH_DETACH) != 0;
	int rv = gm_request_submit(rq);

	if (rv != GM_OK) {
		char text[GM_MSG_TEXT + 1];

		no_detach_room(l, rv, text, sizeof(text));
		gm_conn_error(c, rq->h.id, rv, text);
		gm_request_drop(rq);
		return;
	}
	/* Its jobs may all be back already (the engine cannot run their
	 * dtype, say): the record is still ours until released. */
	if (detach) {
		answer_ids(rq);
		gm_conn_end(c);
	}
	gm_request_release(rq);
}

void gm_admit_abandon(gm_request *rq)
{
	if (rq->waiting)
		gm_poolq_cancel(rq->l->poolq, &rq->wait);
	gm_request_abandon(rq);
}

int gm_admit_open(gm_loop *l)
{
	const gm_config *cfg = l->cfg;
	gm_poolq_limits lim = {
	    .bypass_max = cfg->pool_bypass_max,
	    .bypass_ms = cfg->pool_bypass_ms,
	    .share_bytes =
		gm_share_cap(gm_pool_size(l->pool), cfg->principal_share_pct),
	};
	int rv;

	if ((rv = gm_shares_create(&l->shares)) != GM_OK)
		return rv;
	return gm_poolq_create(l->pool, l->shares, &lim, gm_admit_granted, l,
			       &l->poolq);
}

void gm_admit_close(gm_loop *l)
{
	gm_poolq_destroy(l->poolq);
	l->poolq = NULL;
	gm_shares_destroy(l->shares);
	l->shares = NULL;
}
