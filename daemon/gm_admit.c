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
		gm_request_no_detach_room(l, rv, text, len);
		return rv;
	}
	if ((rv = gm_pageable_admit(&l->stats.pageable, gm_pool_size(l->pool),
				    slab, who, pageable, text, len)) != GM_OK)
		return rv;
	return gm_sched_reserve(l->sched, b->priority, h->count);
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
	/* Its own holder: the record may outlive its connection. */
	rq->wait.who = gm_share_hold(who);
	if (pageable) {
		/* Its own memory, never waited for. */
		rq->pageable = true;
		rq->wait.slab = mem;
		gm_request_advance(rq, GM_REQUEST_SLAB, 0);
	} else if (gm_poolq_get(l->poolq, &rq->wait) == GM_OK) {
		gm_request_advance(rq, GM_REQUEST_SLAB, 0);
	} else { /* never GM_ETOOBIG: step 24 */
		gm_request_advance(rq, GM_REQUEST_NO_ROOM, 0);
	}
	return rq;
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
	return gm_poolq_create(l->pool, l->shares, &lim, gm_request_granted, l,
			       &l->poolq);
}

void gm_admit_close(gm_loop *l)
{
	gm_poolq_destroy(l->poolq);
	l->poolq = NULL;
	gm_shares_destroy(l->shares);
	l->shares = NULL;
}
