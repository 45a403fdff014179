/*
 * gm_detach_impl.h - private to gm_detach.c (the table: room, jobs in
 * and out, waits, cancels, expiry) and gm_detach_view.c (what clients
 * and the stats read of it): the entry and table records and the two
 * lookups both use. Included after gm_detach.h, whose types it uses
 * (and which it does not include: modules may not include each other
 * in a loop). Loop thread only.
 */
#ifndef GM_DETACH_IMPL_H
#define GM_DETACH_IMPL_H

#include <stdint.h>

#include "gm_principal.h"
#include "gm_sched.h"

typedef struct entry {
	uint64_t id;
	int spare;	     /* set aside by gm_detach_room, not a job yet */
	gm_principal *owner; /* who submitted it (a reference) */
	int state;	     /* enum gm_jobstate; GM_JOBSTATE_QUEUED also while
				running: job says which */
	int cancel;	     /* canceled while running: drop its result */
	int taken;	     /* a wait took the result */
	gm_sched_job *job;   /* while queued or running */
	gm_job_desc d;	     /* the shape, for status */
	uint8_t priority;
	int status;
	char msg[GM_MSG_TEXT + 1];
	gm_timings t;
	uint8_t *result; /* its GEMM_REPLY frame, or NULL */
	uint64_t result_len;
	uint64_t bytes;	 /* counted against the limit */
	double since_us; /* finished (kept), or its result went (record) */
	void *waiter;	 /* a parked wait's context, or NULL */
	uint64_t wait_req;
	double wait_until_us; /* 0: no timeout */
	struct entry *hnext;
	struct entry *next, *prev; /* on kept, records or waits */
} entry;

typedef struct list {
	entry *head, *tail;
	uint64_t n;
} list;

struct gm_detach {
	gm_sched *sched;
	double keep_us;
	uint64_t max_bytes, bytes;
	uint64_t live_bytes; /* of bytes, held by queued and running jobs */
	uint64_t jobs, pending, dropped;
	entry **buckets;
	uint64_t nbuckets, count; /* spares included */
	entry *spare; /* set aside by gm_detach_room, chained by next */
	uint32_t nspare;
	list kept, records, waits;
	gm_detach_answer_fn answer;
	void *arg;
};

/* Job id (never a spare), when who owns it or who is NULL; else NULL. */
entry *gm_detach_find(const gm_detach *t, uint64_t id, const gm_principal *who);

/* The state a client sees of e: a queued entry may have started. Here,
 * not in gm_detach_view.c, so that gm_detach.c calls nothing of the
 * view, which calls it. */
static inline int gm_detach_state_of(const entry *e)
{
	if (e->state == GM_JOBSTATE_QUEUED && e->job != NULL &&
	    gm_sched_job_state(e->job) == GM_SCHED_JOB_RUNNING)
		return GM_JOBSTATE_RUNNING;
	return e->state;
}

#endif
