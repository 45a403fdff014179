/*
 * gm_request.h - the daemon's record of a GEMM request, from the moment
 * it is accepted (gm_admit.h) to its last reply: the connection it came
 * on, its slab (gm_slab.h: the payload as it came, then each job's
 * reply frame with its result), the regions its jobs hold, and its jobs
 * as the scheduler sees them.
 *
 * A request larger than the whole pool may have a slab of pageable
 * memory instead (gm_pageable.h): its jobs are then marked
 * gm_job.host_pageable, and the slab is unmapped where a pool slab would
 * be given back.
 *
 * Each job, when it finishes, gets its reply frame written in place in
 * the slab, and the frame is queued on the connection (gm_conn.h) to be
 * written from there. The record, its slab and its hold on the
 * connection go when its jobs are all back and its last frame is
 * written (or dropped with its connection): a request whose client went
 * away still runs, and is freed like any other.
 *
 * A detached request is answered at once with its jobs' ids. Each of its
 * jobs is a scheduler request of its own, so that it finishes, is
 * waited for and is canceled on its own; when a job is done its reply
 * frame is copied out of the slab into memory the detached-job table
 * keeps, and the slab goes when the last of them is back.
 *
 * Loop thread.
 */
#ifndef GM_REQUEST_H
#define GM_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "gm_conn.h"
#include "gm_loop.h"

typedef struct gm_request {
	gm_loop *l;
	gm_conn *conn; /* held until the record goes */
	gm_hdr h;
	gm_batch b;
	uint64_t seq;		/* orders its frames among others */
	uint64_t payload;	/* bytes of the payload section */
	gm_poolq_wait wait;	/* its slab: bytes, then where */
	gm_region_holds *holds; /* regions its jobs point into, or NULL */
	gm_sched_request *sr;	/* its jobs; detached: sr[0..count-1],
				   one job each */
	uint64_t *detach_ids;	/* detached: each job's id */
	uint32_t parts;		/* scheduler requests not yet done */
	uint32_t frames;	/* reply frames queued, not yet gone */
	bool waiting;		/* for pool room, in gm_poolq */
	bool pageable;		/* its slab is pageable memory of its own,
				   not the pool's (gm_pageable.h) */
	bool submitted;		/* its jobs went to the scheduler */
	bool reserved;		/* holds queue room and frame room */
	/* On the loop's list of live records (gm_loop.live), which
	 * gm_ctrl_jobs reads. */
	struct gm_request *live_next, *live_prev;
} gm_request;

/*
 * A record for the accepted request h (head and descriptors at hand,
 * checked, regions checked: PROTOCOL.md 8 steps 1-24) on c, whose jobs
 * are described from head and desc and bound to the regions they name
 * (nrefs references taken). Its slab is not reserved yet. Returns NULL
 * when out of memory.
 */
gm_request *gm_request_new(gm_loop *l, gm_conn *c, const gm_hdr *h,
			   const gm_batch *b, const uint8_t *head,
			   const uint8_t *desc, uint32_t nrefs,
			   uint64_t payload);

/* The kernel a job of dtype that names the default kernel runs: the
 * configured one, unless it cannot run dtype (the tiled kernel is
 * fp64/fp32 only, so other dtypes fall back to cuBLAS). Also what ping's
 * dtypes are asked with (gm_ctrl.c). */
uint8_t gm_request_default_kernel(const gm_loop *l, int dtype);

/* The slab bytes the request needs (gm_slab.h), from its head: what
 * step 24 checks and gm_poolq reserves. */
uint64_t gm_request_slab_bytes(const gm_hdr *h, const uint8_t *head,
			       const uint8_t *desc, uint64_t payload);

/* Points the jobs' inline operands, results and reply frames into the
 * slab just granted (rq->wait.slab), head and desc as for
 * gm_request_new; in a pageable slab, marks them host_pageable. */
void gm_request_place(gm_request *rq, const uint8_t *head, const uint8_t *desc);

/*
 * The payload is in: queues the jobs, detached ones recorded first with
 * their ids in rq->detach_ids, and returns GM_OK; or, when a detached
 * request's results no longer fit (gm_detach_room: others took the room
 * while its payload came), queues nothing and returns why.
 *
 * Jobs can come back before this returns (the engine cannot run their
 * dtype, it refuses the wave, ...), all of them: the caller keeps a hold
 * on the record all the same, so that it can still answer the request
 * from it (a detached request's ids), and lets go with
 * gm_request_release, after which the record may be gone.
 */
int gm_request_submit(gm_request *rq);

/* Ends the caller's hold that gm_request_submit (GM_OK) left: the
 * record goes now if its jobs are all back and their frames gone. */
void gm_request_release(gm_request *rq);

/* Frees a record whose jobs were never submitted, refused after it was
 * accepted (gm_request_submit failed; its jobs count as rejected), with
 * its slab if it has one. */
void gm_request_drop(gm_request *rq);

/* Frees a record whose client closed its connection before its payload
 * was in: its jobs never run, and count as failed, ECANCELED, so that
 * every job of an accepted request is counted once, ok or failed. */
void gm_request_abandon(gm_request *rq);

/* The scheduler's callbacks (arg the gm_loop): a job is finished,
 * counted under its owner's uid when it came over ipc://
 * (gm_stats_uid_job), and answered; every job of a scheduler request
 * is. */
void gm_request_job_done(gm_sched_job *j, void *arg);
void gm_request_sched_done(gm_sched_request *sr, void *arg);

/* The connection queue's callback (gm_outq.h): n of the request's
 * (owner's) frames are gone. */
void gm_request_frames_done(void *owner, uint32_t n, void *arg);

#endif
