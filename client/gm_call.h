/*
 * gm_call.h - private to the client library: a call and its parts.
 *
 * A call is what a caller started: a GEMM request (blocking or not), a
 * detached one, a control request or a wait. It goes to the daemon as
 * one or more request frames, its parts: one part for most calls; one
 * per connection when a large request is striped (gm_daemon.h); one per
 * chunk of jobs when plain pointers are staged through shared memory
 * (gm_stage.h). A part covers a range of the call's jobs and has its own
 * request id; its replies are routed to it by id (gm_read.h).
 *
 * A call ends once: when every part is answered, or at the first
 * failure that decides it (a connection lost under a written part, the
 * deadline, gemmd_close). Then every job without an answer gets the
 * call's code, parts not yet written are dropped, parts half written
 * have the rest of the caller's bytes replaced by zeros (the frame must
 * be finished, and the caller's memory is no longer ours to read), and
 * parts written stay as zombies whose replies are read and discarded.
 * Its caller is told once no I/O or copy touches its memory any more
 * (pins): a read or write in progress finishes first, and if it does
 * not within GM_CALL_GRACE_MS its connection is closed.
 *
 * Everything here runs with the client's lock held, except gm_call_tell
 * and the waiter functions.
 */
#ifndef GM_CALL_H
#define GM_CALL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gm_client.h"
#include "gm_encode.h"

/* How long an ended call waits for I/O in progress on its memory before
 * that connection is closed. */
#define GM_CALL_GRACE_MS 1000

/* How long a blocking caller polls for its call's end before it sleeps:
 * a small job's reply comes within some 100 us, and waking a sleeping
 * thread took 8 us of that (an H100 host, bench/RESULTS.md). Meanwhile
 * it reads its connections itself (gm_poller.h): the reply then wakes
 * none of nng's threads either. */
#define GM_CALL_SPIN_US 100

enum gm_call_kind {
	GM_CALL_GEMM,	/* jobs, each answered by a GEMM_REPLY */
	GM_CALL_DETACH, /* jobs answered by one CTRL_REPLY of job ids */
	GM_CALL_CTRL,	/* JSON answered by a CTRL_REPLY */
	GM_CALL_WAIT,	/* JSON answered by a GEMM_REPLY into jobs[0] */
};

/* A blocking caller's rendezvous with the thread that ends its call;
 * after gm_call_wait, reply is a control call's JSON (the caller's to
 * free). */
typedef struct gm_call_waiter {
	gm_poller *poller; /* the client's, which the wait polls */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rv;
	char *reply;
	char msg[GM_CLIENT_ERRLEN];
} gm_call_waiter;

/* Who hears of a call's end: a waiter (w), or done(arg, rv). */
typedef struct gm_call_notify {
	gemmd_done_fn done;
	void *arg;
	gm_call_waiter *w;
} gm_call_notify;

struct gm_stage_call;

struct gm_call {
	gemmd_client *cl;
	int kind; /* enum gm_call_kind */
	gemmd_job *jobs;
	uint32_t njobs;
	uint64_t *ids;	/* DETACH: where the job ids go */
	bool alloc_out; /* WAIT for a job without out: allocate it */
	char *reply;	/* CTRL: the JSON document */
	gm_call_notify nt;
	int timeout_ms;
	uint64_t start; /* gm_timer_now() */
	gm_tev deadline, grace;
	uint8_t *settled; /* per job: its outcome is in jobs[] */
	bool tell_queued;
	gm_daemon *dm;	   /* where its parts go */
	gm_part *parts;	   /* through gm_part.next_of_call */
	unsigned open;	   /* parts (and chunks) not resolved */
	unsigned accepted; /* parts the daemon answered */
	int refusal;	   /* the first part refused whole */
	char refusal_msg[GM_MSG_TEXT + 1];
	bool ended;
	int rv;
	int pins; /* I/O and copies in progress on the caller's memory */
	char msg[GM_CLIENT_ERRLEN];
	struct gm_stage_call *stage;	/* staged through shared memory */
	gm_call *next_call, *prev_call; /* the client's, while not ended */
	gm_call *next_tell;
};

enum gm_part_state {
	GM_PART_NEW,	 /* not in a queue yet (a chunk being staged) */
	GM_PART_QUEUED,	 /* in its connection's queue, nothing written */
	GM_PART_WRITING, /* some of it written, the rest queued */
	GM_PART_SENT,	 /* all written, replies awaited */
	GM_PART_DONE,	 /* answered, refused, lost or dropped */
};

