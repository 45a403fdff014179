/*
 * gm_conn_set.c - the set of connections: taking a new one in or
 * refusing it (allow-lists, max_connections and admin_connections,
 * max_connections_anonymous, max_connections_per_peer),
 * the deadlines of all of them kept by one timer that runs while one is
 * pending, the sends started once per turn of the loop, and the counts
 * for the stats; see gm_conn.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gm_clock.h"
#include "gm_conn.h"
#include "gm_conn_impl.h"
#include "gm_log.h"
#include "gm_request.h"

/* A refused client may retry at once: log one refusal a second. */
#define REFUSAL_LOG_US 1e6

/* ---- deadlines ---- */

static double since(double a, uint64_t b)
{
	return a > (double)b ? a : (double)b;
}

enum { NONE, PENDING, CLOSED };

/* Closes c if it missed a deadline (CLOSED); else whether one still
 * runs (PENDING) or not (NONE). */
static int check_deadlines(gm_conn *c, double now)
{
	const gm_config *cfg = c->l->cfg;
	int reason = -2;

	if (c->closing)
		return NONE;
	if (gm_conn_read_check_rate(c, now))
		return CLOSED;
	if (c->admitted && !c->got_hdr &&
	    now > c->born_us + cfg->handshake_ms * 1e3)
		reason = GM_CONN_DROPPED_HANDSHAKE;
	else if (gm_conn_read_mid_frame(c) &&
		 now > since(c->want_since, atomic_load(&c->rd_last_us)) +
			   cfg->stall_ms * 1e3)
		reason = GM_CONN_DROPPED_STALL;
	else if (c->wr_busy &&
		 now > since(c->send_since, atomic_load(&c->wr_last_us)) +
			   cfg->send_ms * 1e3)
		reason = GM_CONN_DROPPED_SEND;
	else if (c->rs == RS_LINGER && gm_outq_empty(&c->q) &&
		 now >= c->linger_until)
		reason = -1; /* counted when it failed */
	if (reason != -2) {
		gm_conn_close(c, reason);
		return CLOSED;
	}
	return (c->admitted && !c->got_hdr) || gm_conn_read_mid_frame(c) ||
		       c->wr_busy || c->rs == RS_LINGER
		   ? PENDING
		   : NONE;
}

/* Closing one connection may free others (their last requests go with
 * its replies, and the pool room they free lets others on): after one,
 * the walk starts again; those closed are skipped. */
static void sweep(uv_timer_t *t)
{
	gm_loop *l = t->data;
	double now = gm_clock_now_us();
	bool pending = false;
	gm_conn *c = l->conns.head;

	while (c != NULL) {
		int st = check_deadlines(c, now);

		if (st == CLOSED) {
			pending = false;
			c = l->conns.head;
			continue;
		}
		pending = pending || st == PENDING;
		c = c->next;
	}
	if (!pending) {
		uv_timer_stop(t);
		l->conns.timer_on = 0;
	}
}

/* ---- the set ---- */

static void flush_cb(uv_prepare_t *p)
{
	gm_conns_flush(p->data);
}

int gm_conns_open(gm_loop *l, char *msg, size_t msglen)
{
	gm_conns *cs = &l->conns;
	const gm_config *cfg = l->cfg;
	unsigned least = cfg->handshake_ms;
	int rv;

	memset(cs, 0, sizeof(*cs));
	if (cfg->stall_ms < least)
		least = cfg->stall_ms;
	if (cfg->send_ms < least)
		least = cfg->send_ms;
	/* A deadline is kept to within a quarter of the shortest. */
	cs->sweep_ms = least / 4 < 5 ? 5 : least / 4 > 250 ? 250 : least / 4;
	if (gm_peers_create(&cs->peers) != GM_OK) {
		snprintf(msg, msglen, "connections: out of memory");
		return GM_ENOMEM;
	}
	cs->timer.data = l;
	cs->flusher.data = l;
	/* Started and stopped at once, so that gm_conn_arm_deadlines can
	 * start it again (uv_timer_again) without knowing its callback. */
	if ((rv = uv_timer_init(&l->uv, &cs->timer)) != 0 ||
	    (rv = uv_timer_start(&cs->timer, sweep, cs->sweep_ms,
				 cs->sweep_ms)) != 0 ||
	    (rv = uv_timer_stop(&cs->timer)) != 0 ||
	    (rv = uv_prepare_init(&l->uv, &cs->flusher)) != 0 ||
	    (rv = uv_prepare_start(&cs->flusher, flush_cb)) != 0) {
		snprintf(msg, msglen, "connections: %s", uv_strerror(rv));
		return GM_EINTERNAL;
	}
	return GM_OK;
}

