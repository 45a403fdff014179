/*
 * gmc_conn.c - a connection slot: dialing, the writer, closing and
 * freeing its stream; see gmc_conn.h.
 */
#include "gmc_conn.h"

#include <stdio.h>
#include <string.h>

#include "gmc_call.h"
#include "gmc_daemon.h"

/* What is written in place of the caller's bytes once its call ended
 * with its frame half written. */
static const uint8_t zeros[64u << 10];

static void dial_cb(void *arg, int rv, gm_stream *s, const char *msg);
static void send_cb(gm_io *io, int rv, size_t n);
static void recv_cb(gm_io *io, int rv, size_t n);
static void dial_ev_cb(void *arg);
static void reap_cb(void *arg);

static uint64_t ms_ns(unsigned ms)
{
	return (uint64_t)ms * 1000000u;
}

int gmc_conn_init(gmc_conn *c, gmc_daemon *dm, unsigned index, const char *url,
		  const gm_tls_ctx *tls, char *msg, size_t msglen)
{
	int rv;

	memset(c, 0, sizeof(*c));
	c->dm = dm;
	c->index = index;
	c->wio.done = send_cb;
	c->wio.arg = c;
	c->rio.done = recv_cb;
	c->rio.arg = c;
	gmc_tev_init(&c->dial_ev, dial_ev_cb, c);
	gmc_tev_init(&c->reap_ev, reap_cb, c);
	if ((rv = gmc_read_init(&c->rd)) != GM_OK) {
		snprintf(msg, msglen, "out of memory");
		return rv;
	}
	if ((rv = gm_dialer_open(url, tls, &c->dialer, msg, msglen)) != 0)
		gmc_read_free(&c->rd);
	return rv;
}

void gmc_conn_later(gmc_conn *c, gmc_todo *t)
{
	if (c->on_run)
		return;
	c->on_run = true;
	c->next_run = t->run;
	t->run = c;
}

gmc_conn *gmc_conn_next_run(gmc_conn *c)
{
	return c->next_run;
}

void gmc_conn_dial(gmc_conn *c, gmc_todo *t)
{
	if (c->state != GMC_CONN_DOWN || c->dial_waiting || c->dm->stopping)
		return;
	c->state = GMC_CONN_DIALING;
	c->want_dial = true;
	gmc_conn_later(c, t);
}

