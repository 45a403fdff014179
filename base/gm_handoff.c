/*
 * gm_handoff.c - an intrusive FIFO under its owner's lock; see
 * gm_handoff.h. Consumers sleep on one condition variable; the stamp
 * lets one that polls see a push without taking the lock.
 */
#include "gm_handoff.h"

#include <errno.h>

static void **link_of(const gm_handoff *q, const void *item)
{
	return (void **)((char *)item + q->off);
}

static void bump(gm_handoff *q)
{
	__atomic_add_fetch(&q->stamp, 1, __ATOMIC_RELEASE);
}

/* Wakes n consumers: those asleep, or the owner's. */
static void wake(gm_handoff *q, size_t n)
{
	if (q->wake != NULL && !q->polled)
		q->wake(q->wake_arg);
	if (q->sleepers == 0)
		return;
	if (n >= q->sleepers) {
		pthread_cond_broadcast(&q->cv);
		return;
	}
	while (n-- > 0)
		pthread_cond_signal(&q->cv);
}

int gm_handoff_init(gm_handoff *q, pthread_mutex_t *mu, size_t link_off,
		    gm_spin *spin)
{
	pthread_condattr_t ca;
	int rv;

	*q = (gm_handoff){.mu = mu, .off = link_off, .spin = spin};
	if ((rv = pthread_condattr_init(&ca)) != 0)
		return rv;
	if ((rv = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) == 0)
		rv = pthread_cond_init(&q->cv, &ca);
	pthread_condattr_destroy(&ca);
	return rv;
}

void gm_handoff_destroy(gm_handoff *q)
{
	pthread_cond_destroy(&q->cv);
}

void gm_handoff_set_wake(gm_handoff *q, void (*fn)(void *arg), void *arg)
{
	q->wake = fn;
	q->wake_arg = arg;
}

static void append(gm_handoff *q, void *item)
{
	*link_of(q, item) = NULL;
	if (q->tail != NULL)
		*link_of(q, q->tail) = item;
	else
		q->head = item;
	q->tail = item;
}

bool gm_handoff_push(gm_handoff *q, void *item)
{
	return gm_handoff_push_all(q, &item, 1);
}

bool gm_handoff_push_all(gm_handoff *q, void *const *items, size_t n)
{
	if (q->closed)
		return false;
	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		append(q, items[i]);
	bump(q);
	wake(q, n);
	return true;
}

bool gm_handoff_insert(gm_handoff *q, void *prev, void *item)
{
	void **at;

	if (q->closed)
		return false;
	at = prev != NULL ? link_of(q, prev) : &q->head;
	*link_of(q, item) = *at;
	*at = item;
	if (q->tail == prev)
		q->tail = item;
	bump(q);
	wake(q, 1);
	return true;
}

void *gm_handoff_pop(gm_handoff *q)
{
	void *item = q->head;

	if (item != NULL)
		gm_handoff_unlink(q, NULL, item);
	return item;
}

void *gm_handoff_take_all(gm_handoff *q)
{
	void *list = q->head;

	q->head = q->tail = NULL;
	return list;
}

void *gm_handoff_first(const gm_handoff *q)
{
	return q->head;
}

void *gm_handoff_next(const gm_handoff *q, const void *item)
{
	return *link_of(q, item);
}

void gm_handoff_unlink(gm_handoff *q, void *prev, void *item)
{
	void **at = prev != NULL ? link_of(q, prev) : &q->head;

	*at = *link_of(q, item);
	if (q->tail == item)
		q->tail = prev;
	*link_of(q, item) = NULL;
}

void *gm_handoff_remove_if(gm_handoff *q, bool (*match)(void *item, void *key),
			   void *key)
{
	void *prev = NULL, *item;

	for (item = q->head; item != NULL;
	     prev = item, item = *link_of(q, item))
		if (match(item, key)) {
			gm_handoff_unlink(q, prev, item);
			return item;
		}
	return NULL;
}

static bool same(void *item, void *key)
{
	return item == key;
}

bool gm_handoff_remove(gm_handoff *q, void *item)
{
	return gm_handoff_remove_if(q, same, item) != NULL;
}

static bool ready(const gm_handoff *q)
{
	return q->head != NULL || q->kicked || q->closed;
}

/* What a poll watches: the stamp, moved since it was seen. */
struct watch {
	const gm_handoff *q;
	unsigned seen;
};

static bool moved(void *arg)
{
	struct watch *w = arg;

	return gm_handoff_stamp(w->q) != w->seen;
}

/* Under mu: polls an empty queue for spin_us, the lock dropped. */
static void poll_first(gm_handoff *q)
{
	struct watch w = {q, gm_handoff_stamp(q)};

	if (ready(q) || q->spin == NULL || q->spin->spin_us == 0)
		return;
	pthread_mutex_unlock(q->mu);
	(void)gm_spin_until(q->spin, moved, &w);
	pthread_mutex_lock(q->mu);
}

/* Sleeps until ready, or at when not NULL: false on the time. */
static bool sleep_until(gm_handoff *q, const struct timespec *at)
{
	int rv = 0;

	poll_first(q);
	while (!ready(q) && rv != ETIMEDOUT) {
		q->sleepers++;
		if (at == NULL)
			pthread_cond_wait(&q->cv, q->mu);
		else
			rv = pthread_cond_timedwait(&q->cv, q->mu, at);
		q->sleepers--;
	}
	q->kicked = false;
	return rv != ETIMEDOUT || q->head != NULL || q->closed;
}

void gm_handoff_wait(gm_handoff *q)
{
	(void)sleep_until(q, NULL);
}

bool gm_handoff_wait_until(gm_handoff *q, const struct timespec *at)
{
	return sleep_until(q, at);
}

void *gm_handoff_pop_wait(gm_handoff *q)
{
	gm_handoff_wait(q);
	return gm_handoff_pop(q);
}

void gm_handoff_kick(gm_handoff *q)
{
	q->kicked = true;
	bump(q);
	wake(q, 1);
}

void gm_handoff_close(gm_handoff *q)
{
	q->closed = true;
	bump(q);
	wake(q, q->sleepers);
}

bool gm_handoff_closed(const gm_handoff *q)
{
	return q->closed;
}

void gm_handoff_polled(gm_handoff *q, bool on)
{
	q->polled = on;
}

unsigned gm_handoff_stamp(const gm_handoff *q)
{
	return __atomic_load_n(&q->stamp, __ATOMIC_ACQUIRE);
}
