/*
 * gm_crew.c - the threads of gm_crew.h.
 *
 * A call hands one ticket per thread out on one queue (gm_handoff.h)
 * and waits for every ticket to come back on another. A thread that
 * takes a ticket takes items until the counter runs past n, and gives
 * the ticket back; one that takes two tickets of a call finds nothing
 * left with the second. The call returns once all tickets are back, so
 * none is still out when the next call sets its arguments: a thread
 * that woke late cannot take items of a later call with the arguments
 * of this one.
 */
#include "gm_crew.h"

#include <stddef.h>
#include <stdlib.h>

#include "gm_error.h"
#include "gm_handoff.h"

struct ticket {
	struct ticket *next;
};

struct gm_crew {
	pthread_mutex_t mu;
	gm_handoff out;	 /* a call's tickets; closed: stop */
	gm_handoff back; /* the tickets of threads done with the call */
	struct ticket *tickets;
	void **order; /* &tickets[i], as a push takes them */
	pthread_t *threads;
	unsigned nthreads; /* started */
	int queues;	   /* out and back are made */
	/* set under mu before a call's tickets go out, read-only during
	 * it: */
	gm_crew_fn fn;
	void *arg;
	uint64_t n;
	uint64_t next; /* atomic: the next item */
};

static void drain(gm_crew *c)
{
	uint64_t i;

	while ((i = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED)) < c->n)
		c->fn(c->arg, i);
}

static void *crew_main(void *arg)
{
	gm_crew *c = arg;
	struct ticket *t;

	pthread_mutex_lock(&c->mu);
	while ((t = gm_handoff_pop_wait(&c->out)) != NULL) {
		pthread_mutex_unlock(&c->mu);
		drain(c);
		pthread_mutex_lock(&c->mu);
		gm_handoff_push(&c->back, t);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static int make_queues(gm_crew *c)
{
	size_t link = offsetof(struct ticket, next);

	if (gm_handoff_init(&c->out, &c->mu, link, NULL) != 0)
		return GM_ENOMEM;
	if (gm_handoff_init(&c->back, &c->mu, link, NULL) != 0) {
		gm_handoff_destroy(&c->out);
		return GM_ENOMEM;
	}
	c->queues = 1;
	return GM_OK;
}

int gm_crew_open(unsigned threads, gm_crew **out)
{
	unsigned slots = threads ? threads : 1, i;
	gm_crew *c;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return GM_ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	c->threads = calloc(slots, sizeof(*c->threads));
	c->tickets = calloc(slots, sizeof(*c->tickets));
	c->order = calloc(slots, sizeof(*c->order));
	if (c->threads == NULL || c->tickets == NULL || c->order == NULL ||
	    make_queues(c) != GM_OK) {
		gm_crew_close(c);
		return GM_ENOMEM;
	}
	for (i = 0; i < slots; i++)
		c->order[i] = &c->tickets[i];
	for (; c->nthreads < threads; c->nthreads++)
		if (pthread_create(&c->threads[c->nthreads], NULL, crew_main,
				   c) != 0) {
			gm_crew_close(c);
			return GM_ENOMEM;
		}
	*out = c;
	return GM_OK;
}

void gm_crew_close(gm_crew *c)
{
	unsigned i;

	if (c == NULL)
		return;
	if (c->queues) {
		pthread_mutex_lock(&c->mu);
		gm_handoff_close(&c->out);
		pthread_mutex_unlock(&c->mu);
		for (i = 0; i < c->nthreads; i++)
			pthread_join(c->threads[i], NULL);
		gm_handoff_destroy(&c->back);
		gm_handoff_destroy(&c->out);
	}
	pthread_mutex_destroy(&c->mu);
	free(c->order);
	free(c->tickets);
	free(c->threads);
	free(c);
}

unsigned gm_crew_size(const gm_crew *c)
{
	return c->nthreads;
}

void gm_crew_run(gm_crew *c, gm_crew_fn fn, void *arg, uint64_t n)
{
	uint64_t i;

	if (n <= 1 || c->nthreads == 0) {
		for (i = 0; i < n; i++)
			fn(arg, i);
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->fn = fn;
	c->arg = arg;
	c->n = n;
	c->next = 0;
	gm_handoff_push_all(&c->out, c->order, c->nthreads);
	pthread_mutex_unlock(&c->mu);
	drain(c);
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < c->nthreads; i++)
		(void)gm_handoff_pop_wait(&c->back);
	pthread_mutex_unlock(&c->mu);
}