static void dial_ev_cb(void *arg)
{
	gmc_conn *c = arg;
	gemmd_client *cl = c->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	pthread_mutex_lock(&cl->mu);
	c->dial_waiting = false;
	gmc_conn_dial(c, &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

/* ---- the queue ---- */

void gmc_conn_queue(gmc_conn *c, gmc_part *p, gmc_todo *t)
{
	p->conn = c;
	p->state = GMC_PART_QUEUED;
	p->queued = true;
	gmc_part_hold(p); /* the queue's: a half-written frame outlives its
			    call until its last byte is out */
	p->prev = c->tail;
	p->next = NULL;
	if (c->tail != NULL)
		c->tail->next = p;
	else
		c->head = p;
	c->tail = p;
	c->work += p->work;
	c->dm->work += p->work;
	if (c->state == GMC_CONN_UP) {
		c->want_send = true;
		gmc_conn_later(c, t);
		return;
	}
	if (c->dial_waiting && !c->dm->lazy) {
		/* A request would fail at the next dial: try it now. */
		gmc_timer_disarm(c->dm->cl->timer, &c->dial_ev);
		c->dial_waiting = false;
	}
	gmc_conn_dial(c, t);
}

static void dequeue(gmc_conn *c, gmc_part *p)
{
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		c->head = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	else
		c->tail = p->prev;
	p->prev = p->next = NULL;
	p->queued = false;
	gmc_part_drop(p); /* p may be gone now */
}

void gmc_conn_unqueue(gmc_part *p)
{
	if (p->queued)
		dequeue(p->conn, p);
}

void gmc_conn_unlink(gmc_part *p)
{
	gmc_conn *c = p->conn;

	if (c == NULL)
		return;
	if (p->state == GMC_PART_WRITING || p->state == GMC_PART_SENT) {
		if (p->prev_w != NULL)
			p->prev_w->next_w = p->next_w;
		else
			c->written = p->next_w;
		if (p->next_w != NULL)
			p->next_w->prev_w = p->prev_w;
		p->prev_w = p->next_w = NULL;
	}
	c->work -= p->work;
	c->dm->work -= p->work;
	p->work = 0;
}

/* ---- the writer ---- */

/* Marks p written: its bytes are being handed to the stream. From now
 * on it is never written again, and its replies may come at any time,
 * even before the send's callback. */
static void mark_written(gmc_conn *c, gmc_part *p)
{
	if (p->state != GMC_PART_QUEUED)
		return;
	p->state = GMC_PART_WRITING;
	p->written = true;
	p->next_w = c->written;
	if (c->written != NULL)
		c->written->prev_w = p;
	c->written = p;
}

/* Takes what the next send writes from the head of the queue: up to
 * GM_IO_IOV_MAX pieces, holding their parts and pinning the calls whose
 * memory they are. */
static bool plan_send(gmc_conn *c)
{
	gm_io *io = &c->wio;
	bool more = true;

	io->niov = 0;
	c->nw = 0;
	for (gmc_part *p = c->head; p && more && io->niov < GM_IO_IOV_MAX;
	     p = p->next) {
		size_t off = p->seg_off;
		bool user = false;

		for (unsigned i = p->seg;
		     i < p->f.nsegs && more && io->niov < GM_IO_IOV_MAX;
		     i++, off = 0) {
			const gmc_seg *sg = &p->f.segs[i];
			size_t len = sg->len - off;

			if (sg->p == NULL && len > sizeof(zeros)) {
				len = sizeof(zeros);
				more = false; /* the rest of it next time */
			}
			io->iov[io->niov++] = (nng_iov){
			    sg->p ? (uint8_t *)sg->p + off : (void *)zeros,
			    len};
			user |= sg->user && sg->p != NULL;
		}
		mark_written(c, p);
		gmc_part_hold(p);
		c->wparts[c->nw] = p;
		c->wpins[c->nw] = user ? p->call : NULL;
		if (user)
			gmc_call_pin(p->call);
		c->nw++;
	}
	return io->niov > 0;
}

/* n bytes of the send went out. */
static void advance(gmc_conn *c, size_t n)
{
	gmc_part *p;

	while (n > 0 && (p = c->head) != NULL) {
		const gmc_seg *sg = &p->f.segs[p->seg];
		size_t take = sg->len - p->seg_off;

		if (take > n)
			take = n;
		p->seg_off += take;
		n -= take;
		if (p->seg_off == sg->len) {
			p->seg++;
			p->seg_off = 0;
		}
		if (p->seg == p->f.nsegs) {
			if (p->state == GMC_PART_WRITING)
				p->state = GMC_PART_SENT;
			dequeue(c, p);
		}
	}
}

/* ---- closing ---- */

static void maybe_reap(gmc_conn *c)
{
	if (c->state == GMC_CONN_CLOSING && c->closed && !c->sending &&
	    !c->receiving && c->in_calls == 0)
		gmc_timer_arm(c->dm->cl->timer, &c->reap_ev, 0);
}

void gmc_conn_fail(gmc_conn *c, int code, const char *msg, gmc_todo *t)
{
	char lost[GMC_CLIENT_ERRLEN];
	gmc_part *p, *next;

	if (c->state != GMC_CONN_UP)
		return;
	c->state = GMC_CONN_CLOSING;
	c->closed = false;
	c->want_close = true;
	gmc_conn_later(c, t);
	/* A stream that carried replies is redialed at once. */
	if (c->rd.frames > 0)
		c->backoff_ms = 0;
	/* A refusal the daemon sent keeps its own words. */
	if (c->refused == GM_OK || code == c->refused)
		snprintf(c->why, sizeof(c->why), "%s", msg);
	if (code == GM_ETRANSPORT)
		snprintf(lost, sizeof(lost),
			 "connection lost before the reply; the request was "
			 "not resent (%s)",
			 msg);
	else
		snprintf(lost, sizeof(lost), "%s", msg);
	while ((p = c->written) != NULL)
		gmc_part_over(p, c->refused ? c->refused : GM_ETRANSPORT,
			      c->refused ? c->why : lost, t);
	/* Frames half written end with this stream; the others wait for
	 * the next, unless the daemon refused for a reason that a redial
	 * does not change. */
	for (p = c->head; p != NULL;) {
		next = p->next;
		if (p->state != GMC_PART_QUEUED) {
			dequeue(c, p);
		} else if (c->refused == GM_EVERSION ||
			   c->refused == GM_EACCES) {
			/* Ending a call may take more of the queue with it. */
			gmc_part_over(p, c->refused, c->why, t);
			next = c->head;
		}
		p = next;
	}
	gmc_read_reset(&c->rd);
	gmc_daemon_requeue(c, t);
}

static void redial_later(gmc_conn *c)
{
	c->dial_waiting = true;
	gmc_timer_arm(c->dm->cl->timer, &c->dial_ev,
		      gmc_timer_now() + ms_ns(c->backoff_ms));
}

static void reap_cb(void *arg)
{
	gmc_conn *c = arg;
	gemmd_client *cl = c->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);
	gm_stream *s;

	pthread_mutex_lock(&cl->mu);
	s = c->s;
	c->s = NULL;
	pthread_mutex_unlock(&cl->mu);
	gm_stream_free(s);
	pthread_mutex_lock(&cl->mu);
	c->state = GMC_CONN_DOWN;
	c->refused = GM_OK;
	if (!c->dm->stopping && c->backoff_ms == 0)
		gmc_conn_dial(c, &t);
	else if (!c->dm->stopping)
		redial_later(c);
	pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

/* ---- callbacks ---- */

static unsigned next_backoff(unsigned ms)
{
	ms = ms ? 2 * ms : GMC_CONN_BACKOFF_MS;
	return ms < GMC_CONN_BACKOFF_MAX_MS ? ms : GMC_CONN_BACKOFF_MAX_MS;
}

/* The dial failed: the parts still queued on c fail with why. */
static void fail_queued(gmc_conn *c, gmc_todo *t)
{
	char msg[GMC_CLIENT_ERRLEN];

	snprintf(msg, sizeof(msg), "no connection to the daemon: %.*s",
		 (int)(sizeof(msg) - 32), c->why[0] ? c->why : "no dial");
	/* Ending a call may take more of the queue with it. */
	while (c->head != NULL)
		gmc_part_over(c->head, GM_ETRANSPORT, msg, t);
}

static void dial_cb(void *arg, int rv, gm_stream *s, const char *msg)
{
	gmc_conn *c = arg;
	gemmd_client *cl = c->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	pthread_mutex_lock(&cl->mu);
	c->dials++;
	if (c->dm->stopping || rv != GM_OK) {
		c->state = GMC_CONN_DOWN;
		if (rv != GM_OK && rv != GM_ECANCELED)
			snprintf(c->why, sizeof(c->why), "%s", msg);
		c->backoff_ms = next_backoff(c->backoff_ms);
		if (!c->dm->stopping) {
			redial_later(c);
			gmc_daemon_requeue(c, &t);
			if (!c->dm->lazy)
				fail_queued(c, &t);
		}
		pthread_cond_broadcast(&cl->cv);
		pthread_mutex_unlock(&cl->mu);
		gm_stream_free(s);
		gmc_todo_run(&t);
		return;
	}
	c->state = GMC_CONN_UP;
	gm_stream_set_poller(s, cl->poller);
	c->s = s;
	c->closed = false;
	c->refused = GM_OK;
	gmc_read_reset(&c->rd);
	c->want_recv = true;
	c->want_send = c->head != NULL;
	gmc_conn_later(c, &t);
	pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

static void stream_lost(gmc_conn *c, int rv, gmc_todo *t)
{
	char why[GMC_CLIENT_ERRLEN];

	if (rv == GM_ECANCELED || c->state != GMC_CONN_UP)
		return;
	snprintf(why, sizeof(why), "%s",
		 *gm_stream_error(c->s) ? gm_stream_error(c->s)
					: "connection closed");
	gmc_conn_fail(c, GM_ETRANSPORT, why, t);
}

static void send_cb(gm_io *io, int rv, size_t n)
{
	gmc_conn *c = io->arg;
	gemmd_client *cl = c->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	pthread_mutex_lock(&cl->mu);
	c->sending = false;
	/* After a failure the parts it wrote are gone from the queue. */
	if (rv == GM_OK && c->state == GMC_CONN_UP)
		advance(c, n);
	for (unsigned i = 0; i < c->nw; i++) {
		if (c->wpins[i] != NULL)
			gmc_call_unpin(c->wpins[i], &t);
		gmc_part_drop(c->wparts[i]);
	}
	c->nw = 0;
	if (rv != GM_OK)
		stream_lost(c, rv, &t);
	else if (c->state == GMC_CONN_UP && c->head != NULL) {
		c->want_send = true;
		gmc_conn_later(c, &t);
	}
	maybe_reap(c);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

static void recv_cb(gm_io *io, int rv, size_t n)
{
	gmc_conn *c = io->arg;
	gemmd_client *cl = c->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	pthread_mutex_lock(&cl->mu);
	c->receiving = false;
	if (rv == GM_OK && c->state == GMC_CONN_UP)
		gmc_read_got(c, n, &t);
	if (c->rpin != NULL) {
		gmc_call_unpin(c->rpin, &t);
		c->rpin = NULL;
	}
	if (rv != GM_OK)
		stream_lost(c, rv, &t);
	else if (c->state == GMC_CONN_UP) {
		c->want_recv = true;
		gmc_conn_later(c, &t);
	}
	maybe_reap(c);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

void gmc_conn_run(gmc_conn *c, gmc_todo *t)
{
	gemmd_client *cl = c->dm->cl;
	bool dial, send, recv, close;
	gm_stream *s;

	pthread_mutex_lock(&cl->mu);
	c->on_run = false;
	dial = c->want_dial && !c->dm->stopping;
	if (c->want_dial && c->dm->stopping) {
		c->state = GMC_CONN_DOWN; /* gemmd_close waits for it */
		pthread_cond_broadcast(&cl->cv);
	}
	close = c->want_close;
	send = c->want_send && c->state == GMC_CONN_UP && !c->sending &&
	       plan_send(c);
	recv = c->want_recv && c->state == GMC_CONN_UP && !c->receiving;
	c->want_dial = c->want_close = c->want_send = c->want_recv = false;
	c->sending |= send;
	if (recv) {
		gmc_read_plan(c);
		c->receiving = true;
	}
	if (dial)
		c->dial_starting++;
	c->in_calls += (unsigned)send + (unsigned)recv;
	s = c->s;
	pthread_mutex_unlock(&cl->mu);
	(void)t;
	if (close) {
		gm_stream_close(s);
		pthread_mutex_lock(&cl->mu);
		c->closed = true;
		maybe_reap(c);
		pthread_mutex_unlock(&cl->mu);
	}
	if (send)
		gm_stream_send(s, &c->wio);
	if (recv)
		gm_stream_recv(s, &c->rio);
	if (send || recv) {
		pthread_mutex_lock(&cl->mu);
		c->in_calls -= (unsigned)send + (unsigned)recv;
		maybe_reap(c);
		pthread_mutex_unlock(&cl->mu);
	}
	if (dial) {
		gm_dialer_dial(c->dialer, dial_cb, c);
		pthread_mutex_lock(&cl->mu);
		c->dial_starting--;
		pthread_cond_broadcast(&cl->cv);
		pthread_mutex_unlock(&cl->mu);
	}
}

void gmc_conn_shutdown(gmc_conn *c)
{
	gemmd_client *cl = c->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	gmc_timer_cancel(cl->timer, &c->dial_ev);
	pthread_mutex_lock(&cl->mu);
	while (c->dial_starting > 0)
		pthread_cond_wait(&cl->cv, &cl->mu);
	pthread_mutex_unlock(&cl->mu);
	/* A dial in flight ends (its stream, if any, freed by dial_cb). */
	gm_dialer_free(c->dialer);
	c->dialer = NULL;
	pthread_mutex_lock(&cl->mu);
	gmc_conn_fail(c, GM_ECANCELED, "the client closed", &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
	pthread_mutex_lock(&cl->mu);
	while (c->state != GMC_CONN_DOWN)
		pthread_cond_wait(&cl->cv, &cl->mu);
	pthread_mutex_unlock(&cl->mu);
	gmc_read_free(&c->rd);
}
