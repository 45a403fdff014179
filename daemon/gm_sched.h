/*
 * gm_sched.h - the bounded job queue and the scheduler in front of an
 * engine.
 *
 * Requests enter whole (all their jobs or none: a request that does not
 * fit in the queue is refused with GM_EBUSY at once). Jobs wait in one
 * FIFO per priority; gm_sched_pump moves as many as the host pool has
 * room for onto the engine in one wave, highest priority first. A job
 * whose slab does not fit stays at the head of its queue until a slab is
 * freed (back-pressure, never a fallback to other memory); a job whose
 * deadline passed before it started fails with GM_ETIMEDOUT and never
 * runs. When every job of a request has come back, the request's done
 * callback runs once. Everything here runs on the loop thread.
 */
#ifndef GM_SCHED_H
#define GM_SCHED_H

#include <stdint.h>

#include "gm_engine.h"
#include "gm_pool.h"
#include "gm_stats.h"

typedef struct gm_sched gm_sched;
typedef struct gm_sreq gm_sreq;

/* One job of a request. The caller fills job.d, job.copy_in (the wire
 * payload: A, B, C back to back) and job.copy_out (where the result must
 * land); the scheduler fills the rest. */
typedef struct gm_sjob {
	gm_job job;
	gm_sreq *req;
	uint32_t idx;
	void *slab;
	double start_us; /* handed to the engine */
	gm_timings t;
	struct gm_sjob *qnext;
} gm_sjob;

struct gm_sreq {
	uint64_t id;
	gm_batch batch;
	uint32_t njobs;
	uint32_t left; /* jobs not yet back */
	double recv_us;
	void *user; /* the caller's */
	gm_sjob *jobs;
};

/* Called once per request when its last job is back. The request and
 * its jobs belong to the caller again. */
typedef void (*gm_sched_done_fn)(gm_sreq *r, void *arg);

/* Creates a scheduler over engine e and pool p (both stay the caller's)
 * holding at most depth queued jobs. */
int gm_sched_create(gm_engine *e, gm_pool *p, unsigned depth, gm_stats *st,
		    gm_sched_done_fn done, void *arg, gm_sched **out);
void gm_sched_destroy(gm_sched *s);

/*
 * Allocates a request with njobs zeroed jobs (one allocation). The
 * caller fills it and passes it to gm_sched_submit or gm_sched_free_req.
 */
gm_sreq *gm_sched_new_req(uint32_t njobs);
void gm_sched_free_req(gm_sreq *r);

/*
 * Queues every job of r. GM_EBUSY when the queue has no room for all of
 * them, GM_ESHUTDOWN after gm_sched_stop, GM_EINVAL for no jobs or a
 * priority over GM_BATCH_PRIO_MAX; then r stays the caller's and
 * the done callback will not run. Jobs the engine cannot run or that can
 * never fit the pool are failed at once (they still come back through
 * done). Calls gm_sched_pump.
 */
int gm_sched_submit(gm_sched *s, gm_sreq *r);

/* Takes back a job the engine returned (the loop receives it from the
 * engine's done callback), frees its slab, and pumps. */
void gm_sched_complete(gm_sched *s, gm_job *job);

/* Starts queued jobs while the pool has room. */
void gm_sched_pump(gm_sched *s);

/* Refuses new requests from now on; queued jobs still run. */
void gm_sched_stop(gm_sched *s);

/* Jobs waiting, jobs on the engine, requests not yet done. */
uint64_t gm_sched_queued(const gm_sched *s);
uint64_t gm_sched_inflight(const gm_sched *s);
uint64_t gm_sched_requests(const gm_sched *s);

#endif
