/*
 * test_timer.c - unit tests for the client library's timer thread
 * (client/gmc_timer.h): events run in the order of their times and not
 * before them, re-arming moves an event, disarming and canceling stop
 * it, events armed while the thread sleeps run in time whether or not
 * they wake it, a cancel waits for an event that is running, an event may
 * re-arm itself, and freeing drops what is armed; gmc_timer_in gives the
 * monotonic time ms ahead.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gmc_timer.h"

#define MS 1000000ull

struct rec {
	pthread_mutex_t mu;
	int order[16];
	uint64_t at[16];
	int n;
};

struct ev {
	gmc_tev tev;
	struct rec *r;
	int tag;
	int sleep_ms; /* while running */
	int rearm;    /* times it arms itself again */
	gmc_timer *t;
};

static void fire(void *arg)
{
	struct ev *e = arg;

	pthread_mutex_lock(&e->r->mu);
	e->r->at[e->r->n] = gmc_timer_now();
	e->r->order[e->r->n++] = e->tag;
	pthread_mutex_unlock(&e->r->mu);
	if (e->sleep_ms)
		usleep((useconds_t)e->sleep_ms * 1000);
	if (e->rearm-- > 0)
		gmc_timer_arm(e->t, &e->tev, gmc_timer_now() + 5 * MS);
}

static int count(struct rec *r)
{
	int n;

	pthread_mutex_lock(&r->mu);
	n = r->n;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static void setup_ev(struct ev *e, struct rec *r, gmc_timer *t, int tag)
{
	*e = (struct ev){.r = r, .tag = tag, .t = t};
	gmc_tev_init(&e->tev, fire, e);
}

static void test_order(void **state)
{
	struct rec r = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct ev e[5];
	gmc_timer *t;
	uint64_t t0 = gmc_timer_now();
	static const int ms[5] = {40, 10, 30, 20, 50};

	assert_int_equal(gmc_timer_new(&t), GM_OK);
	for (int i = 0; i < 5; i++) {
		setup_ev(&e[i], &r, t, i);
		assert_int_equal(gmc_timer_arm(t, &e[i].tev, t0 + ms[i] * MS),
				 GM_OK);
	}
	/* Moved later, and one disarmed. */
	assert_int_equal(gmc_timer_arm(t, &e[1].tev, t0 + 60 * MS), GM_OK);
	gmc_timer_disarm(t, &e[4].tev);
	while (count(&r) < 4)
		usleep(1000);
	usleep(30 * 1000);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.order[0], 3);
	assert_int_equal(r.order[1], 2);
	assert_int_equal(r.order[2], 0);
	assert_int_equal(r.order[3], 1);
	assert_true(r.at[0] >= t0 + 20 * MS);
	assert_true(r.at[3] >= t0 + 60 * MS);
	gmc_timer_free(t);
}

/* A call's deadline armed and canceled, then the next call's, later
 * than the time the thread still sleeps until (it is not woken for it),
 * and then one earlier than that (it is): each runs, in time order. */
static void test_armed_while_asleep(void **state)
{
	struct rec r = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct ev first, later, sooner;
	gmc_timer *t;
	uint64_t t0 = gmc_timer_now();

	assert_int_equal(gmc_timer_new(&t), GM_OK);
	setup_ev(&first, &r, t, 1);
	setup_ev(&later, &r, t, 2);
	setup_ev(&sooner, &r, t, 3);
	assert_int_equal(gmc_timer_arm(t, &first.tev, t0 + 500 * MS), GM_OK);
	usleep(10 * 1000); /* the thread sleeps until t0 + 500 ms */
	gmc_timer_cancel(t, &first.tev);
	assert_int_equal(gmc_timer_arm(t, &later.tev, t0 + 600 * MS), GM_OK);
	assert_int_equal(gmc_timer_arm(t, &sooner.tev, t0 + 30 * MS), GM_OK);
	for (int i = 0; i < 5000 && count(&r) < 2; i++)
		usleep(1000);
	assert_int_equal(count(&r), 2);
	assert_int_equal(r.order[0], 3);
	assert_int_equal(r.order[1], 2);
	assert_true(r.at[0] >= t0 + 30 * MS && r.at[0] < t0 + 500 * MS);
	assert_true(r.at[1] >= t0 + 600 * MS);
	gmc_timer_free(t);
}

static void test_cancel_waits(void **state)
{
	struct rec r = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct ev e;
	gmc_timer *t;

	assert_int_equal(gmc_timer_new(&t), GM_OK);
	setup_ev(&e, &r, t, 1);
	e.sleep_ms = 100;
	assert_int_equal(gmc_timer_arm(t, &e.tev, 0), GM_OK);
	while (count(&r) == 0)
		usleep(1000);
	/* Running now: the cancel returns once it has returned. */
	gmc_timer_cancel(t, &e.tev);
	assert_true(gmc_timer_now() - r.at[0] >= 100 * MS);
	assert_false(gmc_timer_is_self(t));
	gmc_timer_free(t);
}

static void test_rearm_and_free(void **state)
{
	struct rec r = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct ev e, late;
	gmc_timer *t;

	assert_int_equal(gmc_timer_new(&t), GM_OK);
	setup_ev(&e, &r, t, 1);
	e.rearm = 3;
	setup_ev(&late, &r, t, 2);
	assert_int_equal(gmc_timer_arm(t, &e.tev, 0), GM_OK);
	assert_int_equal(
	    gmc_timer_arm(t, &late.tev, gmc_timer_now() + 10000 * MS), GM_OK);
	while (count(&r) < 4)
		usleep(1000);
	usleep(20 * 1000);
	assert_int_equal(r.n, 4);
	gmc_timer_cancel(t, &e.tev);
	/* Armed for later: dropped. */
	gmc_timer_free(t);
	assert_int_equal(r.n, 4);
}

/* gmc_timer_in: the monotonic time ms from now, for clocked waits. */
static void test_in(void **state)
{
	static const int ms[] = {0, 1, 999, 1000, 1500, 86400000};

	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		uint64_t before = gmc_timer_now();
		struct timespec at = gmc_timer_in(ms[i]);
		uint64_t after = gmc_timer_now(),
			 ns = (uint64_t)at.tv_sec * 1000000000u +
			      (uint64_t)at.tv_nsec;

		assert_true(at.tv_nsec >= 0 && at.tv_nsec < 1000000000);
		assert_true(ns >= before + (uint64_t)ms[i] * 1000000u);
		assert_true(ns <= after + (uint64_t)ms[i] * 1000000u);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_armed_while_asleep),
	    cmocka_unit_test(test_cancel_waits),
	    cmocka_unit_test(test_rearm_and_free),
	    cmocka_unit_test(test_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
