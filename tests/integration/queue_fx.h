/*
 * queue_fx.h - what the queue tests share: jobs sent on their own slot
 * and waited for, the "blocker" sized by calibrate() to keep the CPU
 * engine (one BLAS thread) busy for about BLOCK_S seconds and the
 * "filler" that takes the scheduler's budget behind it, small jobs
 * queued behind both, a gemmd per test with the pool sized for them,
 * detached jobs' status and ping's "ready".
 */
#ifndef QUEUE_FX_H
#define QUEUE_FX_H

#include <math.h>

#include "it_case.h"
#include "gm_proto.h"

#define BLOCK_S 1.5 /* how long a blocker keeps the engine busy */

#define SMALL 300 /* m = n = k of a small job: 2.2 MB of pool */

#define TIMEOUT_MS 60000 /* for calls that should never take it */

#define DEADLINE_MS 200

#define PHASE_S 0.15 /* work of each job of test_phases_add_up */

#define SMALLS_ROOM (64ull * 3 * SMALL * SMALL * 8) /* 64 small jobs */

/* The CPU engine's budget of bytes in flight (gm_daemon.c's
 * CPU_BUDGET_BYTES): a job over it is run beside others. */
#define BUDGET_BYTES (64ull << 20)

/* The filler, 3 * 1660^2 doubles: within that budget by less than a
 * small job's 3 * 300^2, so that none fits beside it. */
#define FILLER_N 1660

extern uint32_t blocker_n;

/* Every job through the socket and the pool, whose order is the
 * daemon's: staged through a region, a result is copied out by one of
 * the library's threads, and callbacks of one connection could overtake
 * each other. */
extern const gemmd_open_opts socket_only;

/* An asynchronous job and what became of it. */
typedef struct slot {
	gemmd_job job;
	int rv, done;
	uint64_t seq; /* the job's place in the daemon's start order */
	double sent_us, done_us;
} slot;

void on_done(void *arg, int rv);

int is_done(slot *s);

void wait_done(slot *s);

void send_job(gemmd_client *c, slot *s, int prio, uint32_t dl_ms);

/* The filler behind the blocker under way, and the jobs it adds to
 * jobs.queued (1 while it waits behind the blocker, else 0). */
extern slot filler;

extern int queued_base;

/* Waits until the daemon has at least n jobs queued besides the
 * filler. */
void wait_queued(gemmd_client *c, double n);

/* Starts a blocker on c and its filler, and returns once the engine
 * runs the blocker with the filler handed to it, waiting. */
void send_blocker(gemmd_client *c, slot *s);

/* Waits for the blocker s and its filler to end. */
void end_blocker(slot *s);

/* Sends a small job on c and waits (asking on stats) until it is the
 * nth queued, so that jobs sent one after another arrive in that order:
 * requests on different contexts of one socket may overtake each
 * other. */
void queue_small(gemmd_client *c, gemmd_client *stats, slot *s, unsigned seed,
		 int prio, double nth);

struct done_at {
	uint64_t seq;
	int tag;
};

int by_seq(const void *a, const void *b);

/* Starts gemmd with one BLAS thread running each job whole, the
 * blocker's pool and extra arguments, and opens a client on its ipc://
 * socket. */
gemmd_client *start(it_daemon *d, const char *const *extra);

void stop(it_daemon *d, gemmd_client *c);

gemmd_job_info status_of(gemmd_client *c, uint64_t id);

/* Polls job id until it is in state (10 s at most). */
void wait_state(gemmd_client *c, uint64_t id, int state);

/* Whether the stats say the daemon is draining. */
int draining(gemmd_client *c);

/* What a ping says of the daemon's readiness (as /readyz): 1, 0, or -1
 * when it says nothing. */
int ready(gemmd_client *c);

/*
 * Sizes the blocker from the engine's speed on this host: one 400^3 job
 * with one BLAS thread gives the rate; the blocker is the cube that
 * takes BLOCK_S at it (at least 1700^3, over the budget), and the pool
 * is made large enough for it, the filler and SMALLS_ROOM more.
 */
int calibrate(void **state);

#endif
