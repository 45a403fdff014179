/*
 * gmc_workers.c - a queue of tasks and the threads that run them; see
 * gmc_workers.h. The queue is a hand-off (gm_handoff.h) under the
 * workers' lock; urgent tasks go in after the last urgent one still
 * queued. Stopping does not close the queue, since a task running then
 * may queue more (a region made queues its copies): each thread leaves
 * once it finds the queue empty and stop set, and kicks the queue so
 * that the next one asleep wakes and does the same.
 */
#include "gmc_workers.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "gm_error.h"
#include "gm_handoff.h"

struct gmc_workers {
	pthread_mutex_t mu;
	gm_handoff q;	      /* of gmc_task, through next */
	gmc_task *urgent_end; /* the last urgent task queued, or NULL */
	bool stop;	      /* under mu */
	unsigned n;
	pthread_t thread[];
};

/* Under mu: the next task, waiting for one; NULL once w stops. */
static gmc_task *next_task(gmc_workers *w)
{
	gmc_task *task;

	while ((task = gm_handoff_pop(&w->q)) == NULL) {
		if (w->stop) {
			gm_handoff_kick(&w->q); /* the next thread asleep */
			return NULL;
		}
		gm_handoff_wait(&w->q);
	}
	if (w->urgent_end == task)
		w->urgent_end = NULL; /* urgent ones lead: none is left */
	return task;
}

static void *worker_main(void *arg)
{
	gmc_workers *w = arg;
	gmc_task *task;

	pthread_mutex_lock(&w->mu);
	while ((task = next_task(w)) != NULL) {
		pthread_mutex_unlock(&w->mu);
		task->fn(task);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int gmc_workers_new(unsigned n, gmc_workers **out)
{
	gmc_workers *w;

	n = n ? n : 1;
	if ((w = calloc(1, sizeof(*w) + n * sizeof(pthread_t))) == NULL)
		return GM_ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	if (gm_handoff_init(&w->q, &w->mu, offsetof(gmc_task, next), NULL) !=
	    0) {
		pthread_mutex_destroy(&w->mu);
		free(w);
		return GM_ENOMEM;
	}
	for (; w->n < n; w->n++)
		if (pthread_create(&w->thread[w->n], NULL, worker_main, w))
			break;
	if (w->n == 0) {
		gmc_workers_free(w);
		return GM_ENOMEM;
	}
	*out = w;
	return GM_OK;
}

void gmc_workers_push(gmc_workers *w, gmc_task *task, bool urgent)
{
	pthread_mutex_lock(&w->mu);
	if (urgent) {
		gm_handoff_insert(&w->q, w->urgent_end, task);
		w->urgent_end = task;
	} else {
		gm_handoff_push(&w->q, task);
	}
	pthread_mutex_unlock(&w->mu);
}

void gmc_workers_free(gmc_workers *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	gm_handoff_kick(&w->q);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->n; i++)
		pthread_join(w->thread[i], NULL);
	gm_handoff_destroy(&w->q);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