void gm_conns_close(gm_loop *l)
{
	gm_conn *c = l->conns.head;

	/* As in sweep: a close may free others, so start again after each. */
	while (c != NULL) {
		if (c->closing) {
			c = c->next;
			continue;
		}
		gm_conn_close(c, -1);
		c = l->conns.head;
	}
	uv_timer_stop(&l->conns.timer);
	l->conns.timer_on = 0;
}

void gm_conns_free(gm_loop *l)
{
	gm_peers_destroy(l->conns.peers);
	l->conns.peers = NULL;
}

/* Takes up the reading of every connection woken (gm_conn_wake), in
 * the order they were woken; one woken again meanwhile waits for the
 * next call. */
static void wake_all(gm_loop *l)
{
	gm_conn *c = l->conns.wake, *order = NULL, *next;

	l->conns.wake = NULL;
	for (; c != NULL; c = next) {
		next = c->wake_next;
		c->wake_next = order;
		order = c;
	}
	for (c = order; c != NULL; c = next) {
		next = c->wake_next;
		c->wake_next = NULL;
		c->on_wake = false;
		gm_conn_read_process(c);
		gm_conn_release(c);
	}
}

/* Until nothing is left to take up: a send the loop writes at once
 * (gm_conn_send) gives back what its frames held, which can wake a
 * connection (a slab granted to a waiting request, room to read), and
 * a wake left for the next turn would wait for whatever event next
 * woke the loop. Each round follows from work done in the one before
 * (bytes written, frames answered), so the rounds end. */
void gm_conns_flush(gm_loop *l)
{
	gm_conn *c;

	do {
		wake_all(l);
		while ((c = l->conns.flush) != NULL) {
			l->conns.flush = c->flush_next;
			c->on_flush = false;
			c->flush_next = NULL;
			gm_conn_send(c);
		}
	} while (l->conns.wake != NULL);
}

/* Logs a refused connection, one line a second at most. */
static void log_refusal(gm_conns *cs, const gm_peer *p, const char *why)
{
	double now = gm_clock_now_us();

	if (cs->refusal_logged != 0.0 &&
	    now - cs->refusal_logged < REFUSAL_LOG_US)
		return;
	cs->refusal_logged = now;
	GM_LOG(GM_LOG_WARN,
	       "refused %s connection %s (%" PRIu64
	       " refused so far; one such line a second at most)",
	       p->kind == GM_URL_IPC   ? "an ipc"
	       : p->kind == GM_URL_TLS ? "a TLS"
				       : "a",
	       why, cs->n.refused);
}

/* Whether the ipc peer p is refused by the allow-lists; text says why. */
static bool not_allowed(const gm_config *cfg, const gm_peer *p, char *text,
			size_t len)
{
	if (p->kind != GM_URL_IPC ||
	    (cfg->nallow_uids == 0 && cfg->nallow_gids == 0) ||
	    (p->has_cred && gm_config_allows(cfg, p->uid, p->gid)))
		return false;
	if (!p->has_cred)
		snprintf(text, len, "whose peer credentials cannot be read");
	else
		snprintf(text, len,
			 "from uid %" PRIu64 " gid %" PRIu64
			 ", in neither allow_uids nor allow_gids",
			 p->uid, p->gid);
	return true;
}

/*
 * Why a connection of peer p, counted under key, may not be served,
 * into text; GM_OK when it may. The caps count principals where
 * addresses are cheap: every plain tcp:// client is the one principal
 * anonymous, so they all share max_connections_anonymous, whatever
 * addresses they come from (and gm_peers_key makes every loopback
 * address one peer). An ipc:// peer whose uid is admin may go
 * admin_connections past max_connections, so that an operator can
 * always get in to read the stats and drain while others hold every
 * connection.
 */
