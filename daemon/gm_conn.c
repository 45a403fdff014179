/*
 * gm_conn.c - a connection's life and its writes, and the counts of
 * the set that the stats read; see gm_conn.h. Reading frames is
 * gm_conn_read.c's, the set of connections with its caps and deadlines
 * gm_conn_set.c's; this file calls neither (gm_conn_impl.h).
 *
 * A connection is freed once it is closed, no operation of its stream
 * is in flight (their ends come to the loop as events) and nobody holds
 * it: the requests it brought keep it, closed, until they are done.
 */
#include "gm_conn.h"
#include "gm_conn_impl.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gm_clock.h"
#include "gm_log.h"

#define CONN_OF(ev, member) \
	((gm_conn *)(void *)((char *)(ev)-offsetof(gm_conn, member)))

uint64_t gm_conn_now_us(void)
{
	return (uint64_t)gm_clock_now_us();
}

static void rd_cb(gm_io *io, int rv, size_t n);
static void wr_cb(gm_io *io, int rv, size_t n);
static void wr_done(gm_event *ev, gm_loop *l);

gm_conn *gm_conn_new(gm_loop *l, gm_stream *s, gm_outq_done_fn frames_done)
{
	gm_conns *cs = &l->conns;
	gm_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->rbuf = mmap(NULL, GM_CONN_RBUF, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->rbuf == MAP_FAILED) {
		free(c);
		return NULL;
	}
	c->l = l;
	c->s = s;
	gm_stream_peer(s, &c->peer);
	gm_peers_key(&c->peer, c->peer_key);
	if (++cs->next_id == 0)
		cs->next_id = 1;
	c->id = cs->next_id;
	c->born_us = gm_clock_now_us();
	c->rs = RS_HDR;
	gm_outq_init(&c->q, frames_done, c);
	c->rio = (gm_io){.done = rd_cb, .arg = c};
	c->wio = (gm_io){.done = wr_cb, .arg = c};
	c->wr_ev.fn = wr_done;
	c->next = cs->head;
	if (cs->head != NULL)
		cs->head->prev = c;
	cs->head = c;
	return c;
}

/* ---- one connection ---- */

const gm_peer *gm_conn_peer(const gm_conn *c)
{
	return &c->peer;
}

gm_principal *gm_conn_principal(const gm_conn *c)
{
	return c->principal;
}

gm_share *gm_conn_share(const gm_conn *c)
{
	return c->share;
}

uint32_t gm_conn_id(const gm_conn *c)
{
	return c->id;
}

int gm_conn_alive(const gm_conn *c)
{
	return !c->closing;
}

void gm_conn_hold(gm_conn *c)
{
	c->refs++;
}

void gm_conn_release(gm_conn *c)
{
	c->refs--;
	gm_conn_maybe_free(c);
}

bool gm_conn_may_read(const gm_conn *c)
{
	const gm_config *cfg = c->l->cfg;

	/* Replies are written from slabs, in the pool or pageable memory:
	 * a principal's unsent bytes are held to its share of both. */
	return c->inflight < cfg->conn_inflight &&
	       c->q.bytes <= cfg->conn_unsent_bytes &&
	       (c->share == NULL ||
		c->share->unsent <= gm_share_cap(gm_pool_size(c->l->pool) +
						     c->l->stats.pageable.limit,
						 cfg->principal_share_pct));
}

void gm_conn_begin(gm_conn *c)
{
	c->inflight++;
}

void gm_conn_end(gm_conn *c)
{
	c->inflight--;
	gm_conn_wake(c);
}

int gm_conn_reserve(gm_conn *c, uint32_t n)
{
	return gm_outq_reserve(&c->q, n);
}

void gm_conn_unreserve(gm_conn *c, uint32_t n)
{
	gm_outq_unreserve(&c->q, n);
}

void gm_conn_wake(gm_conn *c)
{
	gm_conns *cs = &c->l->conns;

	if (c->on_wake)
		return;
	c->on_wake = true;
	c->refs++;
	c->wake_next = cs->wake;
	cs->wake = c;
}

