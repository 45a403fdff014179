/*
 * gmc_workers.c - a queue of tasks and the threads that run them; see
 * gmc_workers.h.
 */
#include "gmc_workers.h"

#include <pthread.h>
#include <stdlib.h>

#include "gm_error.h"

struct gmc_workers {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	gmc_task *head, *tail, *urgent_tail; /* urgent ones lead */
	bool stop;
	unsigned n;
	pthread_t thread[];
};

static void *worker_main(void *arg)
{
	gmc_workers *w = arg;
	gmc_task *task;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->head == NULL && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if ((task = w->head) == NULL)
			break; /* stopping, and nothing left */
		w->head = task->next;
		if (w->head == NULL)
			w->tail = NULL;
		if (w->urgent_tail == task)
			w->urgent_tail = NULL;
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
	pthread_cond_init(&w->cv, NULL);
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
		gmc_task **at =
		    w->urgent_tail ? &w->urgent_tail->next : &w->head;

		task->next = *at;
		*at = task;
		if (w->tail == w->urgent_tail)
			w->tail = task;
		w->urgent_tail = task;
	} else {
		task->next = NULL;
		if (w->tail != NULL)
			w->tail->next = task;
		else
			w->head = task;
		w->tail = task;
	}
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void gmc_workers_free(gmc_workers *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->n; i++)
		pthread_join(w->thread[i], NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
