/*
 * gm_inbox.c - a locked list drained by a uv_async; see gm_inbox.h.
 * Posts append at the tail so that a drain walks the items in the order
 * they came. The async handle is woken under the lock, so a post cannot
 * race the close that ends the handle.
 */
#include "gm_inbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

struct gm_inbox {
	uv_async_t async;
	pthread_mutex_t mu;
	void *head, *tail; /* under mu */
	bool closed;	   /* under mu */
	bool polled;	   /* under mu: posts need not wake the loop */
	int any;	   /* atomic: head != NULL, read without mu */
	size_t off;	   /* of the items' link */
	gm_inbox_fn fn;
	gm_inbox_drained_fn drained;
	void *arg;
};

static void **link_of(const gm_inbox *b, void *item)
{
	return (void **)((char *)item + b->off);
}

/* Takes the whole list, oldest first. */
static void *take_all(gm_inbox *b)
{
	void *list;

	pthread_mutex_lock(&b->mu);
	list = b->head;
	b->head = b->tail = NULL;
	__atomic_store_n(&b->any, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&b->mu);
	return list;
}

/* Hands each item of list to fn; an item may be freed by fn, so its
 * link is read first. */
static void hand_over(gm_inbox *b, void *list, gm_inbox_fn fn, void *arg)
{
	while (list != NULL) {
		void *next = *link_of(b, list);

		fn(list, arg);
		list = next;
	}
}

static void on_async(uv_async_t *h)
{
	gm_inbox *b = h->data;

	hand_over(b, take_all(b), b->fn, b->arg);
	if (b->drained != NULL)
		b->drained(b->arg);
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
	b->async.data = b;
	if ((rv = uv_async_init(loop, &b->async, on_async)) != 0) {
		snprintf(msg, msglen, "hand-off to the loop: %s",
			 uv_strerror(rv));
		goto fail_async;
	}
	*out = b;
	return GM_OK;
fail_async:
	pthread_mutex_destroy(&b->mu);
fail_mutex:
	free(b);
	return GM_EINTERNAL;
}

bool gm_inbox_post_all(gm_inbox *b, void *const *items, size_t n)
{
	bool posted;

	pthread_mutex_lock(&b->mu);
	posted = !b->closed;
	for (size_t i = 0; posted && i < n; i++) {
		*link_of(b, items[i]) = NULL;
		if (b->tail != NULL)
			*link_of(b, b->tail) = items[i];
		else
			b->head = items[i];
		b->tail = items[i];
	}
	if (posted && n > 0) {
		__atomic_store_n(&b->any, 1, __ATOMIC_RELEASE);
		if (!b->polled)
			uv_async_send(&b->async);
	}
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
	void **pp, *prev = NULL, *item = NULL;

	pthread_mutex_lock(&b->mu);
	for (pp = &b->head; *pp != NULL; pp = link_of(b, *pp)) {
		if (match(*pp, key)) {
			item = *pp;
			*pp = *link_of(b, item);
			if (b->tail == item)
				b->tail = prev;
			break;
		}
		prev = *pp;
	}
	pthread_mutex_unlock(&b->mu);
	return item;
}

void gm_inbox_polled(gm_inbox *b, bool on)
{
	pthread_mutex_lock(&b->mu);
	b->polled = on;
	pthread_mutex_unlock(&b->mu);
}

bool gm_inbox_poll(gm_inbox *b)
{
	if (!__atomic_load_n(&b->any, __ATOMIC_ACQUIRE))
		return false;
	on_async(&b->async);
	return true;
}

static void on_closed(uv_handle_t *h)
{
	gm_inbox *b = h->data;

	pthread_mutex_destroy(&b->mu);
	free(b);
}

void gm_inbox_close(gm_inbox *b, gm_inbox_fn left, void *arg)
{
	void *list;

	pthread_mutex_lock(&b->mu);
	b->closed = true;
	pthread_mutex_unlock(&b->mu);
	list = take_all(b);
	if (left != NULL)
		hand_over(b, list, left, arg);
	uv_close((uv_handle_t *)&b->async, on_closed);
}