void gm_conn_arm_deadlines(gm_conn *c)
{
	gm_conns *cs = &c->l->conns;

	if (cs->timer_on)
		return;
	cs->timer_on = 1;
	/* As gm_conns_open started it: its callback is the set's. */
	uv_timer_again(&cs->timer);
}

/* Puts c on the list of connections to send from. */
static void want_send(gm_conn *c)
{
	gm_conns *cs = &c->l->conns;

	if (c->on_flush)
		return;
	c->on_flush = true;
	c->flush_next = cs->flush;
	cs->flush = c;
}

void gm_conn_push_frame(gm_conn *c, const uint8_t *p, uint64_t len, void *owner,
			uint64_t seq)
{
	if (c->closing) {
		gm_outq_forgo(&c->q, owner);
		return;
	}
	gm_outq_push(&c->q, p, len, owner, seq);
	want_send(c);
}

int gm_conn_push_heap(gm_conn *c, uint8_t *p, uint64_t len)
{
	int rv;

	if (c->closing) {
		free(p);
		return GM_ECANCELED;
	}
	if ((rv = gm_outq_push_heap(&c->q, p, len, c->l->next_seq++)) != 0)
		return rv;
	want_send(c);
	return GM_OK;
}

void gm_conn_error(gm_conn *c, uint64_t id, int code, const char *text)
{
	gm_loop *l = c->l;
	uint8_t *p = malloc(GM_HDR_SIZE + GM_ERROR_SIZE);

	l->stats.requests_refused++;
	l->stats.errors[code]++;
	/* Refusals for the daemon's state (busy, draining, stopping) come
	 * in storms and are counted in the stats; the others say a request
	 * cannot be served as it is. */
	GM_LOG(code == GM_EBUSY || code == GM_EDRAINING || code == GM_ESHUTDOWN
		   ? GM_LOG_DEBUG
		   : GM_LOG_INFO,
	       "request %" PRIu64 " refused: %s: %s", id, gm_errname(code),
	       text);
	if (p == NULL) {
		GM_LOG(GM_LOG_ERROR,
		       "request %" PRIu64 ": out of memory for its ERROR", id);
		return;
	}
	gm_proto_put_error(p, id, (uint32_t)code, text);
	if (gm_conn_push_heap(c, p, GM_HDR_SIZE + GM_ERROR_SIZE) == GM_ENOMEM)
		GM_LOG(GM_LOG_ERROR,
		       "request %" PRIu64 ": out of memory for its ERROR", id);
}

/* Sends one ERROR and closes c once it is written, after discarding up
 * to linger_bytes of what the client still sends (for at most
 * GM_CONN_LINGER_MS). */
static void fail_linger(gm_conn *c, uint64_t id, int code, const char *text,
			uint64_t linger_bytes)
{
	gm_conn_error(c, id, code, text);
	c->close_after = true;
	c->rs = RS_LINGER;
	c->linger_until = gm_clock_now_us() +
			  (linger_bytes != 0 ? GM_CONN_LINGER_MS * 1e3 : 0);
	c->linger_left = linger_bytes;
	gm_conn_arm_deadlines(c);
	gm_conn_wake(c);
}

void gm_conn_fail(gm_conn *c, uint64_t id, int code, const char *text,
		  int reason)
{
	gm_conns *cs = &c->l->conns;

	if (c->closing)
		return;
	if (reason >= 0) {
		cs->n.dropped++;
		cs->n.dropped_by[reason]++;
	}
	fail_linger(c, id, code, text, GM_CONN_LINGER_BYTES);
}

/* No linger: unread bytes make TCP reset the connection, but Linux
 * still hands the client what was sent before the reset, and a linger
 * would let a storm of refused clients hold a descriptor each. */
void gm_conn_refuse(gm_conn *c, int code, const char *text)
{
	fail_linger(c, 0, code, text, 0);
}

/* c, admitted, is closing: it no longer counts in the caps' table. */
static void count_out(gm_conn *c)
{
	gm_conns *cs = &c->l->conns;

	if (c->peer_key[0] != '\0')
		gm_peers_del(cs->peers, c->peer_key);
	if (c->peer.kind == GM_URL_TCP)
		gm_peers_del(cs->peers, GM_PEERS_ANONYMOUS);
}

