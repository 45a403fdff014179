/*
 * gm_sched.h - the bounded job queue and the scheduler in front of an
 * engine.
 *
 * Requests enter whole (all their jobs or none: a request that does not
 * fit in the queue, overall or at its priority, is refused with GM_EBUSY
 * at once; jobs waiting in the engine count as queued), with their memory
 * already reserved: the daemon gives each request its slab (gm_slab.h) before
 * its payload is read, so nothing here allocates for a job. gm_sched_pump hands
 * queued jobs to the engine in one wave, highest priority first, while the work
 * on the engine stays within a budget of jobs and bytes: the engine is kept
 * busy, priorities still decide what starts next, and the small jobs of
 * one request still reach the engine together, where they are batched.
 * Within a priority each principal (gm_sched_request.principal) has its
 * own FIFO and the principals take turns by work (gm_fairq.h): each gets
 * an equal share of the work started while it has jobs waiting, whether
 * it sends few huge jobs or many small ones, and over however many
 * connections, so one client flooding the queue cannot starve another
 * at the same priority; jobs of one principal start in the order they
 * came, whatever connection they came on.
 *
 * A job that does not fit in the budget keeps its principal's turn
 * until work comes back; jobs of other principals and lower priorities
 * that fit start past it, but only up to a quarter of the byte budget
 * until it starts, so a large job is never starved by smaller ones of
 * its priority or below, and small jobs do not wait for it. A job larger than
 * the whole byte budget starts beside the others, one such job at a
 * time, and takes none of the bytes: the engines run it in pieces (CPU:
 * small jobs run between them) or out of core (CUDA: through its share
 * of device memory, other jobs in the rest), so the jobs behind it need
 * not wait for all of it.
 *
 * A job handed to the engine may still wait there (the engine's own
 * queue, device memory): it counts as queued until the engine starts it
 * (the engine marks and counts its starts, gm_engine_starts, which the
 * counts below read: no news of starts crosses threads), and its queue time
 * runs to its first device operation or BLAS call (gm_job.start_us). A job
 * whose deadline passed before it started fails with GM_ETIMEDOUT and never
 * runs: at the latest when the pump or the engine reaches it, or when the owner
 * calls gm_sched_expire at gm_sched_next_deadline (a job waiting in the engine
 * is taken back from it). A job not started can be canceled. Each job,
 * when it finishes (run or not), goes to the job callback; when every
 * job of a request has, the request's done callback runs once.
 * Everything here runs on the loop thread.
 */
#ifndef GM_SCHED_H
#define GM_SCHED_H

#include <stdint.h>

#include "gm_engine.h"
#include "gm_sched_job.h"
#include "gm_stats.h"

typedef struct gm_sched gm_sched;

/* Called once per job when it is finished (status and timings filled,
 * total_us up to now), before its request's done callback. */
typedef void (*gm_sched_job_fn)(gm_sched_job *j, void *arg);

/* Called once per request when its last job is back (after its job
 * callback). The request and its jobs belong to the caller again. It
 * may be NULL: the caller then takes its request back with its last
 * job's callback, after which the scheduler no longer touches it. */
typedef void (*gm_sched_done_fn)(gm_sched_request *r, void *arg);

/* How much work may be on the engine at once. */
typedef struct gm_sched_budget {
	uint64_t jobs;	/* at least 1 */
	uint64_t bytes; /* host bytes of the jobs: A, B, C and result */
} gm_sched_budget;

/* Creates a scheduler over engine e (which stays the caller's) holding
 * at most depth queued jobs and keeping the engine's work within b. Its
 * memory is allocated here, sized by depth, so that queueing never
 * allocates. */
int gm_sched_create(gm_engine *e, unsigned depth, const gm_sched_budget *b,
		    gm_stats *st, gm_sched_job_fn job_done,
		    gm_sched_done_fn done, void *arg, gm_sched **out);
void gm_sched_destroy(gm_sched *s);

/* Caps the jobs queued at each priority (indexed by priority; 0: only
 * the overall depth applies). Counts already queued are kept. */
void gm_sched_set_limits(gm_sched *s,
			 const unsigned per_prio[GM_BATCH_PRIO_MAX + 1]);

/* Whether njobs more jobs of priority prio would be queued now (room
 * reserved counts as taken): GM_OK, GM_EBUSY (over the depth or the
 * priority's limit), GM_ESHUTDOWN after gm_sched_stop, GM_EINVAL for a
 * priority over GM_BATCH_PRIO_MAX. */
