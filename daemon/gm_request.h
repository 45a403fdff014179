/*
 * gm_request.h - the daemon's record of a GEMM request, from the moment
 * it is accepted (gm_admit.h) to its last reply: the connection it came
 * on, its slab (gm_slab.h: the payload as it came, then each job's
 * reply frame with its result), the regions its jobs hold, and its jobs
 * as the scheduler sees them; and the one state machine its life goes
 * through, advanced by gm_request_advance alone:
 *
 *          accepted (gm_admit_gemm)
 *               |
 *             HEAD ---- NO_ROOM ---> WAIT_POOL
 *               |                       |
 *              SLAB                   SLAB (granted; connection woken)
 *               v                       |
 *            PAYLOAD <------------------'
 *               |
 *          PAYLOAD_IN ---------------------------------.
 *               v                                      | detached,
 *            QUEUED  (jobs in the scheduler; each      | results no
 *               |     answered: JOB_BACK)              | longer fit
 *   last job answered                                  |
 *               v                                      |
 *           REPLYING (reply frames being written)      |
 *               |                                      |
 *   GONE: nothing pending                              |
 *               v                                      v
 *             DONE  <------------- CLOSED (from HEAD, WAIT_POOL,
 *                                  PAYLOAD: the client went first)
 *
 * Its life is counted once, in pending: from PAYLOAD_IN on, one for
 * each job not yet answered or whose reply frame is not yet gone
 * (written, or dropped with its connection); a detached job's ends when
 * it is answered. The record goes when pending reaches 0. What it holds
 * of others is taken and given back by the transitions alone: a hold on
 * its connection (HEAD to DONE), the connection's conn_max_inflight
 * count (HEAD to REPLYING, or to its ids answered when detached), queue
 * room in the scheduler and frame room on the connection (HEAD until
 * QUEUED uses them, or DONE gives them back).
 *
 * A request larger than the whole pool may have a slab of pageable
 * memory instead (gm_pageable.h): its jobs are then marked
 * gm_job.host_pageable, and the slab is unmapped where a pool slab would
 * be given back. A request whose client went away still runs, and is
 * freed like any other.
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

/* Where a request is; see the diagram above. */
enum gm_request_state {
	GM_REQUEST_HEAD,      /* accepted on its head; no slab asked for */
	GM_REQUEST_WAIT_POOL, /* waiting in gm_poolq for its slab */
	GM_REQUEST_PAYLOAD,   /* its slab had; its payload being read */
	GM_REQUEST_QUEUED,    /* its jobs in the scheduler */
	GM_REQUEST_REPLYING,  /* every job answered; frames being written */
	GM_REQUEST_DONE,      /* freed */
};

/* What moves it; the states each may come in are the diagram's. */
enum gm_request_event {
	GM_REQUEST_SLAB,       /* its slab is rq->wait.slab */
	GM_REQUEST_NO_ROOM,    /* it waits in gm_poolq for its slab */
	GM_REQUEST_PAYLOAD_IN, /* its payload is in the slab */
	GM_REQUEST_CLOSED,     /* its connection closed before that */
	GM_REQUEST_GONE,       /* n of what pending counts are over */
};

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
	int state;		/* enum gm_request_state */
	uint32_t pending;	/* jobs unanswered, frames not gone */
	uint32_t answered;	/* jobs answered so far */
	bool counted;		/* in its connection's inflight count */
	bool pageable;		/* its slab is pageable memory of its own,
				   not the pool's (gm_pageable.h) */
	/* On the loop's list of live records (gm_loop.live), which
	 * gm_ctrl_jobs reads. */
	struct gm_request *live_next, *live_prev;
} gm_request;

/*
 * A record for the accepted request h (head and descriptors at hand,
 * checked, regions checked: PROTOCOL.md 8 steps 1-24) on c, whose jobs
 * are described from head and desc and bound to the regions they name
 * (nrefs references taken), in HEAD, counted in c's inflight requests.
 * Its slab is not reserved yet; the caller reserved queue room and frame
 * room for it. Returns NULL when out of memory.
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
 * Advances rq by event (n: GM_REQUEST_GONE's count, else 0); the one
 * place its state changes. PAYLOAD_IN queues its jobs, detached ones
 * recorded first with their ids in rq->detach_ids and answered with
 * them; or, when a detached request's results no longer fit
 * (gm_detach_room: others took the room while its payload came),
 * refuses it whole, counted as rejected. CLOSED counts its jobs as
 * failed, ECANCELED, so that every job of an accepted request is
 * counted once, ok or failed. Either of those, and GONE, may free rq.
 */
void gm_request_advance(gm_request *rq, int event, uint32_t n);

/* Why a detached request has no room for its results (rv from
 * gm_detach_room), into text; a full table names the limit and its
 * key. */
void gm_request_no_detach_room(const gm_loop *l, int rv, char *text,
			       size_t len);

/* gm_poolq's grant callback (arg the gm_loop): WAIT_POOL -> PAYLOAD,
 * and the connection is woken to read the payload into the slab. */
void gm_request_granted(gm_poolq_wait *w, void *arg);

/* The scheduler's job callback (arg the gm_loop): a job is finished,
 * counted under its owner's uid when it came over ipc://
 * (gm_stats_uid_job), and answered. */
void gm_request_job_done(gm_sched_job *j, void *arg);

/* The connection queue's callback (gm_outq.h): n of the request's
 * (owner's) frames are gone. */
void gm_request_frames_done(void *owner, uint32_t n, void *arg);

#endif
