/*
 * gm_conn_read.c - the frames a connection reads, in the order of
 * PROTOCOL.md 8; see gm_conn.h. One state per part of a frame
 * (gm_conn_impl.h); each step reads no more than the checks so far
 * allow, and a step that needs bytes starts one receive and returns.
 *
 * Body bytes wanted whole (a GEMM's head and descriptors, a CTRL's
 * JSON) are read into rbuf when they fit, checked in place there, and
 * otherwise into one buffer of their size (big), allocated only once
 * the header's checks bound it.
 *
 * A GEMM's head goes to gm_admit, a CTRL's body to gm_ctrl, by direct
 * calls; neither calls back in here. What they do that lets reading go
 * on (an answer, a slab granted) wakes the connection (gm_conn_wake),
 * and the set runs gm_conn_read_process again once the loop's turn is
 * over: the reader is never re-entered from inside a step.
 */
#include "gm_conn.h"
#include "gm_conn_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_admit.h"
#include "gm_clock.h"
#include "gm_ctrl.h"
#include "gm_log.h"
#include "gm_request.h"
#include "gm_v1.h"

#define CONN_OF(ev, member) \
	((gm_conn *)(void *)((char *)(ev)-offsetof(gm_conn, member)))

static size_t avail(const gm_conn *c)
{
	return c->rlen - c->roff;
}

static void start(gm_conn *c, void *buf, size_t len)
{
	c->rio.iov[0] = (nng_iov){buf, len};
	c->rio.niov = 1;
	c->rd_busy = true;
	c->want_since = gm_clock_now_us();
	gm_conn_arm_deadlines(c);
	gm_stream_recv(c->s, &c->rio);
}

/* Reads what comes into rbuf after what it holds. */
static void recv_more(gm_conn *c)
{
	if (c->roff == c->rlen) {
		c->roff = c->rlen = 0;
	} else if (c->rlen == GM_CONN_RBUF) {
		memmove(c->rbuf, c->rbuf + c->roff, avail(c));
		c->rlen -= c->roff;
		c->roff = 0;
	}
	c->rd_mode = RM_BUF;
	start(c, c->rbuf + c->rlen, GM_CONN_RBUF - c->rlen);
}

/* Reads exactly n bytes to dst. */
static void recv_exact(gm_conn *c, uint8_t *dst, uint64_t n)
{
	c->rd_mode = RM_EXACT;
	c->rd_left = c->rd_total = n;
	start(c, dst, n);
}

/* Reads and drops exactly n bytes (rbuf holds none unread). */
static void recv_discard(gm_conn *c, uint64_t n)
{
	c->roff = c->rlen = 0;
	c->rd_mode = RM_DISCARD;
	c->rd_left = c->rd_total = n;
	start(c, c->rbuf, n < GM_CONN_RBUF ? n : GM_CONN_RBUF);
}

bool gm_conn_read_mid_frame(const gm_conn *c)
{
	switch (c->rs) {
	case RS_HDR:
		return c->got_hdr && avail(c) > 0 && gm_conn_may_read(c);
	case RS_BODY:
	case RS_PAYLOAD:
	case RS_DISCARD:
	case RS_V1:
		return true;
	default:
		return false;
	}
}

/* The first need bytes of the frame's body in one piece, or NULL after
 * starting the read that brings them. */
static const uint8_t *body_bytes(gm_conn *c, uint64_t need)
{
	uint8_t *big;

	if (c->big == NULL && need <= avail(c))
		return c->rbuf + c->roff;
	if (c->big == NULL && need <= GM_CONN_RBUF) {
		if (c->roff + need > GM_CONN_RBUF) {
			memmove(c->rbuf, c->rbuf + c->roff, avail(c));
			c->rlen -= c->roff;
			c->roff = 0;
		}
		recv_more(c);
		return NULL;
	}
	if (c->big_have >= need)
		return c->big;
	if ((big = realloc(c->big, need)) == NULL) {
		gm_conn_fail(c, c->h.id, GM_ENOMEM,
			     "no memory for the request's headers",
			     GM_CONN_DROPPED_PROTOCOL);
		return NULL;
	}
	if (c->big == NULL) {
		/* From here the body is in big, and rbuf holds none. */
		memcpy(big, c->rbuf + c->roff, avail(c));
		c->big_have = avail(c);
		c->roff = c->rlen = 0;
	}
	c->big = big;
	recv_exact(c, c->big + c->big_have, need - c->big_have);
	return NULL;
}

