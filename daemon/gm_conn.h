/*
 * gm_conn.h - one client connection, and the set of them.
 *
 * A connection reads frames from its byte stream (net/gm_stream.h) in
 * the order PROTOCOL.md 8 checks them, reading no more of a frame than
 * the checks so far allow: the 32-byte header, then a GEMM's head and
 * descriptors, which it hands to gm_admit to be admitted; an admitted
 * request's payload is then read straight into the slab the request
 * gets (gm_request.h), and a CTRL's body into memory bounded by
 * max_ctrl_bytes, handed to gm_ctrl. A refused frame's body is read and
 * discarded. Small frames come in with one greedy read into a 64 KiB
 * buffer, from which a request's first payload bytes are copied.
 *
 * It writes whole frames from its queue (gm_outq.h) in as few sends as
 * it can. It stops reading while it has conn_max_inflight requests in
 * the daemon, while more than conn_max_unsent_bytes wait to be written,
 * or while a request waits for pool room (back-pressure), and it is
 * closed when it misses a deadline (handshake_timeout_ms, stall_timeout_ms,
 * send_timeout_ms), when a frame cannot be read past (an ERROR is sent
 * first), or when the peer goes. A connection that closes takes its
 * queued replies with it; its requests run on, and free their slabs
 * when their last job is back.
 *
 * Threads: the loop owns every connection. Stream callbacks run on
 * nng's threads, or on the loop's own when it polls (gm_loop_spin): a
 * read into a slab or a scratch buffer, or a write,
 * that completed short is resumed right there; only its end is handed
 * to the loop (gm_loop_post). The set caps connections (max_connections,
 * admin_connections past it for admin uids on ipc://, and, counted by
 * gm_peers, max_connections_per_peer and max_connections_anonymous),
 * checks the ipc:// allow-lists, and keeps the deadlines with one timer that
 * runs only while a deadline is pending. Loop thread only.
 */
#ifndef GM_CONN_H
#define GM_CONN_H

#include <stdint.h>

#include "gm_loop.h"
#include "gm_principal.h"
#include "gm_proto.h"
#include "gm_stream.h"

/* The set of connections: its timer and peer table. GM_OK or
 * GM_ENOMEM / GM_EINTERNAL (msg says which). */
int gm_conns_open(gm_loop *l, char *msg, size_t msglen);

/* Closes every connection (their requests keep running), then the
 * set's timer; the rest goes once the loop has run. */
void gm_conns_close(gm_loop *l);

/* Frees the peer table, once the loop has run its last turn and every
 * connection is freed. */
void gm_conns_free(gm_loop *l);

/* Takes a connection just accepted on stream s (ownership passes):
 * refuses it when the allow-lists or a cap say so (one ERROR, closed as
 * soon as it is written; a TLS one closed at once, its handshake not
 * waited for), else starts reading it. Counted either way. settled(l,
 * arg) follows once it is admitted or gone: before this returns, or,
 * for one being sent its refusal, once it is freed; so that the
 * listener can bound what it has taken in and not yet settled. */
void gm_conns_accept(gm_loop *l, gm_stream *s,
		     void (*settled)(gm_loop *l, void *arg), void *arg);

/* Frees what the set itself holds (its peer table), once the loop has
 * run its last turn after gm_conns_close. */
void gm_conns_free(gm_loop *l);

/* Starts the sends of every connection with frames queued since the
 * last call: after a batch of replies, so that they go in few sends. */
void gm_conns_flush(gm_loop *l);

/* Whether no connection is in the middle of a request frame (any of
 * its bytes read, its answer not yet queued) nor has replies waiting to
 * be written: what a stop waits for. A frame that stops coming is
 * ended by its deadline (handshake, stall), kept while the daemon
 * stops. */
int gm_conns_quiet(const gm_loop *l);

/* The stats document's counts (gm_stats.h). */
void gm_conns_counts(const gm_loop *l, gm_stats_conns *out);

/* Requests in the daemon over every connection (read, not yet fully
 * answered; parked waits included). */
uint64_t gm_conns_inflight(const gm_loop *l);

/* ---- one connection ---- */

/* Who is at the other end: read again when its first frame header came,
 * so that a TLS peer's subject is in it from then on. */
const gm_peer *gm_conn_peer(const gm_conn *c);

/* Whom c speaks for (gm_principal.h): set once its first frame header
 * came, so never NULL while a request of c is handled; a caller that
 * keeps it takes a reference. */
gm_principal *gm_conn_principal(const gm_conn *c);

/* What c's principal holds (gm_share.h), set with the principal; a
 * caller that keeps it takes a holder (gm_share_hold). */
gm_share *gm_conn_share(const gm_conn *c);

/* A number for the scheduler's turns, never 0. */
uint32_t gm_conn_id(const gm_conn *c);

/* Whether c still takes frames to send (not closing). */
int gm_conn_alive(const gm_conn *c);

/* References: c is freed once closed and every holder let go. */
void gm_conn_hold(gm_conn *c);
void gm_conn_release(gm_conn *c);

/* A request of c is in the daemon (read, or a parked wait) / was
 * answered: past conn_max_inflight of them c is not read; once fewer,
 * its reading goes on when the loop's turn is over. */
void gm_conn_begin(gm_conn *c);
void gm_conn_end(gm_conn *c);

/* Wakes c: its reading is taken up again (or, closed, the request it
 * was reading is let go) by gm_conns_flush, once the turn of the loop
 * that woke it is over, never from inside the caller. After anything
 * that may let c read on: a request of it answered, its slab granted,
 * bytes written. */
void gm_conn_wake(gm_conn *c);

/* Room for n frames of a request just accepted (so that queueing them
 * never allocates) / room not used. GM_ENOMEM. */
int gm_conn_reserve(gm_conn *c, uint32_t n);
void gm_conn_unreserve(gm_conn *c, uint32_t n);

/* Queues a frame of owner, len bytes at p in its slab, using reserved
 * room: sent at the next gm_conns_flush. On a closing connection it is
 * dropped at once (gm_request_frames_done). seq orders owners, older
 * first. */
void gm_conn_push_frame(gm_conn *c, const uint8_t *p, uint64_t len, void *owner,
			uint64_t seq);

/* Queues a frame of its own (malloc'd; c frees it), sent at the next
 * gm_conns_flush. Dropped (freed) on a closing connection or when out of
 * memory: GM_ECANCELED, GM_ENOMEM. */
int gm_conn_push_heap(gm_conn *c, uint8_t *p, uint64_t len);

/* Answers request id with an ERROR (code, text): the request is refused
 * whole, counted as such. Dropped when c is closing or out of memory
 * (logged; the client's timeout tells it). */
void gm_conn_error(gm_conn *c, uint64_t id, int code, const char *text);

/* Sends one ERROR (id, code, text) and closes c once it is written: a
 * frame c cannot read past. reason: enum gm_conn_drop. */
void gm_conn_fail(gm_conn *c, uint64_t id, int code, const char *text,
		  int reason);

#endif
