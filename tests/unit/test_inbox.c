/*
 * test_inbox.c - unit tests for the hand-off to the loop thread
 * (daemon/gm_inbox.h): items posted from other threads, one at a time or
 * together, reach the loop each once and in the order each thread posted
 * them; the drained callback follows each drain; a post after the close
 * is refused and the poster keeps its item; items never drained go to
 * the close's callback; a cancel takes back an item not yet drained;
 * while the loop polls the inbox, posts do not wake it, the poll hands
 * them over, and none is lost as the polling stops and starts.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_inbox.h"

enum { THREADS = 4, PER_THREAD = 5000, TOGETHER = 7 };

struct item {
	void *link; /* the inbox's */
	int thread, seq;
};

struct rig {
	uv_loop_t loop;
	gm_inbox *b;
	int next[THREADS]; /* the seq each thread's next item must have */
	int got, drains, left;
};

static struct item items[THREADS][PER_THREAD];

static void on_item(void *p, void *arg)
{
	struct rig *r = arg;
	struct item *it = p;

	assert_int_equal(it->seq, r->next[it->thread]);
	r->next[it->thread]++;
	if (++r->got == THREADS * PER_THREAD)
		uv_stop(&r->loop);
}

static void on_drained(void *arg)
{
	((struct rig *)arg)->drains++;
}

static void on_left(void *p, void *arg)
{
	((struct rig *)arg)->left++;
}

struct poster {
	struct rig *r;
	int thread;
};

/* Even threads post one at a time, odd ones TOGETHER at once. */
static void *post(void *arg)
{
	struct poster *p = arg;
	struct item *mine = items[p->thread];

	for (int i = 0; i < PER_THREAD;) {
		void *batch[TOGETHER];
		int n = 0;

		if (p->thread % 2 == 0) {
			assert_true(gm_inbox_post(p->r->b, &mine[i++]));
			continue;
		}
		while (n < TOGETHER && i < PER_THREAD)
			batch[n++] = &mine[i++];
		assert_true(gm_inbox_post_all(p->r->b, batch, (size_t)n));
	}
	return NULL;
}

static void open_rig(struct rig *r)
{
	char msg[128];

	*r = (struct rig){0};
	assert_int_equal(uv_loop_init(&r->loop), 0);
	assert_int_equal(gm_inbox_open(&r->loop, offsetof(struct item, link),
				       on_item, on_drained, r, &r->b, msg,
				       sizeof(msg)),
			 GM_OK);
	for (int t = 0; t < THREADS; t++)
		for (int i = 0; i < PER_THREAD; i++)
			items[t][i] = (struct item){NULL, t, i};
}

static void close_rig(struct rig *r)
{
	gm_inbox_close(r->b, on_left, r);
	assert_int_equal(uv_run(&r->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&r->loop), 0);
}

static void test_order(void **state)
{
	struct poster p[THREADS];
	pthread_t th[THREADS];
	struct rig r;

	open_rig(&r);
	for (int t = 0; t < THREADS; t++) {
		p[t] = (struct poster){&r, t};
		assert_int_equal(pthread_create(&th[t], NULL, post, &p[t]), 0);
	}
	uv_run(&r.loop, UV_RUN_DEFAULT);
	for (int t = 0; t < THREADS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(r.next[t], PER_THREAD);
	}
	assert_int_equal(r.got, THREADS * PER_THREAD);
	assert_true(r.drains >= 1);
	close_rig(&r);
	assert_int_equal(r.left, 0);
}

static bool is_seq(void *p, void *key)
{
	return ((struct item *)p)->seq == *(int *)key;
}

/* Posts with no loop turning: a cancel takes one back, the close hands
 * the rest over, and a post after it is refused. */
static void test_cancel_close(void **state)
{
	void *three[3] = {&items[1][0], &items[1][1], &items[1][2]};
	struct rig r;
	int key = 1;

	open_rig(&r);
	assert_true(gm_inbox_post_all(r.b, three, 3));
	assert_true(gm_inbox_post(r.b, &items[1][3]));
	assert_ptr_equal(gm_inbox_cancel(r.b, is_seq, &key), &items[1][1]);
	assert_null(gm_inbox_cancel(r.b, is_seq, &key));
	key = 3; /* the tail */
	assert_ptr_equal(gm_inbox_cancel(r.b, is_seq, &key), &items[1][3]);
	assert_true(gm_inbox_post(r.b, &items[1][4]));
	gm_inbox_close(r.b, on_left, &r);
	assert_int_equal(r.left, 3); /* 0, 2 and 4 */
	assert_false(gm_inbox_post(r.b, &items[2][0]));
	assert_false(gm_inbox_post_all(r.b, three, 3));
	assert_int_equal(uv_run(&r.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&r.loop), 0);
	assert_int_equal(r.got, 0);
}

/* A polled inbox: a post does not wake the loop, the poll hands it
 * over; once polling is off, a post wakes the loop again. */
static void test_polled_wakes(void **state)
{
	struct rig r;

	open_rig(&r);
	gm_inbox_polled(r.b, true);
	assert_true(gm_inbox_post(r.b, &items[0][0]));
	uv_run(&r.loop, UV_RUN_NOWAIT);
	assert_int_equal(r.got, 0);
	assert_true(gm_inbox_poll(r.b));
	assert_int_equal(r.got, 1);
	assert_int_equal(r.drains, 1);
	/* nothing came: nothing handed over */
	assert_false(gm_inbox_poll(r.b));
	assert_int_equal(r.drains, 1);
	gm_inbox_polled(r.b, false);
	assert_true(gm_inbox_post(r.b, &items[0][1]));
	uv_run(&r.loop, UV_RUN_NOWAIT);
	assert_int_equal(r.got, 2);
	close_rig(&r);
	assert_int_equal(r.left, 0);
}

/* Posters race the loop turning polling off and on, as the daemon's
 * does when a spin ends (gm_loop.c): off, then a poll for what came
 * meanwhile. Every item arrives once, in order. */
static void test_polled_toggles(void **state)
{
	struct poster p[THREADS];
	pthread_t th[THREADS];
	struct rig r;
	bool on = false;

	open_rig(&r);
	for (int t = 0; t < THREADS; t++) {
		p[t] = (struct poster){&r, t};
		assert_int_equal(pthread_create(&th[t], NULL, post, &p[t]), 0);
	}
	for (unsigned turn = 0; r.got < THREADS * PER_THREAD; turn++) {
		if (turn % 64 == 0) {
			on = !on;
			gm_inbox_polled(r.b, on);
			if (!on) /* what came while it was polled */
				gm_inbox_poll(r.b);
		}
		if (on)
			gm_inbox_poll(r.b);
		else if (r.got < THREADS * PER_THREAD)
			uv_run(&r.loop, UV_RUN_ONCE); /* woken by a post */
	}
	/* The last item stops the loop (on_item); when a poll handed it
	 * over, outside uv_run, the stop is still pending: a turn takes it
	 * before the close runs the loop. */
	uv_run(&r.loop, UV_RUN_NOWAIT);
	for (int t = 0; t < THREADS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(r.next[t], PER_THREAD);
	}
	close_rig(&r);
	assert_int_equal(r.left, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_cancel_close),
	    cmocka_unit_test(test_polled_wakes),
	    cmocka_unit_test(test_polled_toggles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
