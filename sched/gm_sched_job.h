/*
 * gm_sched_job.h - the records the scheduler queues: a request, whose
 * jobs enter the queue together and whose done callback runs once they
 * are all back, and each of its jobs. The owner fills what is marked
 * "the caller's" (gm_sched.h says when); the scheduler and its fair
 * queue (gm_fairq.h) the rest. Types only.
 */
#ifndef GM_SCHED_JOB_H
#define GM_SCHED_JOB_H

#include <stdint.h>

#include "gm_job.h"
#include "gm_proto.h"

typedef struct gm_sched_request gm_sched_request;

/* Where a job is. A job handed to the engine still waits until the
 * engine starts it: it counts as queued till then, and reads as
 * GM_SCHED_JOB_RUNNING from then on (gm_sched_job_state), while the
 * scheduler's own state stays HANDED until the job is back. */
enum gm_sched_job_state {
	GM_SCHED_JOB_NEW,     /* not submitted */
	GM_SCHED_JOB_QUEUED,  /* waiting in the queue */
	GM_SCHED_JOB_HANDED,  /* handed to the engine, waiting there */
	GM_SCHED_JOB_RUNNING, /* started on the engine */
	GM_SCHED_JOB_DONE,    /* back, or failed without running */
};

typedef struct gm_sched_job gm_sched_job;

/* One job of a request. The caller fills job.d and the operand
 * pointers (job.a, b, c, out: in the request's slab or in regions) and
 * reply; the scheduler fills the rest. */
struct gm_sched_job {
	gm_job job;
	gm_sched_request *req;
	uint32_t idx;
	int state;	  /* enum gm_sched_job_state */
	uint8_t *reply;	  /* the caller's: where its reply frame goes */
	uint64_t bytes;	  /* host bytes the engine moves (budget) */
	double handed_us; /* handed to the engine */
	gm_timings t;
	struct gm_sched_job *qnext; /* the queue's, while queued */
	/* While handed with a deadline: the scheduler's list of them. */
	struct gm_sched_job *dprev, *dnext;
	/* The caller's: the link with which it hands the job back from an
	 * engine's threads to its own (gm_handoff.h). */
	void *link;
};

/* A request: the caller fills id, batch, conn, principal, recv_us,
 * reserved and user. */
struct gm_sched_request {
	uint64_t id;
	gm_batch batch;
	uint32_t conn; /* the connection it came on */
	/* Whom it speaks for, as a key that stays put while it waits (the
	 * daemon's gm_share of its principal); turns are taken between
	 * these. NULL: its connection alone, as a principal of its own. */
	const void *principal;
	uint32_t njobs;
	uint32_t left; /* jobs not yet back */
	int reserved;  /* its queue room was reserved (gm_sched_reserve) */
	double recv_us;
	void *user; /* the caller's */
	gm_sched_job *jobs;
};

#endif