int gm_sched_room(const gm_sched *s, unsigned prio, uint64_t njobs);

/* Which limit gm_sched_room(s, prio, njobs) finds full: 1 for the
 * priority's limit, 0 for the depth; with the jobs it counts now (in
 * the queue and reserved) in *held and the limit in *limit. */
int gm_sched_full(const gm_sched *s, unsigned prio, uint64_t njobs,
		  uint64_t *held, uint64_t *limit);

/* Takes queue room for njobs jobs of priority prio now, for a request
 * that is queued later (once its payload is read): as gm_sched_room,
 * then the room is held until gm_sched_submit of requests marked
 * reserved uses it, or gm_sched_unreserve gives it back. */
int gm_sched_reserve(gm_sched *s, unsigned prio, uint64_t njobs);
void gm_sched_unreserve(gm_sched *s, unsigned prio, uint64_t njobs);

/*
 * Allocates a request with njobs zeroed jobs (one allocation). The
 * caller fills it and passes it to gm_sched_submit or gm_sched_free_request.
 */
gm_sched_request *gm_sched_alloc_request(uint32_t njobs);
void gm_sched_free_request(gm_sched_request *r);

/*
 * Queues every job of r at the back of its principal's FIFO at its
 * priority. GM_EINVAL for no jobs; else, unless r->reserved (its room
 * was reserved: then it is used, and this cannot fail, even after
 * gm_sched_stop), as gm_sched_room for all of them; then r stays the
 * caller's and no callback runs. Jobs the engine cannot run are failed
 * at once (they still come back through the callbacks, perhaps before
 * this returns). Calls gm_sched_pump.
 */
int gm_sched_submit(gm_sched *s, gm_sched_request *r);

/* Takes a job that has not started out of the queue, or back from the
 * engine (gm_engine_cancel), and fails it with GM_ECANCELED; its
 * request's done callback runs before this returns if it was the last
 * job out. GM_ENOTFOUND when j has started or is back. Pumps: what
 * waited behind j may start. */
int gm_sched_cancel(gm_sched *s, gm_sched_job *j);

/* Fails every job not started whose deadline has passed with
 * GM_ETIMEDOUT (those in the engine as they are taken back), then
 * pumps; returns how many. */
unsigned gm_sched_expire(gm_sched *s);

/* A time (gm_clock_now_us clock) at or before the earliest deadline of a
 * queued job, when to call gm_sched_expire; 0 when no queued job has a
 * deadline. It may be early (a job it stood for started meanwhile): the
 * call then finds nothing and this moves on. */
double gm_sched_next_deadline(const gm_sched *s);

/* Takes back a job the engine returned (the loop receives it from the
 * engine's done callback) and pumps. */
void gm_sched_complete(gm_sched *s, gm_job *job);

/* Where j is (enum gm_sched_job_state): a job handed to the engine
 * reads as running once the engine has started it (gm_job_started). */
int gm_sched_job_state(const gm_sched_job *j);

/* Starts queued jobs while the engine's work is within the budget. */
void gm_sched_pump(gm_sched *s);

/* Refuses new requests from now on; queued jobs and reserved room still
 * run. */
void gm_sched_stop(gm_sched *s);

/* Jobs waiting (in the queue, or in the engine not yet started), jobs
 * started and not back, requests not yet done, job room reserved. */
uint64_t gm_sched_queued(const gm_sched *s);
uint64_t gm_sched_inflight(const gm_sched *s);
uint64_t gm_sched_requests(const gm_sched *s);
uint64_t gm_sched_reserved(const gm_sched *s);

/* Jobs waiting at priority prio (0..GM_BATCH_PRIO_MAX; 0 past it), in
 * the queue or in the engine. */
uint64_t gm_sched_queued_prio(const gm_sched *s, unsigned prio);

/* What the budget counts: jobs handed to the engine and not back,
 * started or not, and their bytes; and the jobs in the queue itself
 * (at priority prio), which its depth and limits bound. */
uint64_t gm_sched_on_engine(const gm_sched *s);
uint64_t gm_sched_inflight_bytes(const gm_sched *s);
/* Of those bytes, the job's larger than the whole byte budget, which
 * the budget does not count (at most one such job is on the engine). */
uint64_t gm_sched_oversized_bytes(const gm_sched *s);
uint64_t gm_sched_in_queue(const gm_sched *s);
uint64_t gm_sched_in_queue_prio(const gm_sched *s, unsigned prio);

#endif
