/*
 * gm_request.h - the daemon's record of a GEMM request, from the moment
 * it is admitted (gm_admit.h) to its one reply: the context it came on,
 * the request message (which the jobs read their inline operands from),
 * the reply message (which the results are written into, each after its
 * job's record, so that the engine writes them there directly) and the
 * regions its jobs hold. The scheduler's view of the same request is a
 * gm_sched_request whose user is the record.
 *
 * A detached request is answered as soon as it is admitted. Each of its
 * jobs is then a request of its own, so that it finishes, is waited for
 * and is canceled on its own: a record without a context whose one-job
 * reply goes to the detached-job table. The records of one detached
 * request form a group that holds the request message until the last of
 * them is done.
 *
 * Loop thread.
 */
#ifndef GM_REQUEST_H
#define GM_REQUEST_H

#include <nng/nng.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_loop.h"

typedef struct gm_request_group gm_request_group;

typedef struct gm_request {
	gm_sched_request *sr;	 /* the scheduler's view of it */
	gm_work *w;		 /* where to reply; NULL when detached */
	nng_msg *req, *rep;	 /* req: NULL when detached (the group's) */
	gm_request_group *group; /* detached: the request's jobs */
	uint64_t detach_id;	 /* detached: the job's id */
	gm_region_holds *holds;	 /* regions its jobs point into, or NULL */
} gm_request;

/* The jobs of one detached request. */
struct gm_request_group {
	nng_msg *req;
	uint32_t left; /* records not yet done (and a hold while queueing) */
	gm_request jobs[];
};

/* Bytes of the reply to a checked GEMM request: a header, and per job
 * its record and its result (none for a result written to a region). */
uint64_t gm_request_reply_size(const uint8_t *body, size_t len);

/* Fills job j described by jd with payload a; its result goes after the
 * reply record at rec. Returns the bytes of record and result. */
uint64_t gm_request_fill_job(const gm_loop *l, gm_job *j, const gm_job_desc *jd,
			     const uint8_t *a, uint8_t *rec);

/* Fills the jobs of sr from the checked request body, each result at its
 * place in the reply rep or in the region it names (taking holds in
 * holds). */
void gm_request_fill_jobs(gm_loop *l, gm_sched_request *sr, const uint8_t *body,
			  size_t len, uint8_t *rep, gm_region_holds *holds);

/* Writes into text why the scheduler has no room (rv from gm_sched) for
 * njobs more jobs of batch b. */
void gm_request_no_room(const gm_loop *l, int rv, const gm_batch *b,
			uint32_t njobs, char *text, size_t len);

/* The scheduler's done callback (arg is the gm_loop): every job of sr is
 * back. Logs the jobs that failed, builds the reply and sends it, or
 * hands it to the detached-job table; frees the request. */
void gm_request_done(gm_sched_request *sr, void *arg);

/* Drops a record's hold on its group; the last frees it. */
void gm_request_group_release(gm_request_group *g);

#endif
