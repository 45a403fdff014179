/*
 * gm_poolq.c - the queue of requests waiting for pool room; see
 * gm_poolq.h.
 */
#include "gm_poolq.h"

#include <stdbool.h>
#include <stdlib.h>

#include "gm_clock.h"
#include "gm_error.h"

struct gm_poolq {
	gm_pool *pool;
	gm_poolq_limits lim;
	gm_poolq_wait *head, *tail;
	uint64_t n, bytes, bypasses;
	uint64_t held; /* granted, of waiters with a principal */
	/* The two principals seen last (asking for room or giving it back),
	 * most recent first, and when: the last time any principal but a
	 * given one was seen is always here. Each is held (a reference on
	 * its share), since principals are told apart by their shares'
	 * addresses: one freed when its last connection closed could come
	 * back as another share of the same principal, counted as a second
	 * one for pool_bypass_ms, or its memory be reused by another
	 * principal's, taken for the first. */
	struct {
		gm_share *who;
		double us;
	} seen[2];
	gm_shares *shares; /* of the shares held in seen[] */
	int serving;	   /* in serve(): a nested call leaves it to the loop */
	gm_poolq_fn fn;
	void *arg;
};

int gm_poolq_create(gm_pool *p, gm_shares *shares, const gm_poolq_limits *lim,
		    gm_poolq_fn fn, void *arg, gm_poolq **out)
{
	gm_poolq *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return GM_ENOMEM;
	q->pool = p;
	q->shares = shares;
	q->lim = *lim;
	q->fn = fn;
	q->arg = arg;
	*out = q;
	return GM_OK;
}

void gm_poolq_destroy(gm_poolq *q)
{
	if (q == NULL)
		return;
	gm_shares_release(q->shares, q->seen[0].who);
	gm_shares_release(q->shares, q->seen[1].who);
	free(q);
}

static void link_wait(gm_poolq *q, gm_poolq_wait *w)
{
	w->next = NULL;
	w->prev = q->tail;
	if (q->tail != NULL)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	q->n++;
	q->bytes += w->bytes;
	if (w->who != NULL)
		w->who->waiting++;
}

static void unlink_wait(gm_poolq *q, gm_poolq_wait *w)
{
	if (w->prev != NULL)
		w->prev->next = w->next;
	else
		q->head = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	else
		q->tail = w->prev;
	w->next = w->prev = NULL;
	q->n--;
	q->bytes -= w->bytes;
	if (w->who != NULL)
		w->who->waiting--;
}

/* Whether w keeps its principal within its share of the pool. */
static bool within_share(const gm_poolq *q, const gm_poolq_wait *w)
{
	const gm_share *s = w->who;

	return s == NULL || q->lim.share_bytes == 0 ||
	       s->pool + w->bytes <= q->lim.share_bytes;
}

/* who asked for room or gave it back now. */
static void saw(gm_poolq *q, gm_share *who, double now)
{
	if (who == NULL)
		return;
	if (q->seen[0].who != who) {
		gm_shares_release(q->shares, q->seen[1].who);
		q->seen[1] = q->seen[0];
		q->seen[0].who = gm_share_hold(who);
	}
	q->seen[0].us = now;
}

/* Whether s has the pool to itself: no other principal holds room or
 * waits for it (w, s's, is counted as waiting), nor asked for or gave
 * back any within pool_bypass_ms. A client that runs one request at a
 * time holds nothing between two of them: without the last, another
 * would take the whole pool in that gap. */
static bool alone(const gm_poolq *q, const gm_share *s, double now)
{
	int other = q->seen[0].who != s ? 0 : 1;

	return q->n == s->waiting && q->held == s->pool &&
	       (q->seen[other].who == NULL ||
		now - q->seen[other].us >= q->lim.bypass_ms * 1e3);
}

/* Whether w may be granted when it fits: within its principal's share,
 * or its principal holds nothing, or has the pool to itself. */
