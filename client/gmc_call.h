/*
 * gmc_call.h - private to the client library: a call and its parts.
 *
 * A call is what a caller started: a GEMM request (blocking or not), a
 * detached one, a control request or a wait. It goes to the daemon as
 * one or more request frames, its parts: one part for most calls; one
 * per connection when a large request is striped (gmc_daemon.h); one per
 * chunk of jobs when plain pointers are staged through shared memory
 * (gmc_stage.h). A part covers a range of the call's jobs and has its own
 * request id; its replies are routed to it by id (gmc_read.h).
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
 * not within GMC_CALL_GRACE_MS its connection is closed.
 *
 * This is the record of calls and parts and their bookkeeping, below
 * the connections that queue and answer parts (README.md): a call is
 * started and timed by gmc_start.h, its caller told by gmc_tell.h. What
 * concerns a staged call is handed up through the client's gmc_staging.
 *
 * Everything here runs with the client's lock held, except gmc_call_new
 * and gmc_call_free.
 */
#ifndef GMC_CALL_H
#define GMC_CALL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gmc_client.h"
#include "gmc_encode.h"
#include "gmc_error.h"

/* How long an ended call waits for I/O in progress on its memory before
 * that connection is closed. */
#define GMC_CALL_GRACE_MS 1000

enum gmc_call_kind {
	GMC_CALL_GEMM,	 /* jobs, each answered by a GEMM_REPLY */
	GMC_CALL_DETACH, /* jobs answered by one CTRL_REPLY of job ids */
	GMC_CALL_CTRL,	 /* JSON answered by a CTRL_REPLY */
	GMC_CALL_WAIT,	 /* JSON answered by a GEMM_REPLY into jobs[0] */
};

/* A blocking caller's rendezvous with the thread that ends its call;
 * after gmc_tell_wait, reply is a control call's JSON (the caller's to
 * free). */
typedef struct gmc_call_waiter {
	gm_poller *poller; /* the client's, which the wait polls */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rv;
	char *reply;
	char msg[GMC_ERRLEN];
} gmc_call_waiter;

/* Who hears of a call's end: a waiter (w), or done(arg, rv). */
typedef struct gmc_call_notify {
	gemmd_done_fn done;
	void *arg;
	gmc_call_waiter *w;
} gmc_call_notify;

struct gmc_stage_call;

struct gmc_call {
	gemmd_client *cl;
	int kind; /* enum gmc_call_kind */
	gemmd_job *jobs;
	uint32_t njobs;
	uint64_t *ids;	/* DETACH: where the job ids go */
	bool alloc_out; /* WAIT for a job without out: allocate it */
	char *reply;	/* CTRL: the JSON document */
	gmc_call_notify nt;
	int timeout_ms;
	uint64_t start;		 /* gmc_timer_now() */
	gmc_tev deadline, grace; /* set by gmc_start.h */
	uint8_t *settled;	 /* per job: its outcome is in jobs[] */
	bool tell_queued;
	gmc_daemon *dm;	   /* where its parts go */
	gmc_part *parts;   /* through gmc_part.next_of_call */
	unsigned open;	   /* parts (and chunks) not resolved */
	unsigned accepted; /* parts the daemon answered */
	int refusal;	   /* the first part refused whole */
	char refusal_msg[GM_MSG_TEXT + 1];
	bool ended;
	int rv;
	int pins; /* I/O and copies in progress on the caller's memory */
	char msg[GMC_ERRLEN];
	struct gmc_stage_call *stage;	 /* staged through shared memory */
	gmc_call *next_call, *prev_call; /* the client's, while not ended */
	gmc_call *next_tell;
};

enum gmc_part_state {
	GMC_PART_NEW,	  /* not in a queue yet (a chunk being staged) */
	GMC_PART_QUEUED,  /* in its connection's queue, nothing written */
	GMC_PART_WRITING, /* some of it written, the rest queued */
	GMC_PART_SENT,	  /* all written, replies awaited */
	GMC_PART_DONE,	  /* answered, refused, lost or dropped */
};

struct gmc_part {
	gemmd_client *cl;
	gmc_call *call;	     /* NULL once the call ended: a zombie */
	gmc_conn *conn;	     /* where it is queued or was written */
	struct gmc_partq *q; /* that connection's parts */
	uint64_t id;
	uint32_t first, njobs; /* the call's jobs [first, first + njobs) */
	uint32_t left;	       /* jobs not answered */
	uint8_t *answered;     /* per job */
	gmc_frame f;
	unsigned seg;	/* the next byte to write: f.segs[seg] */
	size_t seg_off; /* at this offset */
	int state;	/* enum gmc_part_state */
	bool queued;	/* in its connection's queue */
	bool written;	/* a byte of it went out */
	bool refused;	/* over by an ERROR: nothing of it ran */
	int refs;
	uint64_t work; /* what it adds to its daemon's outstanding work */
	struct gmc_chunk *chunk;   /* staged: its space in the region */
	gmc_part *next_of_call;	   /* the call's parts */
	gmc_part *prev, *next;	   /* its connection's queue */
	gmc_part *prev_w, *next_w; /* its connection's written parts */
};

