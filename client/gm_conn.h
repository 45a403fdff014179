/*
 * gm_conn.h - private to the client library: one connection slot of a
 * daemon, and the byte stream (gm_stream.h) it holds while connected.
 *
 * A slot dials (gm_dialer), holds a stream while it is up, and when the
 * stream fails or closes frees it (on the timer thread: never on one of
 * the stream's own callbacks) and dials again, at once after a stream
 * that carried replies, else after a back-off that doubles from
 * GM_CONN_BACKOFF_MS to GM_CONN_BACKOFF_MAX_MS. It keeps trying for as
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
 * Reader: gm_read.h, on the slot's receive.
 *
 * Everything runs with the client's lock held, except gm_conn_run and
 * the stream's and dialer's callbacks, which take it.
 */
#ifndef GM_CONN_H
#define GM_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "gm_client.h"
#include "gm_read.h"
#include "gm_stream.h"

#define GM_CONN_BACKOFF_MS     100
#define GM_CONN_BACKOFF_MAX_MS 2000

enum gm_conn_state {
	GM_CONN_DOWN,	 /* no stream; a dial is due (dial_ev) */
	GM_CONN_DIALING, /* a dial in flight */
	GM_CONN_UP,	 /* a stream */
	GM_CONN_CLOSING, /* its stream is being closed and freed */
};

struct gm_conn {
	gm_daemon *dm;
	unsigned index;
	gm_dialer *dialer;
	gm_stream *s;
	int state;	      /* enum gm_conn_state */
	bool closed;	      /* CLOSING: gm_stream_close has returned */
	gm_part *head, *tail; /* to write, in order (through next) */
	gm_part *written;     /* written, not over (prev_w/next_w) */
	uint64_t work;	      /* of its parts, written or queued */
	/* the send in flight */
	gm_io wio;
	bool sending;
	unsigned in_calls; /* threads inside a send or receive call on s:
			      its callback may run, and end, before the
			      call returns, so s is not reaped until then */
	gm_part *wparts[GM_IO_IOV_MAX]; /* held for it */
	gm_call *wpins[GM_IO_IOV_MAX];	/* pinned for it */
	unsigned nw;
	/* the receive in flight */
	gm_io rio;
	bool receiving;
	gm_call *rpin;
	gm_reader rd;
	/* what gm_conn_run is to start */
	bool want_dial, want_send, want_recv, want_close, on_run;
	gm_conn *next_run;
	gm_tev dial_ev, reap_ev;
	unsigned backoff_ms;
	bool dial_waiting;	/* dial_ev armed for the back-off */
	unsigned dials;		/* dials that completed, either way */
	unsigned dial_starting; /* threads about to start a dial */
	int refused; /* the daemon refused the connection: its code */
	char why[GM_CLIENT_ERRLEN]; /* why it last failed, "" if never */
};

/* Sets up slot index of dm with a dialer for url (tls for tls+tcp://).
 * Not under the lock. GM_EINVAL or GM_ENOMEM with msg. */
int gm_conn_init(gm_conn *c, gm_daemon *dm, unsigned index, const char *url,
		 const gm_tls_ctx *tls, char *msg, size_t msglen);

/* Dials when down (now, or when the back-off says). */
void gm_conn_dial(gm_conn *c, gm_todo *t);

/* Appends part p (its frame built, id mapped) to c's queue. */
void gm_conn_queue(gm_conn *c, gm_part *p, gm_todo *t);

/* Takes a part that is queued and not written out of its queue. */
void gm_conn_unqueue(gm_part *p);

/* Takes a part out of its connection's written list and its work out
 * of the counts (a part never queued: nothing). */
void gm_conn_unlink(gm_part *p);

/* Ends c's stream because of code and msg (a protocol error, a failed
 * operation, a deadline): every part written on it is lost. */
void gm_conn_fail(gm_conn *c, int code, const char *msg, gm_todo *t);

/* Runs what t was left for c (gm_todo_run). Without the lock. */
void gm_conn_run(gm_conn *c, gm_todo *t);
gm_conn *gm_conn_next_run(gm_conn *c);

/* Adds c to t for gm_conn_run. */
void gm_conn_later(gm_conn *c, gm_todo *t);

/* For gemmd_close, with the client marked closing: stops the dialer,
 * closes the stream and waits until c is down; frees what c holds.
 * Without the lock; the timer thread must still run. */
void gm_conn_shutdown(gm_conn *c);

#endif