/* The body's first n bytes are handled. */
static void consume(gm_conn *c, uint64_t n)
{
	if (c->big != NULL) {
		free(c->big);
		c->big = NULL;
		c->big_have = 0;
	} else {
		c->roff += n;
	}
}

/* The rest of the frame, left bytes, is dropped: it was refused. */
static void discard(gm_conn *c, uint64_t left)
{
	c->left = left;
	c->rs = RS_DISCARD;
}

/* Whom c speaks for, once its first frame header is in: a TLS peer's
 * handshake is done by then. false when c was failed for want of
 * memory. */
static bool identify(gm_conn *c)
{
	gm_stream_peer(c->s, &c->peer);
	if ((c->principal = gm_principal_new(&c->peer)) != NULL &&
	    (c->share = gm_shares_hold(
		 c->l->shares, gm_principal_name(c->principal))) != NULL) {
		gm_outq_count_in(&c->q, &c->share->unsent);
		return true;
	}
	gm_conn_fail(c, 0, GM_ENOMEM, "no memory for the connection",
		     GM_CONN_DROPPED_PROTOCOL);
	return false;
}

/* A frame header in rbuf: its checks, steps 1-7. */
static bool step_hdr(gm_conn *c)
{
	gm_loop *l = c->l;
	char text[GM_MSG_TEXT + 1];
	const uint8_t *p = c->rbuf + c->roff;
	size_t have;
	bool fatal;
	int rv;

	if (!gm_conn_may_read(c))
		return false;
	/* A v1 client starts with its SP header and waits for ours. */
	if (!c->got_hdr && avail(c) > 0 && p[0] == 0x00) {
		if (avail(c) >= 4 && gm_proto_is_sp(p, avail(c))) {
			c->rs = RS_V1;
			return true;
		}
		if (avail(c) < 4 && memcmp(p, "\0SP\0", avail(c)) == 0) {
			recv_more(c);
			return false;
		}
	}
	/* A header is refused as soon as the part that came shows it bad
	 * (a wrong magic from its first byte), not only once it is whole. */
	have = avail(c) < GM_HDR_SIZE ? avail(c) : GM_HDR_SIZE;
	rv = gm_proto_get_hdr(p, have, &c->h, text, sizeof(text));
	if (rv == GM_ETRUNC) {
		recv_more(c);
		return false;
	}
	if (!c->got_hdr && !identify(c))
		return false;
	c->roff += have;
	c->got_hdr = true;
	/* Past a bad header (steps 2-5), a frame that is no request (6) or
	 * a length over the limit (7) the next frame cannot be found
	 * (PROTOCOL.md 2.1). */
	fatal = rv != GM_OK;
	if (!fatal) {
		rv = gm_proto_check_request(&c->h, &l->lim, text, sizeof(text));
		fatal = rv == GM_EMSGTYPE || rv == GM_ETOOBIG;
	}
	if (fatal) {
		gm_conn_fail(c, c->h.id, rv, text, GM_CONN_DROPPED_PROTOCOL);
		return false;
	}
	if (rv != GM_OK) {
		gm_conn_error(c, c->h.id, rv, text);
		discard(c, c->h.length);
		return true;
	}
	c->rs = RS_BODY;
	c->body = c->h.type == GM_MSG_CTRL ? BODY_CTRL : BODY_HEAD;
	c->need =
	    c->h.type == GM_MSG_CTRL ? c->h.length : gm_proto_head_size(&c->h);
	return true;
}

/* The head and descriptors of a GEMM are checked: steps 15-18, then the
 * request layer's, 19-24. An accepted request waits for its slab
 * (RS_WAIT); its head stays in place until then. */
