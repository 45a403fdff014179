/*
 * gm_call.h - private to the client library: one request in flight, a
 * small state machine as in nng's demo/async programs.
 *
 * A call is a slot of its client: an nng context and an aio, taken from
 * the client's free list or made, given a fresh request id, and walked
 * SEND -> RECV -> done in the aio's callback, on an nng thread. Whoever
 * started it hears of its end once: a blocking caller through a waiter
 * (a condition variable the callback signals), an asynchronous one
 * through its done callback. The reply is read into what the call was
 * started for: the jobs' statuses, timings and results, a detached
 * request's ids, or a control reply's JSON. Slots are reused and freed
 * only by gm_call_close_all, so a callback never frees the aio it runs
 * on. Any thread, unless a prototype says otherwise.
 */
#ifndef GM_CALL_H
#define GM_CALL_H

#include <nng/nng.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gm_client.h"

typedef struct gm_call gm_call;

/* A blocking caller's rendezvous with the callback that ends its call;
 * after gm_call_wait, reply is a control call's JSON (the caller's to
 * free). */
typedef struct gm_call_waiter {
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

/* What a call's reply is read into. */
typedef struct gm_call_want {
	gemmd_job *jobs; /* NULL for a control request */
	uint32_t njobs;
	uint64_t *ids;	/* a detached request: where the job ids go */
	bool wait;	/* a wait: a control request a GEMM_REPLY answers */
	bool alloc_out; /* a wait for a job without out: allocate it */
} gm_call_want;

/* Takes a free call of cl, or makes one, with a fresh request id.
 * GM_ECANCELED once cl is closing, else as nng; gemmd_last_error() says
 * why. */
int gm_call_get(gemmd_client *cl, gm_call **out);

/* The request id the call's request must carry. */
uint64_t gm_call_id(const gm_call *k);

/* Gives back a call that was never started. */
void gm_call_put(gm_call *k);

/*
 * Sends msg (the call owns it from now on), reads the reply into want
 * and tells nt, within timeout_ms in all (GEMMD_FOREVER: no limit). On
 * failure each job of want gets the code and message as its status.
 * The call goes back to the free list once nt has heard of its end.
 */
void gm_call_start(gm_call *k, nng_msg *msg, int timeout_ms,
		   const gm_call_want *want, const gm_call_notify *nt);

/* Marks cl closing (no call is made after), cancels every call in flight
 * (they end with GM_ECANCELED) and frees every call. Blocks until their
 * callbacks are done; not on an nng thread. */
void gm_call_close_all(gemmd_client *cl);

/* Sets j's status and message (what fits; a longer detail stays in
 * gemmd_last_error()). */
void gm_call_job_status(gemmd_job *j, int status, const char *msg);

/* Makes a waiter: GM_OK or GM_ENOMEM. */
int gm_call_waiter_init(gm_call_waiter *w);

/* Frees a waiter whose call never started. */
void gm_call_waiter_drop(gm_call_waiter *w);

/* Blocks until the waiter's call has ended, frees the waiter and returns
 * the call's code, with gemmd_last_error() set when it failed. */
int gm_call_wait(gm_call_waiter *w);

#endif