void gm_conn_close(gm_conn *c, int reason)
{
	gm_conns *cs = &c->l->conns;

	if (c->closing)
		return;
	c->closing = true;
	/* Held while closing: dropping its frames can free its last
	 * requests, and with them their hold on c. */
	c->refs++;
	if (reason >= 0) {
		cs->n.dropped++;
		cs->n.dropped_by[reason]++;
		GM_LOG(GM_LOG_INFO, "connection %u (%s) dropped: %s", c->id,
		       c->peer_key[0] ? c->peer_key : "?",
		       gm_conn_drop_names[reason]);
	}
	if (c->admitted) {
		cs->n.open--;
		count_out(c);
		c->admitted = false;
	}
	gm_outq_drop(&c->q);
	/* The request it holds, waiting for room or its payload, is the
	 * reader's to let go (gm_conn_read.c). */
	if (c->owner != NULL)
		gm_conn_wake(c);
	gm_stream_close(c->s);
	gm_conn_release(c);
}

/* Takes c out of the flush list. */
static void unflush(gm_conn *c)
{
	gm_conn **p = &c->l->conns.flush;

	while (*p != NULL && *p != c)
		p = &(*p)->flush_next;
	if (*p == c)
		*p = c->flush_next;
	c->on_flush = false;
}

void gm_conn_maybe_free(gm_conn *c)
{
	gm_conns *cs = &c->l->conns;

	if (!c->closing || c->rd_busy || c->wr_busy || c->refs != 0 ||
	    c->owner != NULL)
		return;
	if (c->on_flush)
		unflush(c);
	free(c->big);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	gm_stream_free(c->s);
	gm_outq_fini(&c->q);
	gm_principal_release(c->principal);
	gm_shares_release(c->l->shares, c->share);
	munmap(c->rbuf, GM_CONN_RBUF);
	if (c->settled != NULL)
		c->settled(c->l, c->settled_arg);
	free(c);
}

/* ---- writes ---- */

/* Moves io's pieces on by n bytes written; returns whether any are
 * left. */
static bool advance(gm_io *io, size_t n)
{
	unsigned i = 0;

	while (i < io->niov && n >= io->iov[i].iov_len)
		n -= io->iov[i++].iov_len;
	if (i == io->niov)
		return false;
	memmove(io->iov, io->iov + i, (io->niov - i) * sizeof(io->iov[0]));
	io->niov -= i;
	io->iov[0].iov_buf = (uint8_t *)io->iov[0].iov_buf + n;
	io->iov[0].iov_len -= n;
	return true;
}

/* nng thread: a short write goes on from here. */
static void wr_cb(gm_io *io, int rv, size_t n)
{
	gm_conn *c = io->arg;

	if (rv == 0) {
		atomic_store(&c->wr_last_us, gm_conn_now_us());
		if (advance(io, n)) {
			gm_stream_send(c->s, io);
			return;
		}
	}
	c->wr_rv = rv;
	gm_loop_post(c->l, &c->wr_ev);
}

/* Writes wio on the loop's thread while the socket takes it: true when
 * it is all written (*rv 0) or the stream failed (*rv why); false when
 * the rest waits for room, for nng to send. */
static bool write_now(gm_conn *c, int *rv)
{
	size_t n;

	for (;;) {
		if ((*rv = gm_stream_try_send(c->s, &c->wio, &n)) != GM_OK)
			return true;
		if (n == 0)
			return false;
		atomic_store(&c->wr_last_us, gm_conn_now_us());
		if (!advance(&c->wio, n))
			return true;
	}
}

/* The frames of the last gm_outq_next are written (rv 0) or never will
 * be. The caller holds c: they can be the last of requests that hold
 * it. */
static void sent(gm_conn *c, int rv)
{
	uint64_t bytes = gm_outq_sent(&c->q);

	if (rv == 0)
		c->l->stats.bytes_out += bytes;
	if (!c->closing && rv != 0)
		gm_conn_close(c, -1);
}

/* After frames went: a connection to close once its answers are out
 * closes, any other may read on (fewer bytes unsent). */
static void after_sent(gm_conn *c)
{
	if (c->closing)
		return;
	if (c->close_after && gm_outq_empty(&c->q) &&
	    (c->linger_left == 0 || gm_clock_now_us() >= c->linger_until))
		gm_conn_close(c, -1);
	else
		gm_conn_wake(c);
}

