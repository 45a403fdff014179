/*
 * gm_poolq.c - the FIFO of requests waiting for pool room; see
 * gm_poolq.h.
 */
#include "gm_poolq.h"

#include <stdlib.h>

#include "gm_error.h"

struct gm_poolq {
	gm_pool *pool;
	gm_poolq_wait *head, *tail;
	uint64_t n, bytes;
	int serving; /* in serve(): a nested call leaves it to the loop */
	gm_poolq_fn fn;
	void *arg;
};

int gm_poolq_create(gm_pool *p, gm_poolq_fn fn, void *arg, gm_poolq **out)
{
	gm_poolq *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return GM_ENOMEM;
	q->pool = p;
	q->fn = fn;
	q->arg = arg;
	*out = q;
	return GM_OK;
}

void gm_poolq_destroy(gm_poolq *q)
{
	free(q);
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
}

/* Grants the waiters at the head while they fit. A grant's callback
 * may free a slab (a request all of whose jobs fail at once): the
 * running loop then serves what that made room for, without
 * recursing. */
static void serve(gm_poolq *q)
{
	gm_poolq_wait *w;

	if (q->serving)
		return;
	q->serving = 1;
	while ((w = q->head) != NULL &&
	       gm_pool_alloc(q->pool, w->bytes, &w->slab) == GM_OK) {
		unlink_wait(q, w);
		q->fn(w, q->arg);
	}
	q->serving = 0;
}

int gm_poolq_get(gm_poolq *q, gm_poolq_wait *w)
{
	int rv;

	w->slab = NULL;
	w->next = w->prev = NULL;
	if (w->bytes > gm_pool_size(q->pool))
		return GM_ETOOBIG;
	if (q->head == NULL &&
	    (rv = gm_pool_alloc(q->pool, w->bytes, &w->slab)) != GM_ENOMEM)
		return rv == GM_OK ? GM_OK : GM_ETOOBIG;
	w->prev = q->tail;
	if (q->tail != NULL)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	q->n++;
	q->bytes += w->bytes;
	return GM_EBUSY;
}

void gm_poolq_cancel(gm_poolq *q, gm_poolq_wait *w)
{
	int was_head = q->head == w;

	unlink_wait(q, w);
	if (was_head)
		serve(q);
}

void gm_poolq_put(gm_poolq *q, void *slab)
{
	gm_pool_free(q->pool, slab);
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