struct gm_part {
	gemmd_client *cl;
	gm_call *call; /* NULL once the call ended: a zombie */
	gm_conn *conn; /* where it is queued or was written */
	uint64_t id;
	uint32_t first, njobs; /* the call's jobs [first, first + njobs) */
	uint32_t left;	       /* jobs not answered */
	uint8_t *answered;     /* per job */
	gm_frame f;
	unsigned seg;	/* the next byte to write: f.segs[seg] */
	size_t seg_off; /* at this offset */
	int state;	/* enum gm_part_state */
	bool queued;	/* in its connection's queue */
	bool written;	/* a byte of it went out */
	bool refused;	/* over by an ERROR: nothing of it ran */
	int refs;
	uint64_t work; /* what it adds to its daemon's outstanding work */
	struct gm_chunk *chunk;	  /* staged: its space in the region */
	gm_part *next_of_call;	  /* the call's parts */
	gm_part *prev, *next;	  /* its connection's queue */
	gm_part *prev_w, *next_w; /* its connection's written parts */
};

/* Makes a call of kind told to nt, with timeout_ms (GEMMD_FOREVER: none)
 * counting from now. Not under the lock. GM_ENOMEM. */
int gm_call_new(gemmd_client *cl, int kind, int timeout_ms,
		const gm_call_notify *nt, gm_call **out);

/* Frees a call that was never started. */
void gm_call_free(gm_call *k);

/* Starts k's clock: adds it to its client's calls and arms its
 * deadline. Its parts are then made and queued (gm_daemon_route). */
void gm_call_start(gm_call *k);

/* A fresh request id (any thread, no lock: frames are built with it
 * before their part is made). */
uint64_t gm_call_next_id(gemmd_client *cl);

/* Makes a part of k for jobs [first, first + njobs) under request id;
 * its frame is the caller's to build. Counts in k->open. NULL: no
 * memory (the call is ended with GM_ENOMEM). */
gm_part *gm_part_new(gm_call *k, uint64_t id, uint32_t first, uint32_t njobs,
		     gm_todo *t);

/* The part's request frame is built: it enters the id map. GM_ENOMEM
 * ends the call. */
int gm_part_ready(gm_part *p, gm_todo *t);

/* One of k's open units (a part, or the staging of jobs not yet in
 * one) is over; k ends when none is left. */
void gm_call_open_done(gm_call *k, gm_todo *t);

/* Holds and lets go of a part; the last hold frees it. */
void gm_part_hold(gm_part *p);
void gm_part_drop(gm_part *p);

/* Job index (in the part) answered; the part is done when all are. */
void gm_part_answered(gm_part *p, uint32_t index, gm_todo *t);

/* The part is over: answered whole (a CTRL reply), refused whole (an
 * ERROR: code, msg), lost with its connection (GM_ETRANSPORT ends its
 * call) or dropped before it was written (its call ended). code 0 for
 * the first and the last. */
void gm_part_over(gm_part *p, int code, const char *msg, gm_todo *t);

/* Ends k with rv (and a message naming why, for gemmd_last_error())
 * unless it has ended; see above. */
void gm_call_end(gm_call *k, int rv, const char *msg, gm_todo *t);

/* I/O or a copy on k's memory starts, or is over. */
void gm_call_pin(gm_call *k);
void gm_call_unpin(gm_call *k, gm_todo *t);

/* Tells k's caller and frees k. Without the lock (gm_todo_run). */
void gm_call_tell(gm_call *k);

/* The call's code for its jobs that did not run. */
void gm_call_job_status(gemmd_job *j, int status, const char *msg);

/* Makes a waiter for a call of cl: GM_OK or GM_ENOMEM. */
int gm_call_waiter_init(gm_call_waiter *w, gemmd_client *cl);

/* Frees a waiter whose call never started. */
void gm_call_waiter_drop(gm_call_waiter *w);

/* Blocks until the waiter's call has ended, frees the waiter and returns
 * the call's code, with gemmd_last_error() set when it failed. While it
 * polls, the ends it takes of other calls that have a done callback are
 * told on the timer thread: a callback never runs inside its caller's
 * own call on the library. */
int gm_call_wait(gm_call_waiter *w);

#endif
