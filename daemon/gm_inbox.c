/*
 * gm_inbox.c - a hand-off queue (gm_handoff.h) whose consumer is the
 * loop, woken by a uv_async; see gm_inbox.h. Posts append at the tail
 * so that a drain walks the items in the order they came. The queue
 * wakes the async handle under the lock, so a post cannot race the
 * close that ends the handle.
 */
#include "gm_inbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"
#include "gm_handoff.h"

struct gm_inbox {
	uv_async_t async;
	pthread_mutex_t mu;
	gm_handoff q;  /* under mu; its consumer is the loop, woken by async */
	unsigned seen; /* loop thread: q's stamp at the last poll */
	size_t off;    /* of the items' link */
	gm_inbox_fn fn;
	gm_inbox_drained_fn drained;
	void *arg;
};

static void **link_of(const gm_inbox *b, void *item)
{
	return (void **)((char *)item + b->off);
}

static void *take_all(gm_inbox *b)
{
	void *list;

	pthread_mutex_lock(&b->mu);
	list = gm_handoff_take_all(&b->q);
	pthread_mutex_unlock(&b->mu);
	return list;
}

static void hand_over(gm_inbox *b, void *list, gm_inbox_fn fn, void *arg)
{
	while (list != NULL) {
		void *next = *link_of(b, list);

		fn(list, arg);
		list = next;
	}
}

static void drain(gm_inbox *b, void *list)
{
	hand_over(b, list, b->fn, b->arg);
	if (b->drained != NULL)
		b->drained(b->arg);
}

static void on_async(uv_async_t *h)
{
	gm_inbox *b = h->data;

	drain(b, take_all(b));
}

/* The queue's wake-up of its consumer, the loop: coalesced by libuv. */
static void wake_loop(void *arg)
{
	gm_inbox *b = arg;

	uv_async_send(&b->async);
}

int gm_inbox_open(uv_loop_t *loop, size_t link_off, gm_inbox_fn fn,
		  gm_inbox_drained_fn drained, void *arg, gm_inbox **out,
		  char *msg, size_t msglen)
{
	gm_inbox *b = calloc(1, sizeof(*b));
	int rv;

	if (b == NULL) {
		snprintf(msg, msglen, "hand-off to the loop: out of memory");
		return GM_ENOMEM;
	}
	*b = (gm_inbox){
	    .off = link_off, .fn = fn, .drained = drained, .arg = arg};
	if ((rv = pthread_mutex_init(&b->mu, NULL)) != 0) {
		snprintf(msg, msglen, "hand-off to the loop: lock: %s",
			 strerror(rv));
		goto fail_mutex;
	}
	if ((rv = gm_handoff_init(&b->q, &b->mu, link_off, NULL)) != 0) {
		snprintf(msg, msglen, "hand-off to the loop: queue: %s",
			 strerror(rv));
		goto fail_queue;
	}
	gm_handoff_set_wake(&b->q, wake_loop, b);
	b->async.data = b;
	if ((rv = uv_async_init(loop, &b->async, on_async)) != 0) {
		snprintf(msg, msglen, "hand-off to the loop: %s",
			 uv_strerror(rv));
		goto fail_async;
	}
	*out = b;
	return GM_OK;
fail_async:
	gm_handoff_destroy(&b->q);
fail_queue:
	pthread_mutex_destroy(&b->mu);
fail_mutex:
	free(b);
	return GM_EINTERNAL;
}

bool gm_inbox_post_all(gm_inbox *b, void *const *items, size_t n)
{
	bool posted;

	pthread_mutex_lock(&b->mu);
	posted = n == 0 ? !gm_handoff_closed(&b->q)
			: gm_handoff_push_all(&b->q, items, n);
	pthread_mutex_unlock(&b->mu);
	return posted;
}

bool gm_inbox_post(gm_inbox *b, void *item)
{
	return gm_inbox_post_all(b, &item, 1);
}

void *gm_inbox_cancel(gm_inbox *b, bool (*match)(void *item, void *key),
		      void *key)
{
	void *item;

	pthread_mutex_lock(&b->mu);
	item = gm_handoff_remove_if(&b->q, match, key);
	pthread_mutex_unlock(&b->mu);
	return item;
}

void gm_inbox_polled(gm_inbox *b, bool on)
{
	pthread_mutex_lock(&b->mu);
	gm_handoff_polled(&b->q, on);
	pthread_mutex_unlock(&b->mu);
}

/* A post moves the queue's stamp before its lock is dropped: a stamp
 * seen unchanged means nothing came since the last poll took all. */
bool gm_inbox_poll(gm_inbox *b)
{
	unsigned stamp = gm_handoff_stamp(&b->q);
	void *list;

	if (stamp == b->seen)
		return false;
	b->seen = stamp;
	if ((list = take_all(b)) == NULL)
		return false; /* taken back meanwhile */
	drain(b, list);
	return true;
}

static void on_closed(uv_handle_t *h)
{
	gm_inbox *b = h->data;

	gm_handoff_destroy(&b->q);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

void gm_inbox_close(gm_inbox *b, gm_inbox_fn left, void *arg)
{
	void *list;

	pthread_mutex_lock(&b->mu);
	gm_handoff_polled(&b->q, true); /* closing wakes no one */
	gm_handoff_close(&b->q);
	list = gm_handoff_take_all(&b->q);
	pthread_mutex_unlock(&b->mu);
	if (left != NULL)
		hand_over(b, list, left, arg);
	uv_close((uv_handle_t *)&b->async, on_closed);
}