static int refusal(gm_conns *cs, const gm_config *cfg, const gm_peer *p,
		   const char *key, char *text, size_t len, int *reason)
{
	bool admin = p->kind == GM_URL_IPC && p->has_cred &&
		     gm_config_admin_uid(cfg, p->uid);
	uint64_t most = cfg->max_conns + (admin ? cfg->admin_conns : 0);

	*reason = GM_CONN_REFUSED_ALLOW_LIST;
	if (not_allowed(cfg, p, text, len))
		return GM_EACCES;
	*reason = GM_CONN_REFUSED_MAX_CONNECTIONS;
	if (cs->n.open >= most) {
		if (admin)
			snprintf(text, len,
				 "%" PRIu64 " connections open, max_connections"
				 "=%u + admin_connections=%u",
				 most, cfg->max_conns, cfg->admin_conns);
		else
			snprintf(text, len,
				 "%u connections open, max_connections=%u: "
				 "try again later",
				 cfg->max_conns, cfg->max_conns);
		return GM_EBUSY;
	}
	*reason = GM_CONN_REFUSED_MAX_ANONYMOUS;
	if (p->kind == GM_URL_TCP &&
	    gm_peers_count(cs->peers, GM_PEERS_ANONYMOUS) >=
		cfg->max_conns_anon) {
		snprintf(text, len,
			 "%u plain tcp:// (anonymous) connections open, "
			 "max_connections_anonymous=%u",
			 cfg->max_conns_anon, cfg->max_conns_anon);
		return GM_EBUSY;
	}
	*reason = GM_CONN_REFUSED_MAX_PER_PEER;
	if (key[0] != '\0' &&
	    gm_peers_count(cs->peers, key) >= cfg->max_conns_peer) {
		snprintf(text, len,
			 "%s has %u connections open, "
			 "max_connections_per_peer=%u",
			 key, cfg->max_conns_peer, cfg->max_conns_peer);
		return GM_EBUSY;
	}
	return GM_OK;
}

/* Counts c in the caps' table: under its peer, and as anonymous on
 * plain tcp://. GM_ENOMEM, with nothing counted. */
static int count_in(gm_conns *cs, gm_conn *c)
{
	if (c->peer_key[0] != '\0' &&
	    gm_peers_add(cs->peers, c->peer_key) != GM_OK)
		return GM_ENOMEM;
	if (c->peer.kind == GM_URL_TCP &&
	    gm_peers_add(cs->peers, GM_PEERS_ANONYMOUS) != GM_OK) {
		if (c->peer_key[0] != '\0')
			gm_peers_del(cs->peers, c->peer_key);
		return GM_ENOMEM;
	}
	return GM_OK;
}

/*
 * A refusal must cost the daemon nothing it could run out of: a refused
 * connection is not read, and is closed once its ERROR is written (on a
 * fresh socket that is at once), not after a linger; a TLS one is closed
 * at once without a word, since the ERROR would need a finished
 * handshake, which its peer may never finish (and meanwhile it would
 * hold a descriptor past every cap).
 */
void gm_conns_accept(gm_loop *l, gm_stream *s,
		     void (*settled)(gm_loop *l, void *arg), void *arg)
{
	gm_conns *cs = &l->conns;
	char text[GM_MSG_TEXT + 64], key[GM_PEER_KEY];
	gm_peer peer;
	gm_conn *c;
	int rv, reason;

	cs->n.accepted++;
	gm_stream_peer(s, &peer);
	gm_peers_key(&peer, key);
	rv = refusal(cs, l->cfg, &peer, key, text, sizeof(text), &reason);
	if (rv != GM_OK) {
		cs->n.refused++;
		cs->n.refused_by[reason]++;
		log_refusal(cs, &peer, text);
		if (peer.kind == GM_URL_TLS) {
			gm_stream_free(s);
			settled(l, arg);
			return;
		}
	}
	if (l->spin_us > 0 && rv == GM_OK)
		gm_stream_set_poller(s, l->poller);
	if ((c = gm_conn_new(l, s, gm_request_frames_done)) == NULL) {
		GM_LOG(GM_LOG_ERROR, "out of memory for a new connection");
		gm_stream_free(s);
		settled(l, arg);
		return;
	}
	c->rd_ev.fn = gm_conn_read_done;
	if (rv != GM_OK) {
		c->settled = settled;
		c->settled_arg = arg;
		gm_conn_refuse(c, rv, text);
		return;
	}
	settled(l, arg);
	if (count_in(cs, c) != GM_OK) {
		gm_conn_fail(c, 0, GM_ENOMEM, "no memory for the connection",
			     -1);
		return;
	}
	c->admitted = true;
	cs->n.open++;
	gm_conn_arm_deadlines(c); /* the handshake */
	gm_conn_read_process(c);
}
