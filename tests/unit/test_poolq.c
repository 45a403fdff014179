/*
 * test_poolq.c - gm_poolq, requests waiting for room in the host pool,
 * and gm_slab, the layout of a request's slab. The queue: granted at once
 * when room is free and nobody waits; otherwise first come first served,
 * the head blocking later waiters that would fit; a waiter canceled
 * from the head lets those behind it in; a grant whose callback frees a
 * slab at once serves the next without recursing; a request larger than
 * the pool refused. The layout: replies right after the payload, each
 * result aligned, padding only where alignment needs it, a constant
 * stride for jobs of one shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_poolq.h"
#include "gm_slab.h"

#define UNIT  GM_POOL_ALIGN
#define ARENA (16 * UNIT)

static uint8_t arena[ARENA] __attribute__((aligned(GM_POOL_ALIGN)));

/* The queue under test and what its callback saw. */
static struct {
	gm_pool *pool;
	gm_poolq *q;
	gm_poolq_wait *granted[8];
	unsigned ngranted;
	int give_back; /* the callback frees each slab at once */
} t;

static void on_grant(gm_poolq_wait *w, void *arg)
{
	assert_ptr_equal(arg, &t);
	assert_non_null(w->slab);
	t.granted[t.ngranted++] = w;
	if (t.give_back)
		gm_poolq_put(t.q, w->slab);
}

static void open_q(void)
{
	memset(&t, 0, sizeof(t));
	assert_int_equal(gm_pool_create(arena, ARENA, &t.pool), GM_OK);
	assert_int_equal(gm_poolq_create(t.pool, on_grant, &t, &t.q), GM_OK);
}

static void close_q(void)
{
	assert_int_equal(gm_poolq_waiting(t.q), 0);
	assert_int_equal(gm_poolq_waiting_bytes(t.q), 0);
	assert_int_equal(gm_pool_used(t.pool), 0);
	gm_poolq_destroy(t.q);
	gm_pool_destroy(t.pool);
}

static void test_fifo(void **state)
{
	gm_poolq_wait big = {.bytes = 12 * UNIT}, a = {.bytes = 8 * UNIT},
		      b = {.bytes = 2 * UNIT}, c = {.bytes = 2 * UNIT};

	(void)state;
	open_q();
	assert_int_equal(gm_poolq_get(t.q, &big), GM_OK);
	assert_non_null(big.slab);
	/* a does not fit; b would, but waits behind a. */
	assert_int_equal(gm_poolq_get(t.q, &a), GM_EBUSY);
	assert_int_equal(gm_poolq_get(t.q, &b), GM_EBUSY);
	assert_int_equal(gm_poolq_get(t.q, &c), GM_EBUSY);
	assert_null(b.slab);
	assert_int_equal(gm_poolq_waiting(t.q), 3);
	assert_int_equal(gm_poolq_waiting_bytes(t.q), 12 * UNIT);
	gm_poolq_put(t.q, big.slab);
	assert_int_equal(t.ngranted, 3);
	assert_ptr_equal(t.granted[0], &a);
	assert_ptr_equal(t.granted[1], &b);
	assert_ptr_equal(t.granted[2], &c);
	gm_poolq_put(t.q, a.slab);
	gm_poolq_put(t.q, b.slab);
	gm_poolq_put(t.q, c.slab);
	close_q();
}

static void test_cancel_head(void **state)
{
	gm_poolq_wait hold = {.bytes = 10 * UNIT}, a = {.bytes = 8 * UNIT},
		      b = {.bytes = 4 * UNIT};

	(void)state;
	open_q();
	assert_int_equal(gm_poolq_get(t.q, &hold), GM_OK);
	assert_int_equal(gm_poolq_get(t.q, &a), GM_EBUSY);
	assert_int_equal(gm_poolq_get(t.q, &b), GM_EBUSY);
	gm_poolq_cancel(t.q, &a);
	assert_int_equal(t.ngranted, 1);
	assert_ptr_equal(t.granted[0], &b);
	gm_poolq_put(t.q, b.slab);
	gm_poolq_put(t.q, hold.slab);
	close_q();
}

static void test_grant_gives_back(void **state)
{
	gm_poolq_wait hold = {.bytes = 16 * UNIT}, w[3];

	(void)state;
	open_q();
	assert_int_equal(gm_poolq_get(t.q, &hold), GM_OK);
	for (int i = 0; i < 3; i++) {
		w[i] = (gm_poolq_wait){.bytes = 16 * UNIT};
		assert_int_equal(gm_poolq_get(t.q, &w[i]), GM_EBUSY);
	}
	t.give_back = 1;
	gm_poolq_put(t.q, hold.slab);
	assert_int_equal(t.ngranted, 3);
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(t.granted[i], &w[i]);
	close_q();
}

static void test_too_big(void **state)
{
	gm_poolq_wait whole = {.bytes = ARENA}, over = {.bytes = ARENA + 1};

	(void)state;
	open_q();
	assert_int_equal(gm_poolq_get(t.q, &over), GM_ETOOBIG);
	assert_int_equal(gm_poolq_get(t.q, &whole), GM_OK);
	gm_poolq_put(t.q, whole.slab);
	close_q();
}

static void test_slab_layout(void **state)
{
	gm_slab_cursor c;
	uint64_t r0, r1, r2, r3;

	(void)state;
	/* 100 bytes of payload: reply 0 right after it, padded so that its
	 * result is aligned. */
	gm_slab_begin(&c, 100);
	r0 = gm_slab_next(&c, 64);
	assert_int_equal((r0 + GM_SLAB_REPLY_HEAD) % GM_SLAB_OUT_ALIGN, 0);
	assert_true(r0 >= 100 && r0 < 100 + GM_SLAB_OUT_ALIGN);
	/* Same shape: no gap, constant stride. */
	r1 = gm_slab_next(&c, 64);
	r2 = gm_slab_next(&c, 64);
	assert_int_equal(r1, r0 + GM_SLAB_REPLY_HEAD + 64);
	assert_int_equal(r2 - r1, r1 - r0);
	/* A result in a region: the reply alone, no padding needed. */
	r3 = gm_slab_next(&c, 0);
	assert_int_equal(r3, r2 + GM_SLAB_REPLY_HEAD + 64);
	assert_int_equal(gm_slab_size(&c), r3 + GM_SLAB_REPLY_HEAD);
	/* After it an odd result: the next is padded again. */
	r0 = gm_slab_next(&c, 6);
	r1 = gm_slab_next(&c, 8);
	assert_int_equal((r1 + GM_SLAB_REPLY_HEAD) % GM_SLAB_OUT_ALIGN, 0);
	assert_true(r1 > r0 + GM_SLAB_REPLY_HEAD + 6);
	assert_int_equal(gm_slab_size(&c), r1 + GM_SLAB_REPLY_HEAD + 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fifo),
	    cmocka_unit_test(test_cancel_head),
	    cmocka_unit_test(test_grant_gives_back),
	    cmocka_unit_test(test_too_big),
	    cmocka_unit_test(test_slab_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
