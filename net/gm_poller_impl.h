/*
 * gm_poller_impl.h - between a plain stream (gm_stream.c) and its
 * poller (gm_poller.c). Lock order: the poller's lock, then the
 * stream's; the stream never calls into its poller with its own lock
 * held.
 */
#ifndef GM_POLLER_IMPL_H
#define GM_POLLER_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "gm_poller.h"

/* A stream's place in its poller; all under the poller's lock. */
typedef struct gm_poll_node {
	gm_stream *s;
	struct gm_poll_node *prev, *next; /* the poller's streams */
	struct gm_poll_node *park_next;	  /* parked, or ended by a poll */
	bool parked;			  /* its receive waits for a poll */
	bool closed;			  /* never parks again */
	unsigned busy; /* a poll or a stop is running its receive */
	int nrv;       /* how the polled receive ended: nng's code */
	size_t n;      /* and the bytes it brought */
} gm_poll_node;

/* ---- the poller, for the stream ---- */

/* Puts n, of a stream just made, in p. */
void gm_poller_join(gm_poller *p, gm_poll_node *n);

/* Parks the receive s has just begun, when p is started and has room:
 * true, and a poll or the stop ends it; false: the stream hands it to
 * nng. */
bool gm_poller_park(gm_poller *p, gm_poll_node *n);

/* The stream is closing: it never parks again. Returns whether its
 * receive was parked, which the stream then hands to nng (where the
 * close ends it). */
bool gm_poller_close_node(gm_poller *p, gm_poll_node *n);

/* The stream is being freed: out of p, once no poll or stop runs its
 * receive any more. */
void gm_poller_leave(gm_poller *p, gm_poll_node *n);

/* ---- the stream, for the poller ---- */

/* Tries the parked receive of s once, at once: true when it ended, with
 * nng's code and the bytes it brought. Under the poller's lock. */
bool gm_stream_try_recv(gm_stream *s, int *nrv, size_t *n);

/* Completes the receive of s that a poll ended (its callback, here). */
void gm_stream_polled(gm_stream *s, int nrv, size_t n);

/* Hands the receive of s that was parked to nng. */
void gm_stream_unpark(gm_stream *s);

/* Cancels the receive of s in nng's hands, if one is, for the poller:
 * when the cancellation comes back, the receive parks. Under the
 * poller's lock (nng runs no callback inside the cancel). */
void gm_stream_take_back(gm_stream *s);

#endif
