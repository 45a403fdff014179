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

/* Where a job is. */
enum gm_sched_job_state {
	GM_SCHED_JOB_NEW,     /* not submitted */
	GM_SCHED_JOB_QUEUED,  /* waiting for the engine */
	GM_SCHED_JOB_RUNNING, /* on the engine */
	GM_SCHED_JOB_DONE,    /* back, or failed without running */
};

/* One job of a request. The caller fills job.d and the operand
 * pointers (job.a, b, c, out: in the request's slab or in regions) and
 * reply; the scheduler fills the rest. */
typedef struct gm_sched_job {
	gm_job job;
	gm_sched_request *req;
	uint32_t idx;
	int state;	 /* enum gm_sched_job_state */
	uint8_t *reply;	 /* the caller's: where its reply frame goes */
	uint64_t bytes;	 /* host bytes the engine moves (budget) */
	double start_us; /* handed to the engine */
	gm_timings t;
	struct gm_sched_job *qnext; /* the queue's, while queued */
	void *link; /* the caller's: to hand the job between threads */
} gm_sched_job;

/* A request: the caller fills id, batch, conn, recv_us, reserved and
 * user. */
struct gm_sched_request {
	uint64_t id;
	gm_batch batch;
	uint32_t conn; /* the connection it came on; turns are taken
			  between these */
	uint32_t njobs;
	uint32_t left; /* jobs not yet back */
	int reserved;  /* its queue room was reserved (gm_sched_reserve) */
	double recv_us;
	void *user; /* the caller's */
	gm_sched_job *jobs;
};

#endif