static bool step_descs(gm_conn *c, const uint8_t *p)
{
	char text[GM_MSG_TEXT + 1];
	gm_request *rq;
	int rv;

	rv = gm_proto_check_descs(&c->h, p, p + c->head_len, &c->l->lim,
				  &c->payload, text, sizeof(text));
	if (rv != GM_OK) {
		gm_conn_error(c, c->h.id, rv, text);
		consume(c, c->need);
		discard(c, c->h.length - c->need);
		return true;
	}
	rq = gm_admit_gemm(c->l, c, &c->h, &c->b, p, p + c->head_len,
			   c->payload);
	if (rq == NULL) {
		consume(c, c->need);
		discard(c, c->payload);
		return true;
	}
	c->owner = rq;
	c->rs = RS_WAIT;
	return true;
}

static bool step_body(gm_conn *c)
{
	char text[GM_MSG_TEXT + 1];
	const uint8_t *p = body_bytes(c, c->need);
	uint32_t ndesc;
	int rv;

	if (p == NULL)
		return false;
	switch (c->body) {
	case BODY_CTRL:
		/* In flight while it is answered: a stats request counts
		 * itself, as every request does. */
		c->inflight++;
		gm_ctrl_handle(c->l, c, &c->h, p);
		c->inflight--;
		consume(c, c->need);
		c->rs = RS_HDR;
		return true;
	case BODY_HEAD:
		rv = gm_proto_check_head(&c->h, p, &c->l->lim, &c->b, &ndesc,
					 text, sizeof(text));
		if (rv != GM_OK) {
			gm_conn_error(c, c->h.id, rv, text);
			consume(c, c->need);
			discard(c, c->h.length - c->need);
			return true;
		}
		c->head_len = c->need;
		c->need += (uint64_t)ndesc * GM_REGION_DESC_SIZE;
		c->body = BODY_DESC;
		return true;
	default:
		return step_descs(c, p);
	}
}

/* The request waits for its slab: once it has one (now, or when the
 * pool's grant woke c), its jobs are placed in it from the head still
 * in place, and its payload is read into it. */
static bool step_wait(gm_conn *c)
{
	gm_request *rq = c->owner;
	const uint8_t *head = c->big != NULL ? c->big : c->rbuf + c->roff;

	if (rq->state != GM_REQUEST_PAYLOAD)
		return false;
	gm_request_place(rq, head, head + c->head_len);
	consume(c, c->need);
	c->dst = rq->wait.slab;
	c->left = c->payload;
	c->rs = RS_PAYLOAD;
	c->pay_since = gm_clock_now_us();
	c->pay_mark = atomic_load(&c->rd_count);
	c->pay_cut = false;
	return true;
}

/* The payload's bytes in so far: those taken before the receive into
 * the slab began, and what it has received since. */
static uint64_t payload_got(gm_conn *c)
{
	return c->payload - c->left + (atomic_load(&c->rd_count) - c->pay_mark);
}

/* Refuses the payload for its rate: the client is told why, and c is
 * closed once that is written (wr_done) or the linger is over, whichever
 * comes first; what still comes is not read into the slab (read_done). */
static void cut_payload(gm_conn *c, double now, uint64_t got)
{
	const gm_config *cfg = c->l->cfg;
	/* Longer than a reply's message may be: gm_conn_error cuts it. */
	char text[2 * GM_MSG_TEXT], in[GM_SIZE_TEXT], all[GM_SIZE_TEXT],
	    rate[GM_SIZE_TEXT];

	c->pay_cut = true;
	c->l->conns.n.dropped++;
	c->l->conns.n.dropped_by[GM_CONN_DROPPED_PAYLOAD_RATE]++;
	gm_size_text(got, in);
	gm_size_text(c->payload, all);
	gm_size_text(cfg->payload_min_rate, rate);
	snprintf(text, sizeof(text),
		 "payload too slow: %s of %s in %.1f s, payload_min_rate=%s/s",
		 in, all, (now - c->pay_since) / 1e6, rate);
	GM_LOG(GM_LOG_INFO,
	       "connection %u (%s) dropped: request %" PRIu64 ": %s", c->id,
	       c->peer_key[0] ? c->peer_key : "?", c->h.id, text);
	gm_conn_error(c, c->h.id, GM_ETIMEDOUT, text);
	c->close_after = true;
	c->linger_until = now + GM_CONN_LINGER_MS * 1e3;
}

