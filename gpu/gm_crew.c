/*
 * gm_crew.c - the threads of gm_crew.h.
 *
 * Each call bumps a generation number under the lock and broadcasts;
 * a thread that sees a new generation checks in (joined), takes items
 * until the counter runs past n, and checks out (busy). The caller
 * waits until every thread has joined the generation and none is still
 * copying, so a thread that woke late cannot take items of a later call
 * with the arguments of this one.
 */
#include "gm_crew.h"

#include <pthread.h>
#include <stdlib.h>

#include "gm_error.h"

struct gm_crew {
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* a new generation, or stop */
	pthread_cond_t done_cv; /* a thread checked out */
	pthread_t *threads;
	unsigned nthreads; /* started */
	/* guarded by mu: */
	unsigned gen;	 /* calls made */
	unsigned joined; /* threads that took the current generation */
	unsigned busy;	 /* of those, still taking items */
	int stop;
	/* set under mu before a generation starts, read-only during it: */
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
	unsigned seen = 0;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (c->gen == seen && !c->stop)
			pthread_cond_wait(&c->work_cv, &c->mu);
		if (c->stop)
			break;
		seen = c->gen;
		c->joined++;
		c->busy++;
		pthread_mutex_unlock(&c->mu);
		drain(c);
		pthread_mutex_lock(&c->mu);
		c->busy--;
		pthread_cond_signal(&c->done_cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int gm_crew_open(unsigned threads, gm_crew **out)
{
	gm_crew *c;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return GM_ENOMEM;
	if ((c->threads = calloc(threads ? threads : 1, sizeof(*c->threads))) ==
	    NULL) {
		free(c);
		return GM_ENOMEM;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->work_cv, NULL);
	pthread_cond_init(&c->done_cv, NULL);
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
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->work_cv);
	pthread_mutex_unlock(&c->mu);
	for (i = 0; i < c->nthreads; i++)
		pthread_join(c->threads[i], NULL);
	pthread_cond_destroy(&c->done_cv);
	pthread_cond_destroy(&c->work_cv);
	pthread_mutex_destroy(&c->mu);
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
	c->joined = 0;
	c->gen++;
	pthread_cond_broadcast(&c->work_cv);
	pthread_mutex_unlock(&c->mu);
	drain(c);
	pthread_mutex_lock(&c->mu);
	while (c->joined < c->nthreads || c->busy > 0)
		pthread_cond_wait(&c->done_cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}
