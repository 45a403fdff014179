/*
 * test_handoff.c - unit tests for the hand-off queue and the spin policy
 * (base/gm_handoff.h, base/gm_spin.h): items come out in the order they
 * went in and are taken back from anywhere; many producers to one
 * consumer and to many lose, repeat and reorder nothing; a close wakes
 * every consumer asleep and still lets what was queued out; an item put
 * after another, or first, comes out there; a kick
 * makes one wait return; two threads handing one item back and forth
 * many times never stall (no lost wake-up), sleeping or polling; a
 * consumer that polls gets a push without being signalled; one thread of
 * a group polls at a time; the owner's wake function is called unless
 * its consumer polls.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_handoff.h"
#include "gm_spin.h"

#define PRODUCERS 4
#define PER	  20000 /* items per producer */
#define ROUNDS	  20000 /* ping-pong round trips */

struct item {
	int from, seq;
	struct item *next;
};

/* A queue under its own lock, as an owner keeps one. */
struct box {
	pthread_mutex_t mu;
	gm_handoff q;
	gm_spin spin;
};

static void box_init(struct box *b, unsigned spin_us)
{
	pthread_mutex_init(&b->mu, NULL);
	gm_spin_init(&b->spin, spin_us);
	assert_int_equal(gm_handoff_init(&b->q, &b->mu,
					 offsetof(struct item, next),
					 spin_us ? &b->spin : NULL),
			 0);
}

static void box_fini(struct box *b)
{
	gm_handoff_destroy(&b->q);
	pthread_mutex_destroy(&b->mu);
}

static void push(struct box *b, struct item *it)
{
	pthread_mutex_lock(&b->mu);
	assert_true(gm_handoff_push(&b->q, it));
	pthread_mutex_unlock(&b->mu);
}

/* Pops, waiting at most 10 s: NULL on closed and empty (or a stall,
 * which the caller's count then shows). */
static struct item *pop_wait(struct box *b)
{
	struct timespec at;
	struct item *it;

	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += 10;
	pthread_mutex_lock(&b->mu);
	if (gm_handoff_wait_until(&b->q, &at))
		it = gm_handoff_pop(&b->q);
	else
		it = NULL;
	pthread_mutex_unlock(&b->mu);
	return it;
}

static void test_fifo_and_take_back(void **state)
{
	struct item it[5] = {
	    {.seq = 0}, {.seq = 1}, {.seq = 2}, {.seq = 3}, {.seq = 4}};
	void *all[3] = {&it[2], &it[3], &it[4]};
	struct box b;
	struct item *list;

	box_init(&b, 0);
	pthread_mutex_lock(&b.mu);
	assert_null(gm_handoff_pop(&b.q));
	assert_true(gm_handoff_push(&b.q, &it[0]));
	assert_true(gm_handoff_push(&b.q, &it[1]));
	assert_true(gm_handoff_push_all(&b.q, all, 3));
	assert_ptr_equal(gm_handoff_first(&b.q), &it[0]);
	assert_ptr_equal(gm_handoff_next(&b.q, &it[0]), &it[1]);
	/* From the middle, the head and the tail; then not there. */
	assert_true(gm_handoff_remove(&b.q, &it[2]));
	assert_true(gm_handoff_remove(&b.q, &it[0]));
	assert_true(gm_handoff_remove(&b.q, &it[4]));
	assert_false(gm_handoff_remove(&b.q, &it[4]));
	assert_null(it[4].next);
	/* The tail moved back: a push lands after it. */
	assert_true(gm_handoff_push(&b.q, &it[4]));
	assert_ptr_equal(gm_handoff_pop(&b.q), &it[1]);
	gm_handoff_unlink(&b.q, &it[3], &it[4]);
	assert_true(gm_handoff_push(&b.q, &it[0]));
	list = gm_handoff_take_all(&b.q);
	assert_ptr_equal(list, &it[3]);
	assert_ptr_equal(list->next, &it[0]);
	assert_null(it[0].next);
	assert_null(gm_handoff_first(&b.q));
	/* Closed: refused, and what was queued still comes out. */
	assert_true(gm_handoff_push(&b.q, &it[1]));
	gm_handoff_close(&b.q);
	assert_true(gm_handoff_closed(&b.q));
	assert_false(gm_handoff_push(&b.q, &it[2]));
	assert_ptr_equal(gm_handoff_pop_wait(&b.q), &it[1]);
	assert_null(gm_handoff_pop_wait(&b.q));
	pthread_mutex_unlock(&b.mu);
	box_fini(&b);
}