bool gm_conn_read_check_rate(gm_conn *c, double now)
{
	const gm_config *cfg = c->l->cfg;
	uint64_t got;

	if (c->rs != RS_PAYLOAD || c->closing)
		return false;
	if (c->pay_cut) {
		if (now < c->linger_until)
			return false;
		gm_conn_close(c, -1); /* counted when it was cut */
		return true;
	}
	if (cfg->payload_min_rate == 0)
		return false;
	/* Due at the grace after its start, plus the time its bytes so far
	 * take at the rate: a client that keeps the rate never falls
	 * behind, one that trickles does once the grace is spent, whatever
	 * the size it announced. */
	got = payload_got(c);
	if (now <= c->pay_since + cfg->payload_grace_ms * 1e3 +
		       (double)got / (double)cfg->payload_min_rate * 1e6)
		return false;
	cut_payload(c, now, got);
	return false;
}

/* The payload is in: the request goes its way, the next frame comes. */
static void payload_in(gm_conn *c)
{
	gm_request *rq = c->owner;

	c->owner = NULL;
	c->rs = RS_HDR;
	gm_request_advance(rq, GM_REQUEST_PAYLOAD_IN, 0);
}

static bool step_payload(gm_conn *c)
{
	uint64_t k = avail(c) < c->left ? avail(c) : c->left;

	/* What came with the headers (at most a buffer) is copied; the
	 * rest goes straight from the socket into the slab. */
	memcpy(c->dst, c->rbuf + c->roff, k);
	c->dst += k;
	c->left -= k;
	c->roff += k;
	if (c->left == 0) {
		payload_in(c);
		return true;
	}
	c->pay_mark = atomic_load(&c->rd_count);
	recv_exact(c, c->dst, c->left);
	return false;
}

static bool step_discard(gm_conn *c)
{
	uint64_t k = avail(c) < c->left ? avail(c) : c->left;

	c->roff += k;
	c->left -= k;
	if (c->left == 0) {
		c->rs = RS_HDR;
		return true;
	}
	recv_discard(c, c->left);
	return false;
}

/* A v1 client: its hello, then its first request's framing and head,
 * then the reply, then the rest discarded while the reply goes. */
static bool step_v1(gm_conn *c)
{
	int ipc = c->peer.kind == GM_URL_IPC;
	size_t fs = gm_v1_frame_size(ipc), want;
	uint8_t *p;

	if (c->v1_phase == 0) {
		if (avail(c) < GM_V1_HELLO_SIZE)
			goto more;
		c->roff += GM_V1_HELLO_SIZE;
		if ((p = malloc(GM_V1_HELLO_SIZE)) == NULL) {
			gm_conn_close(c, GM_CONN_DROPPED_V1_CLIENT);
			return false;
		}
		memcpy(p, gm_v1_hello, GM_V1_HELLO_SIZE);
		gm_conn_push_heap(c, p, GM_V1_HELLO_SIZE);
		c->v1_phase = 1;
	}
	if (c->v1_phase == 1) {
		if (avail(c) < fs)
			goto more;
		c->v1_len = gm_v1_frame_length(c->rbuf + c->roff, ipc);
		c->roff += fs;
		c->v1_phase = 2;
	}
	want = c->v1_len < GM_V1_REQ_HEAD ? (size_t)c->v1_len : GM_V1_REQ_HEAD;
	if (avail(c) < want)
		goto more;
	c->l->conns.n.dropped++;
	c->l->conns.n.dropped_by[GM_CONN_DROPPED_V1_CLIENT]++;
	c->l->stats.requests_refused++;
	c->l->stats.errors[GM_EVERSION]++;
	if (want < 4 || (p = malloc(GM_V1_REPLY_MAX)) == NULL) {
		gm_conn_close(c, -1);
		return false;
	}
	gm_conn_push_heap(c, p, gm_v1_reply(p, ipc, c->rbuf + c->roff, want));
	c->roff += want;
	c->close_after = true;
	c->rs = RS_LINGER;
	c->linger_until = gm_clock_now_us() + GM_CONN_LINGER_MS * 1e3;
	c->linger_left = c->v1_len - want;
	if (c->linger_left > GM_CONN_LINGER_BYTES)
		c->linger_left = GM_CONN_LINGER_BYTES;
	return true;
more:
	recv_more(c);
	return false;
}