/* Sends what the queue holds. The loop writes it itself as far as the
 * socket takes it at once, so that a reply that fits (any but a large
 * payload) costs no thread a wake-up; nng sends the rest and its
 * completion comes back through the loop's inbox (wr_done). */
void gm_conn_send(gm_conn *c)
{
	bool wrote = false;
	unsigned k;
	int rv;

	c->refs++;
	while (!c->wr_busy && !c->closing &&
	       (k = gm_outq_next(&c->q, c->wio.iov, GM_IO_IOV_MAX)) != 0) {
		c->wio.niov = k;
		c->send_since = gm_clock_now_us();
		if (!write_now(c, &rv)) {
			c->wr_busy = true;
			gm_conn_arm_deadlines(c);
			gm_stream_send(c->s, &c->wio);
			break;
		}
		sent(c, rv);
		wrote = true;
	}
	if (wrote)
		after_sent(c);
	gm_conn_release(c);
}

static void wr_done(gm_event *ev, gm_loop *l)
{
	gm_conn *c = CONN_OF(ev, wr_ev);

	c->refs++;
	c->wr_busy = false;
	sent(c, c->wr_rv);
	gm_conn_send(c);
	after_sent(c);
	gm_conn_release(c);
}

/* ---- reads: the callback, for gm_conn_read.c ---- */

/* nng thread: a read into a slab, or one discarding, goes on from here
 * until it has all it was started for. */
static void rd_cb(gm_io *io, int rv, size_t n)
{
	gm_conn *c = io->arg;

	if (rv == 0) {
		atomic_store(&c->rd_last_us, gm_conn_now_us());
		atomic_fetch_add(&c->rd_count, n);
		if (c->rd_mode == RM_BUF) {
			c->rd_got = n;
		} else if ((c->rd_left -= n) > 0) {
			if (c->rd_mode == RM_EXACT) {
				io->iov[0].iov_buf =
				    (uint8_t *)io->iov[0].iov_buf + n;
				io->iov[0].iov_len -= n;
			} else {
				io->iov[0].iov_len = c->rd_left < GM_CONN_RBUF
							 ? c->rd_left
							 : GM_CONN_RBUF;
			}
			gm_stream_recv(c->s, io);
			return;
		}
	}
	c->rd_rv = rv;
	gm_loop_post(c->l, &c->rd_ev);
}

/* ---- the set's counts ---- */

/* Whether c has begun a frame it has not answered: part of a header, a
 * head or descriptors still coming, a payload waiting for the pool or
 * coming, a v1 client's request. Closed now, its client would lose a
 * request it had written whole, the daemon having read only its start.
 * A refused frame's rest (RS_DISCARD) and a linger follow an ERROR
 * already queued: nothing there waits for an answer. */
static bool frame_begun(const gm_conn *c)
{
	switch (c->rs) {
	case RS_HDR:
		return c->roff < c->rlen;
	case RS_BODY:
	case RS_WAIT:
	case RS_PAYLOAD:
	case RS_V1:
		return true;
	default:
		return false;
	}
}

int gm_conns_quiet(const gm_loop *l)
{
	for (const gm_conn *c = l->conns.head; c != NULL; c = c->next)
		if (!c->closing && (frame_begun(c) || !gm_outq_empty(&c->q)))
			return 0;
	return 1;
}

void gm_conns_counts(const gm_loop *l, gm_stats_conns *out)
{
	*out = l->conns.n;
	out->accepted += atomic_load(&l->conns.gone);
	out->paused = 0;
	out->unsent_bytes = 0;
	for (const gm_conn *c = l->conns.head; c != NULL; c = c->next) {
		if (c->closing)
			continue;
		out->unsent_bytes += c->q.bytes;
		out->paused += c->rs == RS_WAIT ||
			       (c->rs == RS_HDR && !gm_conn_may_read(c));
	}
}

uint64_t gm_conns_inflight(const gm_loop *l)
{
	uint64_t n = 0;

	for (const gm_conn *c = l->conns.head; c != NULL; c = c->next)
		n += c->inflight;
	return n;
}