/* Inserted first into an empty queue, first before others, after the
 * last (the tail moves), after one in the middle. */
static void test_insert(void **state)
{
	struct item it[5] = {
	    {.seq = 0}, {.seq = 1}, {.seq = 2}, {.seq = 3}, {.seq = 4}};
	int order[5] = {1, 0, 3, 2, 4};
	struct box b;

	box_init(&b, 0);
	pthread_mutex_lock(&b.mu);
	assert_true(gm_handoff_insert(&b.q, NULL, &it[0]));
	assert_true(gm_handoff_insert(&b.q, NULL, &it[1]));
	assert_true(gm_handoff_insert(&b.q, &it[0], &it[2]));
	assert_true(gm_handoff_push(&b.q, &it[4]));
	assert_true(gm_handoff_insert(&b.q, &it[0], &it[3]));
	for (int i = 0; i < 5; i++)
		assert_ptr_equal(gm_handoff_pop(&b.q), &it[order[i]]);
	assert_null(gm_handoff_pop(&b.q));
	assert_true(gm_handoff_insert(&b.q, NULL, &it[0]));
	assert_true(gm_handoff_push(&b.q, &it[1]));
	assert_ptr_equal(gm_handoff_next(&b.q, &it[0]), &it[1]);
	gm_handoff_close(&b.q);
	assert_false(gm_handoff_insert(&b.q, NULL, &it[2]));
	pthread_mutex_unlock(&b.mu);
	box_fini(&b);
}

static bool seq_is(void *item, void *key)
{
	return ((struct item *)item)->seq == *(int *)key;
}

static void test_remove_if_takes_oldest_match(void **state)
{
	struct item it[3] = {{.seq = 7}, {.seq = 8}, {.seq = 8}};
	struct box b;
	int key = 8, none = 9;

	box_init(&b, 0);
	pthread_mutex_lock(&b.mu);
	for (int i = 0; i < 3; i++)
		gm_handoff_push(&b.q, &it[i]);
	assert_ptr_equal(gm_handoff_remove_if(&b.q, seq_is, &key), &it[1]);
	assert_null(gm_handoff_remove_if(&b.q, seq_is, &none));
	assert_ptr_equal(gm_handoff_pop(&b.q), &it[0]);
	assert_ptr_equal(gm_handoff_pop(&b.q), &it[2]);
	pthread_mutex_unlock(&b.mu);
	box_fini(&b);
}

struct producer {
	struct box *b;
	struct item *items;
	int from;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (int i = 0; i < PER; i++) {
		p->items[i] = (struct item){.from = p->from, .seq = i};
		push(p->b, &p->items[i]);
	}
	return NULL;
}

struct consumer {
	struct box *b;
	int got;
	int last[PRODUCERS]; /* seq last seen from each producer */
	int reordered;
	int *seen; /* shared: times each item came out */
};

static void *consume(void *arg)
{
	struct consumer *c = arg;
	struct item *it;

	while ((it = pop_wait(c->b)) != NULL) {
		if (it->seq <= c->last[it->from])
			c->reordered++;
		c->last[it->from] = it->seq;
		__atomic_add_fetch(&c->seen[it->from * PER + it->seq], 1,
				   __ATOMIC_RELAXED);
		c->got++;
	}
	return NULL;
}

/* PRODUCERS threads push PER items each to ncons consumers; the queue is
 * closed once every producer is done. */
