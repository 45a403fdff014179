/*
 * gm_conn_impl.h - private to gm_conn.c (a connection's life and its
 * writes), gm_conn_read.c (the frames it reads) and gm_conn_set.c (the
 * set of connections, its caps and deadlines): the connection record
 * and what the three files call of each other, in one direction only:
 * the set calls the reader, both call gm_conn.c, which calls neither.
 * What gm_conn.c has to tell the reader (bytes written, a request
 * answered, the stream closed) it tells by waking it (gm_conn_wake).
 *
 * Ownership of the fields, since I/O completes on nng's threads: those
 * marked "rd" belong to the receive in flight while rd_busy, those
 * marked "wr" to the send in flight while wr_busy; everything else, and
 * those when no operation is in flight, to the loop.
 */
#ifndef GM_CONN_IMPL_H
#define GM_CONN_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "gm_loop.h"
#include "gm_outq.h"
#include "gm_peers.h"
#include "gm_principal.h"
#include "gm_proto.h"
#include "gm_stream.h"

/* The buffer a connection reads frames into: one greedy read takes a
 * batch of small requests whole. mmap'd, so that an idle connection's
 * pages cost nothing and a closed one's go back to the system. */
#define GM_CONN_RBUF (64u << 10)

/* After a closing ERROR, how long the daemon reads and discards what the
 * client still sends before it closes: closing with unread bytes makes
 * TCP reset the connection, and the ERROR could be lost with it. */
#define GM_CONN_LINGER_MS    500
#define GM_CONN_LINGER_BYTES (1u << 20)

enum gm_conn_rstate {
	RS_HDR,	    /* waiting for a frame header */
	RS_BODY,    /* a GEMM's head, then descriptors, or a CTRL's body */
	RS_WAIT,    /* a request admitted, waiting for pool room */
	RS_PAYLOAD, /* its payload, into its slab */
	RS_DISCARD, /* the rest of a refused frame */
	RS_V1,	    /* a version-1 client's handshake and first request */
	RS_LINGER,  /* after a closing ERROR: discarding until the end */
};

/* What the receive in flight reads into. */
enum gm_conn_rmode {
	RM_BUF,	    /* greedily into rbuf */
	RM_EXACT,   /* exactly rd_left bytes at rd_dst (a slab, big) */
	RM_DISCARD, /* exactly rd_left bytes, into rbuf as scratch */
};

enum gm_conn_body {
	BODY_HEAD, /* GEMM head: batch and job headers */
	BODY_DESC, /* GEMM region descriptors, after the head */
	BODY_CTRL, /* CTRL JSON */
};

struct gm_conn {
	gm_loop *l;
	gm_stream *s;
	gm_peer peer;		 /* as of its first frame header */
	gm_principal *principal; /* from its first frame header on */
	gm_share *share;	 /* its principal's, from then on */
	char peer_key[GM_PEER_KEY];
	uint32_t id;
	unsigned refs;	  /* holders: requests, parked waits */
	bool admitted;	  /* counted in the caps (not a refused one) */
	bool closing;	  /* stream closed or closing: nothing more read */
	bool close_after; /* close once the queue is written: a fail */
	double born_us;
	/* Refused, until freed: what gm_conns_accept was given. */
	void (*settled)(gm_loop *l, void *arg);
	void *settled_arg;
	gm_conn *next, *prev; /* the set */
	gm_conn *flush_next;  /* on the flush list */
	bool on_flush;
	gm_conn *wake_next; /* on the wake list, holding a reference */
	bool on_wake;

