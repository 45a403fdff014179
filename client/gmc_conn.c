/*
 * gmc_conn.c - a connection slot: dialing, the writer, closing and
 * freeing its stream; see gmc_conn.h.
 */
#include "gmc_conn.h"

#include <stdio.h>
#include <string.h>

#include "gmc_call.h"
#include "gmc_tell.h"

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

int gmc_conn_init(gmc_conn *c, gmc_slots *sl, unsigned index, const char *url,
		  const gm_tls_ctx *tls, char *msg, size_t msglen)
{
	int rv;

	memset(c, 0, sizeof(*c));
	c->sl = sl;
	c->index = index;
	c->q.total = &sl->work;
	c->wio.done = send_cb;
	c->wio.arg = c;
	c->rio.done = recv_cb;
	c->rio.arg = c;
	gmc_tev_init(&c->dial_ev, dial_ev_cb, c);
	gmc_tev_init(&c->reap_ev, reap_cb, c);
	if ((rv = gmc_read_init(&c->rd, sl->cl, c, &c->refused, c->why,
				sizeof(c->why))) != GM_OK) {
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

void gmc_conn_dial(gmc_conn *c, gmc_todo *t)
{
	if (c->state != GMC_CONN_DOWN || c->dial_waiting || c->sl->stopping)
		return;
	c->state = GMC_CONN_DIALING;
	c->want_dial = true;
	gmc_conn_later(c, t);
}

static void dial_ev_cb(void *arg)
{
	gmc_conn *c = arg;
	gemmd_client *cl = c->sl->cl;
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
	gmc_part_enqueue(&c->q, p);
	if (c->state == GMC_CONN_UP) {
		c->want_send = true;
		gmc_conn_later(c, t);
		return;
	}
	if (c->dial_waiting && !c->sl->lazy) {
		/* A request would fail at the next dial: try it now. */
		gmc_timer_disarm(c->sl->cl->timer, &c->dial_ev);
		c->dial_waiting = false;
	}
	gmc_conn_dial(c, t);
}

/* ---- the writer ---- */

/* Takes what the next send writes from the head of the queue: up to
 * GM_IO_IOV_MAX pieces, holding their parts and pinning the calls whose
 * memory they are. */
static bool plan_send(gmc_conn *c)
{
	gm_io *io = &c->wio;
	bool more = true;

	io->niov = 0;
	c->nw = 0;
	for (gmc_part *p = c->q.head; p && more && io->niov < GM_IO_IOV_MAX;
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
		gmc_part_mark_written(p);
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

	while (n > 0 && (p = c->q.head) != NULL) {
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
			gmc_part_dequeue(p);
		}
	}
}

/* ---- the slots of a daemon ---- */

unsigned gmc_conn_order(const gmc_slots *sl, unsigned *order)
{
	for (unsigned i = 0; i < sl->n; i++) {
		unsigned j = i;

		for (; j > 0; j--) {
			const gmc_conn *a = &sl->conns[order[j - 1]],
				       *b = &sl->conns[i];
			bool aup = a->state == GMC_CONN_UP,
			     bup = b->state == GMC_CONN_UP;

			if (aup > bup || (aup == bup && a->q.work <= b->q.work))
				break;
			order[j] = order[j - 1];
		}
		order[j] = i;
	}
	return sl->n;
}

gmc_conn *gmc_conn_pick(gmc_slots *sl)
{
	unsigned order[GMC_CONN_SLOTS_MAX];

	gmc_conn_order(sl, order);
	return &sl->conns[order[0]];
}

/* Moves the parts queued on c and not written to another slot of its
 * daemon that is up, if there is one. */
static void requeue(gmc_conn *c, gmc_todo *t)
{
	gmc_conn *to = gmc_conn_pick(c->sl);
	gmc_part *p, *next;

	if (to == c || to->state != GMC_CONN_UP)
		return;
	for (p = c->q.head; p != NULL; p = next) {
		next = p->next;
		if (p->state != GMC_PART_QUEUED)
			continue;
		gmc_part_dequeue(p);
		c->q.work -= p->work;
		c->sl->work -= p->work;
		gmc_conn_queue(to, p, t);
	}
}

/* ---- closing ---- */

static void maybe_reap(gmc_conn *c)
{
	if (c->state == GMC_CONN_CLOSING && c->closed && !c->sending &&
	    !c->receiving && c->in_calls == 0)
		gmc_timer_arm(c->sl->cl->timer, &c->reap_ev, 0);
}

void gmc_conn_fail(gmc_conn *c, int code, const char *msg, gmc_todo *t)
{
	char lost[GMC_ERRLEN];
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
	while ((p = c->q.written) != NULL)
		gmc_part_over(p, c->refused ? c->refused : GM_ETRANSPORT,
			      c->refused ? c->why : lost, t);
	/* Frames half written end with this stream; the others wait for
	 * the next, unless the daemon refused for a reason that a redial
	 * does not change. */
	for (p = c->q.head; p != NULL;) {
		next = p->next;
		if (p->state != GMC_PART_QUEUED) {
			gmc_part_dequeue(p);
		} else if (c->refused == GM_EVERSION ||
			   c->refused == GM_EACCES) {
			/* Ending a call may take more of the queue with it. */
			gmc_part_over(p, c->refused, c->why, t);
			next = c->q.head;
		}
		p = next;
	}
	gmc_read_reset(&c->rd);
	requeue(c, t);
}

/* Whether c is a slot dialed on demand with nothing queued: then it
 * stays down until a part is queued on it. */
static bool idle_on_demand(const gmc_conn *c)
{
	return c->index >= c->sl->on_demand && c->q.head == NULL;
}

static void redial_later(gmc_conn *c)
{
	c->dial_waiting = true;
	gmc_timer_arm(c->sl->cl->timer, &c->dial_ev,
		      gmc_timer_now() + ms_ns(c->backoff_ms));
}

static void reap_cb(void *arg)
{
	gmc_conn *c = arg;
	gemmd_client *cl = c->sl->cl;
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
	if (!c->sl->stopping && !idle_on_demand(c)) {
		if (c->backoff_ms == 0)
			gmc_conn_dial(c, &t);
		else
			redial_later(c);
	}
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
	char msg[GMC_ERRLEN];

	snprintf(msg, sizeof(msg), "no connection to the daemon: %.*s",
		 (int)(sizeof(msg) - 32), c->why[0] ? c->why : "no dial");
	/* Ending a call may take more of the queue with it. */
	while (c->q.head != NULL)
		gmc_part_over(c->q.head, GM_ETRANSPORT, msg, t);
}

static void dial_cb(void *arg, int rv, gm_stream *s, const char *msg)
{
	gmc_conn *c = arg;
	gemmd_client *cl = c->sl->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	pthread_mutex_lock(&cl->mu);
	c->dials++;
	if (c->sl->stopping || rv != GM_OK) {
		c->state = GMC_CONN_DOWN;
		if (rv != GM_OK && rv != GM_ECANCELED)
			snprintf(c->why, sizeof(c->why), "%s", msg);
		c->backoff_ms = next_backoff(c->backoff_ms);
		if (!c->sl->stopping) {
			bool demand = c->index >= c->sl->on_demand;

			if (!demand)
				redial_later(c);
			requeue(c, &t);
			if (!c->sl->lazy)
				fail_queued(c, &t);
			if (demand && !idle_on_demand(c))
				redial_later(c);
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
	c->want_send = c->q.head != NULL;
	gmc_conn_later(c, &t);
	pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

static void stream_lost(gmc_conn *c, int rv, gmc_todo *t)
{
	char why[GMC_ERRLEN];

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
	gemmd_client *cl = c->sl->cl;
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
	else if (c->state == GMC_CONN_UP && c->q.head != NULL) {
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
	gemmd_client *cl = c->sl->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	pthread_mutex_lock(&cl->mu);
	c->receiving = false;
	if (rv == GM_OK && c->state == GMC_CONN_UP &&
	    (rv = gmc_read_got(&c->rd, n, &t)) != GM_OK) {
		gmc_conn_fail(c, rv, c->rd.fail, &t);
		rv = GM_OK; /* the stream is closing: not lost again */
	}
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
	gemmd_client *cl = c->sl->cl;
	bool dial, send, recv, close;
	gm_stream *s;

	pthread_mutex_lock(&cl->mu);
	c->on_run = false;
	dial = c->want_dial && !c->sl->stopping;
	if (c->want_dial && c->sl->stopping) {
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
		gmc_read_plan(&c->rd, &c->rio, &c->rpin);
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
	gemmd_client *cl = c->sl->cl;
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

void gmc_todo_run(gmc_todo *t)
{
	gmc_conn *c;
	gmc_call *k;

	/* Callers first: a reply's caller is told before its connection
	 * reads again, which costs a few us (nng arms the socket). */
	for (;;) {
		if ((k = t->tell) != NULL) {
			t->tell = k->next_tell;
			gmc_tell(k);
		} else if ((c = t->run) != NULL) {
			t->run = c->next_run;
			gmc_conn_run(c, t);
		} else {
			break;
		}
	}
}