static void run_many(unsigned spin_us, int ncons)
{
	struct item *items = calloc(PRODUCERS * PER, sizeof(*items));
	int *seen = calloc(PRODUCERS * PER, sizeof(*seen));
	struct producer p[PRODUCERS];
	struct consumer c[4];
	pthread_t pt[PRODUCERS], ct[4];
	struct box b;
	int got = 0;

	assert_non_null(items);
	assert_non_null(seen);
	box_init(&b, spin_us);
	for (int i = 0; i < ncons; i++) {
		c[i] = (struct consumer){.b = &b, .seen = seen};
		for (int k = 0; k < PRODUCERS; k++)
			c[i].last[k] = -1;
		assert_int_equal(pthread_create(&ct[i], NULL, consume, &c[i]),
				 0);
	}
	for (int i = 0; i < PRODUCERS; i++) {
		p[i] = (struct producer){&b, items + i * PER, i};
		assert_int_equal(pthread_create(&pt[i], NULL, produce, &p[i]),
				 0);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	pthread_mutex_lock(&b.mu);
	gm_handoff_close(&b.q);
	pthread_mutex_unlock(&b.mu);
	for (int i = 0; i < ncons; i++) {
		pthread_join(ct[i], NULL);
		got += c[i].got;
		/* Each consumer sees one producer's items in its order. */
		assert_int_equal(c[i].reordered, 0);
	}
	assert_int_equal(got, PRODUCERS * PER);
	for (int i = 0; i < PRODUCERS * PER; i++)
		assert_int_equal(seen[i], 1);
	box_fini(&b);
	free(seen);
	free(items);
}

/* To one consumer and to four, each sleeping and polling. */
static void test_many_producers(void **state)
{
	for (int ncons = 1; ncons <= 4; ncons += 3)
		for (unsigned spin_us = 0; spin_us <= 50; spin_us += 50)
			run_many(spin_us, ncons);
}

static void *wait_closed(void *arg)
{
	struct box *b = arg;

	pthread_mutex_lock(&b->mu);
	void *it = gm_handoff_pop_wait(&b->q);
	pthread_mutex_unlock(&b->mu);
	return it;
}

/* Consumers asleep on an empty queue all return NULL on a close. */
static void test_close_wakes_sleepers(void **state)
{
	pthread_t t[3];
	struct box b;
	void *rv;
	unsigned asleep = 0;

	box_init(&b, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, wait_closed, &b),
				 0);
	for (int i = 0; i < 10000 && asleep < 3; i++) {
		usleep(1000);
		pthread_mutex_lock(&b.mu);
		asleep = b.q.sleepers;
		pthread_mutex_unlock(&b.mu);
	}
	assert_int_equal(asleep, 3);
	pthread_mutex_lock(&b.mu);
	gm_handoff_close(&b.q);
	pthread_mutex_unlock(&b.mu);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], &rv);
		assert_null(rv);
	}
	box_fini(&b);
}

/* A kick makes one wait return with nothing, whether it comes before
 * the wait or while the consumer sleeps; a timed wait then times out. */
static void test_kick_and_timeout(void **state)
{
	struct timespec at;
	pthread_t t;
	struct box b;
	void *rv;

	box_init(&b, 0);
	pthread_mutex_lock(&b.mu);
	gm_handoff_kick(&b.q);
	assert_null(gm_handoff_pop_wait(&b.q));
	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_nsec += 20 * 1000 * 1000;
	if (at.tv_nsec >= 1000000000) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000;
	}
	assert_false(gm_handoff_wait_until(&b.q, &at)); /* kick spent */
	pthread_mutex_unlock(&b.mu);

	assert_int_equal(pthread_create(&t, NULL, wait_closed, &b), 0);
	for (int i = 0; i < 10000; i++) {
		usleep(1000);
		pthread_mutex_lock(&b.mu);
		if (b.q.sleepers == 1) {
			gm_handoff_kick(&b.q);
			pthread_mutex_unlock(&b.mu);
			break;
		}
		pthread_mutex_unlock(&b.mu);
	}
	pthread_join(t, &rv);
	assert_null(rv);
	assert_false(gm_handoff_closed(&b.q));
	box_fini(&b);
}

struct pong {
	struct box *ping, *back;
};

static void *ponger(void *arg)
{
	struct pong *p = arg;
	struct item *it;

	while ((it = pop_wait(p->ping)) != NULL) {
		it->seq++;
		push(p->back, it);
	}
	return NULL;
}

/* One item back and forth ROUNDS times: a lost wake-up stalls a side
 * for the 10 s of pop_wait, which ends the rounds short. */
static void ping_pong(unsigned spin_us)
{
	struct box ping, back;
	struct pong p = {&ping, &back};
	struct item it = {0};
	pthread_t t;
	int i;

	box_init(&ping, spin_us);
	box_init(&back, spin_us);
	assert_int_equal(pthread_create(&t, NULL, ponger, &p), 0);
	for (i = 0; i < ROUNDS; i++) {
		push(&ping, &it);
		if (pop_wait(&back) != &it)
			break;
	}
	pthread_mutex_lock(&ping.mu);
	gm_handoff_close(&ping.q);
	pthread_mutex_unlock(&ping.mu);
	pthread_join(t, NULL);
	assert_int_equal(i, ROUNDS);
	assert_int_equal(it.seq, ROUNDS);
	box_fini(&ping);
	box_fini(&back);
}

static void test_no_lost_wakeup(void **state)
{
	ping_pong(0);
	ping_pong(20);
}

