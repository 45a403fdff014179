/*
 * gm_stream_impl.h - private to net/: a stream's insides, for the files
 * that make its kinds. gm_stream.c holds what every stream has and runs
 * plain streams; gm_stream_tls.c runs TLS streams; gm_poller.c runs the
 * plain streams in a poller and reads ahead for the listener. The
 * public calls of gm_stream.h go through the stream's ops, so that
 * gm_stream.c calls none of those files and they all build on it.
 */
#ifndef GM_STREAM_IMPL_H
#define GM_STREAM_IMPL_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_stream.h"

/* What a plain stream accepted by a listener reads ahead (gm_poller.c
 * says why): a frame header and a small request. */
#define GM_STREAM_AHEAD_BYTES 256

/* What a kind of stream does for the calls of gm_stream.h. */
struct gm_stream_ops {
	void (*recv)(gm_stream *s, gm_io *io);
	void (*send)(gm_stream *s, gm_io *io);
	/* The whole of gm_stream_close. */
	void (*close)(gm_stream *s);
	/* Plain streams, NULL for none: raio's receive ended; true when
	 * it ended only to be taken back (gm_poller.c), and so must not
	 * complete the user's receive. */
	bool (*taken_back)(gm_stream *s);
	/* NULL for none: gm_stream_free, once closed, before the aios
	 * stop. */
	void (*leave)(gm_stream *s);
};

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

struct gm_stream {
	const struct gm_stream_ops *ops;
	nng_stream *ns;
	int kind; /* enum gm_url_kind */
	nng_aio *raio, *waio;
	gm_io *rio, *wio; /* user operations in flight */
	gm_peer peer;
	char err_text[256];
	bool closed; /* under mu: gm_stream_close was called */

	pthread_mutex_t mu;
	/* TLS only; all under mu. */
	SSL *ssl;
	uint8_t *rbuf; /* ciphertext received: [roff, roff + rlen) */
	size_t roff, rlen;
	uint8_t *wbuf; /* ciphertext to send: [woff, wlen) */
	size_t woff, wlen;
	bool rraw, wraw; /* a socket operation in flight */
	bool reof;	 /* the socket gave its last byte */
	bool handshaken;
	bool shut; /* the socket was closed after a failure */
	bool dispatching, again;
	size_t wtaken; /* plaintext of wio encrypted so far */
	int err;       /* sticky: why the stream failed */

	/* Plain streams accepted by a listener: what the read ahead
	 * brought, under mu. */
	bool ahead;    /* [ahead_off, ahead_len) or ahead_nrv not yet handed
			  over */
	bool handing;  /* raio completes the hand-over of hand_n bytes (or
			  hand_nrv) to rio */
	int ahead_nrv; /* nng's code: how the read ahead ended */
	int hand_nrv;  /* what the hand-over completes with */
	size_t ahead_off, ahead_len, hand_n;
	uint8_t ahead_buf[GM_STREAM_AHEAD_BYTES];

	/* Plain streams in a poller (gm_poller.h). */
	struct gm_poller *poller;
	gm_poll_node pnode;
	nng_aio *paio; /* a poll's try, which has no callback */
	nng_aio *taio; /* a send's try (gm_stream_try_send), likewise */
	bool rarmed;   /* under mu: raio holds a receive in nng */
	bool pulling;  /* under mu: it is being taken back for the poller */
};

/* A stream of kind over ns (taken, also on failure) with the given ops
 * and raio/waio callbacks (arg: the stream), its peer read. GM_OK or
 * GM_ENOMEM. */
int gm_stream_alloc(nng_stream *ns, int kind, const struct gm_stream_ops *ops,
		    void (*rcb)(void *), void (*wcb)(void *), gm_stream **out);

/* A plain stream of kind (not GM_URL_TLS) over ns, taken also on
 * failure. GM_OK or GM_ENOMEM. */
int gm_stream_plain_new(nng_stream *ns, int kind, gm_stream **out);

/* Frees what s holds and s, its aios stopped or never started. */
void gm_stream_free_parts(gm_stream *s);

/* Keeps the first reason the stream failed: what, and nng's text for
 * nng_rv when not 0. */
void gm_stream_set_error(gm_stream *s, const char *what, int nng_rv);

/* Completes the plain operation in *slot as nng ended it. */
void gm_stream_end(gm_stream *s, gm_io **slot, int nrv, size_t n);

/* Whether the receive io was completed by what the read ahead holds
 * (as raio's completion, later); false: it reads from the socket. */
bool gm_stream_hand_ahead(gm_stream *s, gm_io *io);

/* Hands rio to nng, as a plain stream's receive. */
void gm_stream_arm_recv(gm_stream *s);

/* A plain stream's send (its ops'). */
void gm_stream_plain_send(gm_stream *s, gm_io *io);

/* Marks s closed, under mu: operations started from now on abort. */
void gm_stream_mark_closed(gm_stream *s);

#endif
