/*
 * gm_dreq.c - detached requests on the loop thread: each job is queued
 * as a one-job scheduler request of its own, recorded in gm_detach, and
 * the request is answered at once with the jobs' ids; their replies are
 * kept in gm_detach for waits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_daemon_impl.h"

struct gm_dbatch {
	nng_msg *req;
	uint32_t left; /* jobs not yet done */
	gm_dreq jobs[];
};

static void free_detached(gm_dbatch *db, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (db->jobs[i].rep != NULL)
			nng_msg_free(db->jobs[i].rep);
		gm_sched_free_req(db->jobs[i].r);
	}
	free(db);
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

/* Drops a job's hold on its detached batch; the last frees it. */
void gm_dreq_release(gm_dbatch *db)
{
	if (--db->left != 0)
		return;
	nng_msg_free(db->req);
	free(db);
}

/*
 * Allocates everything a detached request needs before any of it is
 * queued, so that it is refused whole or not at all: the batch, and per
 * job a one-job scheduler request and a one-job reply message of its
 * own, which the result lands in and the table keeps; and *ans, room
 * for the reply listing the ids.
 */
static int make_detached(gm_daemon *d, nng_msg *msg, const gm_hdr *h,
			 const gm_batch *b, gm_dbatch **out, char **ans)
{
	uint32_t conn = nng_pipe_id(nng_msg_get_pipe(msg));
	gm_dbatch *db = calloc(1, sizeof(*db) + h->count * sizeof(gm_dreq));
	double now = gm_now_us();
	const uint8_t *a, *bb, *c;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;

	if (db == NULL || (*ans = malloc(32 + 21 * (size_t)h->count)) == NULL) {
		free(db);
		return GM_ENOMEM;
	}
	db->req = msg;
	gm_proto_jobs_begin(nng_msg_body(msg), nng_msg_len(msg), &it);
	for (uint32_t i = 0; i < h->count; i++) {
		gm_dreq *dr = &db->jobs[i];
		gm_sreq *r = dr->r = gm_sched_new_req(1);

		gm_proto_jobs_next(&it, &jd, &a, &bb, &c);
		gm_job_sizes_of(&jd, &z);
		if (r == NULL ||
		    nng_msg_alloc(&dr->rep, GM_HDR_SIZE + GM_REPLY_JOB_SIZE +
						z.out) != 0) {
			free_detached(db, i + 1);
			free(*ans);
			return GM_ENOMEM;
		}
		r->id = h->id;
		r->batch = *b;
		r->conn = conn;
		r->recv_us = now;
		r->user = dr;
		dr->batch = db;
		gm_request_fill_job(d, &r->jobs[0].job, &jd, a,
				    (uint8_t *)nng_msg_body(dr->rep) +
					GM_HDR_SIZE);
	}
	*out = db;
	return GM_OK;
}

/* Records and queues each job of db; writes the ids reply into ans. */
static void start_detached(gm_daemon *d, gm_dbatch *db, uint32_t n, char *ans)
{
	size_t off = (size_t)sprintf(ans, "{\"ok\":true,\"jobs\":[");

	/* A hold of its own while queueing: a job failing at once must
	 * not free the batch under this loop. */
	db->left = n + 1;
	for (uint32_t i = 0; i < n; i++) {
		gm_dreq *dr = &db->jobs[i];

		dr->detach_id =
		    gm_detach_add(d->detach, dr->r, nng_msg_len(dr->rep));
		off += (size_t)sprintf(ans + off, "%s%" PRIu64, i ? "," : "",
				       dr->detach_id);
		/* Cannot fail: there was room for all, on this thread. */
		(void)gm_sched_submit(d->sched, dr->r);
	}
	strcpy(ans + off, "]}");
	gm_dreq_release(db);
}

/* A request with GM_BATCH_DETACH: answered at once with its job ids. */
void gm_dreq_handle(gm_daemon *d, gm_work *w, nng_msg *msg, const gm_hdr *h,
		    const gm_batch *b)
{
	char text[GM_MSG_TEXT + 1], *ans = NULL;
	gm_dbatch *db = NULL;
	int rv;

	if ((rv = gm_sched_room(d->sched, b->priority, h->count)) != 0)
		gm_request_no_room(d, rv, b, h->count, text, sizeof(text));
	else if ((rv = gm_detach_room(d->detach, h->count,
				      detached_cost(msg))) != 0)
		snprintf(text, sizeof(text), "%s",
			 rv == GM_EBUSY ? "no room for more detached results "
					  "(detach_max_bytes): wait for or "
					  "cancel some"
					: "no memory for the request");
	else if ((rv = make_detached(d, msg, h, b, &db, &ans)) != 0)
		snprintf(text, sizeof(text), "no memory for the request");
	if (rv != 0) {
		d->stats.jobs_rejected += rv == GM_EBUSY ? h->count : 0;
		gm_request_reply_error(d, w, h->id, rv, text);
		nng_msg_free(msg);
		return;
	}
	d->stats.requests++;
	start_detached(d, db, h->count, ans);
	gm_request_reply_ctrl(d, w, h->id, ans);
	free(ans);
	gm_daemon_arm_tick(d);
}