static bool step_linger(gm_conn *c)
{
	uint64_t k = avail(c) < c->linger_left ? avail(c) : c->linger_left;

	c->linger_left -= k;
	c->roff = c->rlen = 0;
	if (c->linger_left == 0) {
		/* All it had to say is read: close once the reply is out. */
		if (gm_outq_empty(&c->q))
			gm_conn_close(c, -1);
		return false;
	}
	recv_discard(c, c->linger_left);
	return false;
}

static bool step(gm_conn *c)
{
	switch (c->rs) {
	case RS_HDR:
		return step_hdr(c);
	case RS_BODY:
		return step_body(c);
	case RS_PAYLOAD:
		return step_payload(c);
	case RS_DISCARD:
		return step_discard(c);
	case RS_V1:
		return step_v1(c);
	case RS_LINGER:
		return step_linger(c);
	default:
		return step_wait(c);
	}
}

/* c is closed: the request it holds is let go, nothing of it runs;
 * unless its payload is being read into its slab, which is the
 * stream's until that read ends (gm_conn_read_done lets it go then). */
static void let_go(gm_conn *c)
{
	gm_request *rq = c->owner;

	if (rq == NULL || (c->rs == RS_PAYLOAD && c->rd_busy))
		return;
	c->owner = NULL;
	gm_request_advance(rq, GM_REQUEST_CLOSED, 0);
}

/* Called from the loop's events and the set only, never from inside a
 * step: what a step does that lets reading go on wakes c instead. */
void gm_conn_read_process(gm_conn *c)
{
	c->refs++; /* a step may close c */
	while (!c->closing && !c->rd_busy && step(c))
		;
	if (c->closing)
		let_go(c);
	gm_conn_release(c);
}

void gm_conn_read_done(gm_event *ev, gm_loop *l)
{
	gm_conn *c = CONN_OF(ev, rd_ev);

	/* Held here: what is handled can let go of c's last holders. */
	c->refs++;
	c->rd_busy = false;
	if (c->rd_rv == GM_OK)
		l->stats.bytes_in +=
		    c->rd_mode == RM_BUF ? c->rd_got : c->rd_total;
	/* A payload refused for its rate is not handed on if it does come
	 * whole meanwhile. */
	if (c->rd_rv != GM_OK || c->closing ||
	    (c->rs == RS_PAYLOAD && c->pay_cut)) {
		gm_request *rq = c->rs == RS_PAYLOAD ? c->owner : NULL;

		if (rq != NULL) {
			c->owner = NULL;
			gm_request_advance(rq, GM_REQUEST_CLOSED, 0);
		}
		gm_conn_close(c, -1);
		gm_conn_release(c);
		return;
	}
	switch (c->rd_mode) {
	case RM_BUF:
		c->rlen += c->rd_got;
		break;
	case RM_EXACT:
		if (c->rs == RS_PAYLOAD) {
			c->left = 0;
			payload_in(c);
		} else {
			c->big_have += c->rd_total;
		}
		break;
	default:
		if (c->rs == RS_DISCARD) {
			c->left = 0;
			c->rs = RS_HDR;
		} else {
			c->linger_left -= c->rd_total;
		}
	}
	gm_conn_read_process(c);
	gm_conn_release(c);
}