struct poller {
	struct box *b;
	double took_us;
	void *got;
};

static void *poll_one(void *arg)
{
	struct poller *p = arg;
	double t0 = gm_spin_now_us();

	pthread_mutex_lock(&p->b->mu);
	p->got = gm_handoff_pop_wait(&p->b->q);
	pthread_mutex_unlock(&p->b->mu);
	p->took_us = gm_spin_now_us() - t0;
	return NULL;
}

/* A consumer that polls (for up to 10 s here) is not asleep when the
 * push comes, and takes the item long before its poll would end. */
static void test_poller_needs_no_signal(void **state)
{
	struct item it = {0};
	struct poller p;
	pthread_t t;
	struct box b;
	unsigned sleepers;

	box_init(&b, 10 * 1000 * 1000);
	p = (struct poller){.b = &b};
	assert_int_equal(pthread_create(&t, NULL, poll_one, &p), 0);
	while (__atomic_load_n(&b.spin.polling, __ATOMIC_ACQUIRE) == 0)
		usleep(100);
	pthread_mutex_lock(&b.mu);
	sleepers = b.q.sleepers;
	gm_handoff_push(&b.q, &it);
	pthread_mutex_unlock(&b.mu);
	pthread_join(t, NULL);
	assert_int_equal(sleepers, 0);
	assert_ptr_equal(p.got, &it);
	assert_true(p.took_us < 5e6);
	box_fini(&b);
}

struct group {
	gm_spin *s;
	int calls; /* of ready, by this thread */
	int *go;   /* ready's answer, shared */
};

static bool go_ready(void *arg)
{
	struct group *g = arg;

	__atomic_add_fetch(&g->calls, 1, __ATOMIC_RELAXED);
	return __atomic_load_n(g->go, __ATOMIC_ACQUIRE);
}

static void *spin_one(void *arg)
{
	struct group *g = arg;

	(void)gm_spin_until(g->s, go_ready, g);
	return NULL;
}

/* Of two threads of one group, one polls and the other returns at once
 * without asking; spin_us of 0 never asks. */
static void test_one_poller_per_group(void **state)
{
	int go = 0;
	gm_spin s, none;
	struct group a = {&s, 0, &go}, b = {&s, 0, &go}, z = {&none, 0, &go};
	pthread_t t;

	gm_spin_init(&s, 10 * 1000 * 1000);
	gm_spin_init(&none, 0);
	assert_false(gm_spin_until(&none, go_ready, &z));
	assert_false(gm_spin_until(NULL, go_ready, &z));
	assert_int_equal(z.calls, 0);
	assert_int_equal(pthread_create(&t, NULL, spin_one, &a), 0);
	while (__atomic_load_n(&a.calls, __ATOMIC_RELAXED) == 0)
		usleep(100);
	assert_false(gm_spin_until(&s, go_ready, &b));
	assert_int_equal(b.calls, 0);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_int_equal(s.polling, 0);
	assert_true(gm_spin_until(&s, go_ready, &b));
	assert_int_equal(b.calls, 1);
}

static void count_wake(void *arg)
{
	(*(int *)arg)++;
}

/* An owner's consumer is woken by its function at each push, kick and
 * close, and not while it says it polls. */
static void test_owner_wake(void **state)
{
	struct item it[2] = {{0}};
	struct box b;
	int wakes = 0;

	box_init(&b, 0);
	gm_handoff_set_wake(&b.q, count_wake, &wakes);
	pthread_mutex_lock(&b.mu);
	gm_handoff_push(&b.q, &it[0]);
	assert_int_equal(wakes, 1);
	gm_handoff_polled(&b.q, true);
	gm_handoff_push(&b.q, &it[1]);
	assert_int_equal(wakes, 1);
	gm_handoff_polled(&b.q, false);
	gm_handoff_kick(&b.q);
	gm_handoff_close(&b.q);
	assert_int_equal(wakes, 3);
	pthread_mutex_unlock(&b.mu);
	box_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fifo_and_take_back),
	    cmocka_unit_test(test_insert),
	    cmocka_unit_test(test_remove_if_takes_oldest_match),
	    cmocka_unit_test(test_many_producers),
	    cmocka_unit_test(test_close_wakes_sleepers),
	    cmocka_unit_test(test_kick_and_timeout),
	    cmocka_unit_test(test_no_lost_wakeup),
	    cmocka_unit_test(test_poller_needs_no_signal),
	    cmocka_unit_test(test_one_poller_per_group),
	    cmocka_unit_test(test_owner_wake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
