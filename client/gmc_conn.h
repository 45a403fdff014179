/*
 * gmc_conn.h - private to the client library: one connection slot of a
 * daemon, and the byte stream (gm_stream.h) it holds while connected.
 *
 * A slot dials (gm_dialer), holds a stream while it is up, and when the
 * stream fails or closes frees it (on the timer thread: never on one of
 * the stream's own callbacks) and dials again, at once after a stream
 * that carried replies, else after a back-off that doubles from
 * GMC_CONN_BACKOFF_MS to GMC_CONN_BACKOFF_MAX_MS. It keeps trying for as
 * long as the client is open, so that requests find it up.
 *
 * Writer: the slot keeps a queue of parts (request frames) to write in
 * order; one send at a time takes up to GM_IO_IOV_MAX pieces from the
 * head of the queue, across frames, straight from the built parts and
 * the caller's operands. A part is written once a send takes its first
 * piece (its bytes may be out before the send's callback says so, and
 * its replies may come before it too): it is never written again. When the
 * stream drops, every part written on it is lost (GM_ETRANSPORT, or the
 * daemon's refusal when it refused the connection itself); parts not yet
 * written stay queued for the next stream, or move to another slot of the
 * daemon that is up. A dial that fails fails the parts queued on the
 * slot with GM_ETRANSPORT, unless the client was opened GEMMD_OPEN_LAZY
 * (then they wait for a dial that succeeds, within their timeout): a
 * daemon that died is seen at once, and a part queued on a slot waiting
 * out its back-off dials it at once.
 *
 * Reader: gmc_read.h, on the slot's receive.
 *
 * Slots the caller did not ask for (gemmd_open_opts.connections 0 over
 * TCP) are on demand: dialed when a striped request queues a part on
 * them, and left down, not redialed, when their dial fails or their
 * stream ends with nothing queued on them.
 *
 * A slot knows its daemon only as the slots it is one of (gmc_slots,
 * which gmc_daemon.h embeds): the first that is up with the least work
 * takes a new part, and the parts not written move there when a slot's
 * stream drops or its dial fails.
 *
 * Everything runs with the client's lock held, except gmc_conn_run,
 * gmc_todo_run and the stream's and dialer's callbacks, which take it.
 */
#ifndef GMC_CONN_H
#define GMC_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "gm_stream.h"
#include "gm_tls.h"
#include "gmc_call.h"
#include "gmc_client.h"
#include "gmc_read.h"

#define GMC_CONN_BACKOFF_MS	100
#define GMC_CONN_BACKOFF_MAX_MS 2000
#define GMC_CONN_SLOTS_MAX	64 /* slots of a daemon */

/* A daemon's slots, and what they share of it. */
typedef struct gmc_slots {
	gemmd_client *cl;
	gmc_conn *conns;
	unsigned n;
	uint64_t work;	    /* of its parts queued and in flight */
	bool stopping;	    /* no more dials; streams freed as they close */
	bool lazy;	    /* GEMMD_OPEN_LAZY: requests wait for a dial to
			       succeed; else a failed dial fails those waiting */
	unsigned on_demand; /* slots from this index on are dialed only
			       when a part is queued on them: a slot of
			       these is not redialed with nothing queued */
} gmc_slots;

enum gmc_conn_state {
	GMC_CONN_DOWN,	  /* no stream; a dial is due (dial_ev) */
	GMC_CONN_DIALING, /* a dial in flight */
	GMC_CONN_UP,	  /* a stream */
	GMC_CONN_CLOSING, /* its stream is being closed and freed */
};

struct gmc_conn {
	gmc_slots *sl; /* its daemon's */
	unsigned index;
	gm_dialer *dialer;
	gm_stream *s;
	int state;   /* enum gmc_conn_state */
	bool closed; /* CLOSING: gm_stream_close has returned */
	gmc_partq q; /* its parts: to write, and written */
	/* the send in flight */
	gm_io wio;
	bool sending;
	unsigned in_calls; /* threads inside a send or receive call on s:
			      its callback may run, and end, before the
			      call returns, so s is not reaped until then */
	gmc_part *wparts[GM_IO_IOV_MAX]; /* held for it */
	gmc_call *wpins[GM_IO_IOV_MAX];	 /* pinned for it */
	unsigned nw;
	/* the receive in flight */
	gm_io rio;
	bool receiving;
	gmc_call *rpin;
	gmc_reader rd;
	/* what gmc_conn_run is to start */
	bool want_dial, want_send, want_recv, want_close, on_run;
	gmc_conn *next_run;
	gmc_tev dial_ev, reap_ev;
	unsigned backoff_ms;
	bool dial_waiting;	/* dial_ev armed for the back-off */
	unsigned dials;		/* dials that completed, either way */
	unsigned dial_starting; /* threads about to start a dial */
	int refused;	      /* the daemon refused the connection: its code */
	char why[GMC_ERRLEN]; /* why it last failed, "" if never */
};

/* Sets up slot index of sl with a dialer for url (tls for tls+tcp://).
 * Not under the lock. GM_EINVAL or GM_ENOMEM with msg. */
int gmc_conn_init(gmc_conn *c, gmc_slots *sl, unsigned index, const char *url,
		  const gm_tls_ctx *tls, char *msg, size_t msglen);

/* Dials when down (now, or when the back-off says). */
void gmc_conn_dial(gmc_conn *c, gmc_todo *t);

/* Appends part p (its frame built, id mapped) to c's queue. */
void gmc_conn_queue(gmc_conn *c, gmc_part *p, gmc_todo *t);

/* Ends c's stream because of code and msg (a protocol error, a failed
 * operation, a deadline): every part written on it is lost. */
void gmc_conn_fail(gmc_conn *c, int code, const char *msg, gmc_todo *t);

/* Fills order[] with sl's slot indexes by preference: up before not,
 * then least work; returns how many. */
unsigned gmc_conn_order(const gmc_slots *sl, unsigned *order);

/* The slot of sl a new part goes to. */
gmc_conn *gmc_conn_pick(gmc_slots *sl);

/* Runs what t was left for c (gmc_todo_run). Without the lock. */
void gmc_conn_run(gmc_conn *c, gmc_todo *t);

/* Adds c to t for gmc_conn_run. */
void gmc_conn_later(gmc_conn *c, gmc_todo *t);

/* Runs t: tells callers whose calls ended (gmc_tell.h), then starts
 * connections' I/O and closes streams. Not with the lock held. */
void gmc_todo_run(gmc_todo *t);

/* For gemmd_close, with the client marked closing: stops the dialer,
 * closes the stream and waits until c is down; frees what c holds.
 * Without the lock; the timer thread must still run. */
void gmc_conn_shutdown(gmc_conn *c);

#endif