	/* Read side. */
	int rs;	       /* enum gm_conn_rstate */
	bool got_hdr;  /* a first whole frame header came */
	uint8_t *rbuf; /* GM_CONN_RBUF bytes; [roff, rlen) unread */
	size_t roff, rlen;
	gm_hdr h;	   /* the frame being read */
	gm_batch b;	   /* its batch header, once the head is checked */
	int body;	   /* enum gm_conn_body */
	uint64_t need;	   /* RS_BODY: body bytes wanted contiguous */
	uint64_t head_len; /* RS_BODY after the head: its bytes */
	uint8_t *big;	   /* a body part over GM_CONN_RBUF, else NULL */
	uint64_t big_have;
	uint64_t left; /* RS_PAYLOAD, RS_DISCARD: bytes still to come */
	uint8_t *dst;  /* RS_PAYLOAD: where they go */
	struct gm_request *owner; /* RS_WAIT, RS_PAYLOAD: the request */
	uint64_t payload;	  /* the bytes of the payload accepted last */
	uint64_t linger_left;	  /* RS_LINGER: bytes still discarded */
	double linger_until;
	int v1_phase;	   /* RS_V1: hello, framing, request */
	uint64_t v1_len;   /* RS_V1: the request's body length */
	unsigned inflight; /* requests in the daemon */
	double want_since; /* when it last began waiting for bytes */
	double pay_since;  /* RS_PAYLOAD: when its reading began */
	uint64_t pay_mark; /* RS_PAYLOAD: rd_count when its receive began */
	bool pay_cut;	   /* RS_PAYLOAD: too slow, refused; closing */
	gm_io rio;
	gm_event rd_ev;
	bool rd_busy;
	int rd_mode;		     /* rd: enum gm_conn_rmode */
	uint64_t rd_left;	     /* rd: RM_EXACT, RM_DISCARD */
	uint64_t rd_total;	     /* RM_EXACT, RM_DISCARD: bytes asked for */
	size_t rd_got;		     /* rd: RM_BUF */
	int rd_rv;		     /* rd */
	_Atomic uint64_t rd_last_us; /* rd writes, loop reads: progress */
	_Atomic uint64_t rd_count;   /* rd writes, loop reads: bytes ever */

	/* Write side. */
	gm_outq q;
	gm_io wio;
	gm_event wr_ev;
	bool wr_busy;
	int wr_rv;		     /* wr */
	double send_since;	     /* when the send in flight started */
	_Atomic uint64_t wr_last_us; /* wr writes, loop reads: progress */
};

/* ---- gm_conn_read.c ---- */

/* Reads and handles frames until it must wait (bytes, the pool, the
 * inflight or unsent caps) or c closes; closed, lets go of the request
 * it was reading. Called by the set (a connection admitted, or woken)
 * and at the end of a receive, never from inside a step. */
void gm_conn_read_process(gm_conn *c);

/* The loop's end of a receive: its bytes handled, then read_process. */
void gm_conn_read_done(gm_event *ev, gm_loop *l);

/* Whether c waits for bytes of a frame it began: the stall deadline
 * applies. */
bool gm_conn_read_mid_frame(const gm_conn *c);

/* The payload rate deadline (payload_min_rate after payload_grace_ms):
 * a payload that comes too slowly by now is refused ETIMEDOUT and c
 * closed once that is written, or after GM_CONN_LINGER_MS. Returns
 * true when it closed c. */
bool gm_conn_read_check_rate(gm_conn *c, double now);

/* ---- gm_conn.c ---- */

/* Microseconds on the monotonic clock, as the I/O callbacks stamp. */
uint64_t gm_conn_now_us(void);

/* A record for stream s (not yet admitted), in the set; NULL when out
 * of memory. Its queue tells frames_done (arg c) of the frames of a
 * request that are gone. */
gm_conn *gm_conn_new(gm_loop *l, gm_stream *s, gm_outq_done_fn frames_done);

/* Sends one ERROR (id 0, code, text) to c, refused as it came, and
 * closes it as soon as that is written; nothing of c is read. */
void gm_conn_refuse(gm_conn *c, int code, const char *text);

/* Closes c: its stream, its queue; counts reason (enum gm_conn_drop,
 * or -1 for the peer's own doing). */
void gm_conn_close(gm_conn *c, int reason);

/* Starts a send of what c queued, unless one is in flight. */
void gm_conn_send(gm_conn *c);

/* Frees c if it is closed, idle and let go. */
void gm_conn_maybe_free(gm_conn *c);

/* Starts the deadline timer (opened by gm_conns_open) if it is not
 * running. */
void gm_conn_arm_deadlines(gm_conn *c);

/* Whether c may read more frames now: not over conn_max_inflight nor
 * conn_max_unsent_bytes. */
bool gm_conn_may_read(const gm_conn *c);

#endif