/* A connection's parts: those to write, in order (head to tail through
 * prev/next), and those written and not over (through prev_w/next_w);
 * the work they add, counted here and in *total (their daemon's). */
typedef struct gmc_partq {
	gmc_part *head, *tail;
	gmc_part *written;
	uint64_t work;
	uint64_t *total;
} gmc_partq;

/* What the layers below the staging of plain pointers (gmc_stage.h) tell
 * it of the calls it took (k->stage) and their parts (p->chunk). */
typedef struct gmc_staging {
	/* Job index of p is answered by r (status 0: its result is in the
	 * region, copied out before the job is answered). */
	void (*replied)(gmc_part *p, uint32_t index, const gm_reply_job *r,
			gmc_todo *t);
	/* p is over (answered, refused, lost or dropped). */
	void (*part_over)(gmc_part *p, gmc_todo *t);
	/* k ended. */
	void (*call_end)(gmc_call *k, gmc_todo *t);
} gmc_staging;

/* Makes a call of kind told to nt, with timeout_ms (GEMMD_FOREVER: none)
 * counting from now; its deadline and grace are gmc_start_new's to set.
 * Not under the lock. GM_ENOMEM. */
int gmc_call_new(gemmd_client *cl, int kind, int timeout_ms,
		 const gmc_call_notify *nt, gmc_call **out);

/* Frees a call that was never started, or that was told. */
void gmc_call_free(gmc_call *k);

/* A fresh request id (any thread, no lock: frames are built with it
 * before their part is made). */
uint64_t gmc_call_next_id(gemmd_client *cl);

/* Makes a part of k for jobs [first, first + njobs) under request id;
 * its frame is the caller's to build. Counts in k->open. NULL: no
 * memory (the call is ended with GM_ENOMEM). */
gmc_part *gmc_part_new(gmc_call *k, uint64_t id, uint32_t first, uint32_t njobs,
		       gmc_todo *t);

/* The part's request frame is built: it enters the id map. GM_ENOMEM
 * ends the call. */
int gmc_part_ready(gmc_part *p, gmc_todo *t);

/* Appends p to q (to write), held by the queue, its work counted. */
void gmc_part_enqueue(gmc_partq *q, gmc_part *p);

/* Takes a part that is queued out of its queue (its work stays
 * counted); a part not queued: nothing. */
void gmc_part_dequeue(gmc_part *p);

/* A queued part's first byte goes out: it joins its queue's written
 * parts (once). */
void gmc_part_mark_written(gmc_part *p);

/* Takes a part out of its queue's written parts and its work out of the
 * counts (a part never queued: nothing). */
void gmc_part_unlink(gmc_part *p);

/* One of k's open units (a part, or the staging of jobs not yet in
 * one) is over; k ends when none is left. */
void gmc_call_open_done(gmc_call *k, gmc_todo *t);

/* Holds and lets go of a part; the last hold frees it. */
void gmc_part_hold(gmc_part *p);
void gmc_part_drop(gmc_part *p);

/* Job index (in the part) answered; the part is done when all are. */
void gmc_part_answered(gmc_part *p, uint32_t index, gmc_todo *t);

/* The part is over: answered whole (a CTRL reply), refused whole (an
 * ERROR: code, msg), lost with its connection (GM_ETRANSPORT ends its
 * call) or dropped before it was written (its call ended). code 0 for
 * the first and the last. */
void gmc_part_over(gmc_part *p, int code, const char *msg, gmc_todo *t);

/* Ends k with rv (and a message naming why, for gemmd_last_error())
 * unless it has ended; see above. Its caller is told through t once no
 * I/O is on its memory, else its grace timer is armed. */
void gmc_call_end(gmc_call *k, int rv, const char *msg, gmc_todo *t);

/* I/O or a copy on k's memory starts, or is over. */
void gmc_call_pin(gmc_call *k);
void gmc_call_unpin(gmc_call *k, gmc_todo *t);

/* The call's code for its jobs that did not run. */
void gmc_call_job_status(gemmd_job *j, int status, const char *msg);

#endif