static bool may_take(const gm_poolq *q, const gm_poolq_wait *w, double now)
{
	return within_share(q, w) || w->who->pool == 0 || alone(q, w->who, now);
}

/* Whether w, which does not fit, may be passed by later ones: for a
 * while, and always when it would take its principal past its share.
 * Such a request goes when the room it needs is free, but never holds
 * the others back for it: that is how one client would hold the pool
 * hostage, one large request after another, each waited for. */
static bool passable(const gm_poolq *q, const gm_poolq_wait *w, double now)
{
	return !within_share(q, w) ||
	       (w->passed < q->lim.bypass_max &&
		now - w->since_us < q->lim.bypass_ms * 1e3);
}

/* The first waiter that may go now, its slab taken, or NULL: waiters
 * that may not take more now are skipped, those that do not fit are
 * passed while they may be, each counting the pass. */
static gm_poolq_wait *take_next(gm_poolq *q)
{
	double now = gm_clock_now_us();
	gm_poolq_wait *w;

	for (w = q->head; w != NULL; w = w->next) {
		if (!may_take(q, w, now))
			continue;
		if (gm_pool_alloc(q->pool, w->bytes, &w->slab) == GM_OK)
			break;
		if (!passable(q, w, now))
			return NULL;
	}
	if (w == NULL)
		return NULL;
	for (gm_poolq_wait *x = q->head; x != w; x = x->next)
		if (may_take(q, x, now)) {
			x->passed++;
			q->bypasses++;
		}
	return w;
}

static void grant(gm_poolq *q, gm_poolq_wait *w)
{
	unlink_wait(q, w);
	if (w->who != NULL) {
		w->who->pool += w->bytes;
		q->held += w->bytes;
	}
}

/* Grants the waiters that may go, one by one. A grant's callback may
 * free a slab (a request all of whose jobs fail at once): the running
 * loop then serves what that made room for, without recursing. */
static void serve(gm_poolq *q)
{
	gm_poolq_wait *w;

	if (q->serving)
		return;
	q->serving = 1;
	while ((w = take_next(q)) != NULL) {
		grant(q, w);
		q->fn(w, q->arg);
	}
	q->serving = 0;
}

int gm_poolq_get(gm_poolq *q, gm_poolq_wait *w)
{
	gm_poolq_wait *first;

	w->slab = NULL;
	w->passed = 0;
	w->since_us = gm_clock_now_us();
	if (w->bytes > gm_pool_size(q->pool))
		return GM_ETOOBIG;
	saw(q, w->who, w->since_us);
	/* Queued first, so that the rules see it among the others; it goes
	 * at once when they let it. */
	link_wait(q, w);
	if (q->serving)
		return GM_EBUSY; /* the running serve() sees it next */
	if ((first = take_next(q)) == w) {
		grant(q, w);
		return GM_OK;
	}
	if (first != NULL) {
		/* One before w may go: cannot happen while serve() runs after
		 * every put and cancel, but never leak its slab. */
		gm_pool_free(q->pool, first->slab);
		first->slab = NULL;
	}
	return GM_EBUSY;
}

void gm_poolq_cancel(gm_poolq *q, gm_poolq_wait *w)
{
	unlink_wait(q, w);
	serve(q);
}

void gm_poolq_put(gm_poolq *q, gm_poolq_wait *w)
{
	gm_pool_free(q->pool, w->slab);
	if (w->who != NULL) {
		w->who->pool -= w->bytes;
		q->held -= w->bytes;
		saw(q, w->who, gm_clock_now_us());
	}
	w->slab = NULL;
	serve(q);
}

uint64_t gm_poolq_waiting(const gm_poolq *q)
{
	return q->n;
}

uint64_t gm_poolq_waiting_bytes(const gm_poolq *q)
{
	return q->bytes;
}

uint64_t gm_poolq_bypasses(const gm_poolq *q)
{
	return q->bypasses;
}
