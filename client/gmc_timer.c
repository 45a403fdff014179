/*
 * gmc_timer.c - a timer thread over a binary heap of events; see
 * gmc_timer.h. The thread sleeps in a hand-off's wait (gm_handoff.h)
 * that carries no items: the heap is kept beside it under the same
 * lock, an event armed ahead of the thread's sleep kicks it, and
 * closing it stops the thread.
 */
#include "gmc_timer.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "gm_error.h"
#include "gm_handoff.h"

struct gmc_timer {
	pthread_mutex_t mu;
	gm_handoff q;		/* no items; kicked: the earliest changed */
	pthread_cond_t idle_cv; /* an event finished running */
	pthread_t thread;
	gmc_tev **heap;
	size_t n, cap;
	gmc_tev *running;
	/* While the thread sleeps: when it wakes on its own, UINT64_MAX
	 * when only a kick wakes it; 0 while it is awake, as it looks at
	 * the heap again before it sleeps. An event armed later than this
	 * needs no kick: a client whose calls each arm a deadline and
	 * cancel it wakes the thread once per deadline, not per call. */
	uint64_t sleep_until;
};

uint64_t gmc_timer_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec gmc_timer_in(int ms)
{
	uint64_t at = gmc_timer_now() + (uint64_t)ms * 1000000u;

	return (struct timespec){.tv_sec = (time_t)(at / 1000000000u),
				 .tv_nsec = (long)(at % 1000000000u)};
}

/* ---- the heap, under mu ---- */

static void place(gmc_timer *t, size_t i, gmc_tev *ev)
{
	t->heap[i] = ev;
	ev->slot = i;
}

static void sift_up(gmc_timer *t, size_t i)
{
	gmc_tev *ev = t->heap[i];

	while (i > 0 && t->heap[(i - 1) / 2]->when > ev->when) {
		place(t, i, t->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(t, i, ev);
}

static void sift_down(gmc_timer *t, size_t i)
{
	gmc_tev *ev = t->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= t->n)
			break;
		if (c + 1 < t->n && t->heap[c + 1]->when < t->heap[c]->when)
			c++;
		if (t->heap[c]->when >= ev->when)
			break;
		place(t, i, t->heap[c]);
		i = c;
	}
	place(t, i, ev);
}

static void heap_remove(gmc_timer *t, gmc_tev *ev)
{
	size_t i = ev->slot;

	ev->armed = false;
	if (--t->n == i)
		return;
	place(t, i, t->heap[t->n]);
	sift_down(t, i);
	sift_up(t, t->heap[i]->slot);
}

/* ---- the thread ---- */

/* Under mu: sleeps until the earliest event's time (forever when there
 * is none), an earlier one is armed, or t stops. */
static void sleep_for_next(gmc_timer *t)
{
	struct timespec ts;

	if (t->n == 0) {
		t->sleep_until = UINT64_MAX;
		gm_handoff_wait(&t->q);
	} else {
		t->sleep_until = t->heap[0]->when;
		ts = (struct timespec){(time_t)(t->sleep_until / 1000000000u),
				       (long)(t->sleep_until % 1000000000u)};
		(void)gm_handoff_wait_until(&t->q, &ts);
	}
	t->sleep_until = 0;
}

/* Under mu: runs ev, which is due, with the lock dropped. */
static void run(gmc_timer *t, gmc_tev *ev)
{
	heap_remove(t, ev);
	t->running = ev;
	pthread_mutex_unlock(&t->mu);
	ev->fn(ev->arg);
	pthread_mutex_lock(&t->mu);
	t->running = NULL;
	pthread_cond_broadcast(&t->idle_cv);
}

static void *timer_main(void *arg)
{
	gmc_timer *t = arg;

	pthread_mutex_lock(&t->mu);
	while (!gm_handoff_closed(&t->q)) {
		if (t->n > 0 && t->heap[0]->when <= gmc_timer_now())
			run(t, t->heap[0]);
		else
			sleep_for_next(t);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int gmc_timer_new(gmc_timer **out)
{
	gmc_timer *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return GM_ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	/* The link offset is never used: nothing is pushed. */
	if (gm_handoff_init(&t->q, &t->mu, 0, NULL) != 0) {
		pthread_mutex_destroy(&t->mu);
		free(t);
		return GM_ENOMEM;
	}
	pthread_cond_init(&t->idle_cv, NULL);
	if (pthread_create(&t->thread, NULL, timer_main, t) != 0) {
		pthread_cond_destroy(&t->idle_cv);
		gm_handoff_destroy(&t->q);
		pthread_mutex_destroy(&t->mu);
		free(t);
		return GM_ENOMEM;
	}
	*out = t;
	return GM_OK;
}

void gmc_timer_free(gmc_timer *t)
{
	if (t == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	gm_handoff_close(&t->q);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	for (size_t i = 0; i < t->n; i++)
		t->heap[i]->armed = false;
	free(t->heap);
	pthread_cond_destroy(&t->idle_cv);
	gm_handoff_destroy(&t->q);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

void gmc_tev_init(gmc_tev *ev, void (*fn)(void *arg), void *arg)
{
	*ev = (gmc_tev){.fn = fn, .arg = arg};
}

int gmc_timer_arm(gmc_timer *t, gmc_tev *ev, uint64_t when)
{
	int rv = GM_OK;

	pthread_mutex_lock(&t->mu);
	if (ev->armed)
		heap_remove(t, ev);
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		gmc_tev **h = realloc(t->heap, cap * sizeof(*h));

		if (h == NULL) {
			rv = GM_ENOMEM;
			goto out;
		}
		t->heap = h;
		t->cap = cap;
	}
	ev->when = when;
	ev->armed = true;
	place(t, t->n++, ev);
	sift_up(t, t->n - 1);
	if (t->heap[0] == ev && ev->when < t->sleep_until)
		gm_handoff_kick(&t->q);
out:
	pthread_mutex_unlock(&t->mu);
	return rv;
}

void gmc_timer_disarm(gmc_timer *t, gmc_tev *ev)
{
	pthread_mutex_lock(&t->mu);
	if (ev->armed)
		heap_remove(t, ev);
	pthread_mutex_unlock(&t->mu);
}

bool gmc_timer_is_self(gmc_timer *t)
{
	return pthread_equal(pthread_self(), t->thread);
}

void gmc_timer_cancel(gmc_timer *t, gmc_tev *ev)
{
	bool self = gmc_timer_is_self(t);

	pthread_mutex_lock(&t->mu);
	if (ev->armed)
		heap_remove(t, ev);
	while (!self && t->running == ev)
		pthread_cond_wait(&t->idle_cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
}
