/*
 * test_poolq.c - gm_poolq, requests waiting for room in the host pool,
 * and gm_slab, the layout of a request's slab. The queue: granted at once
 * when room is free and nobody waits; in strict order (no bypass) first
 * come first served, the head blocking later waiters that would fit; a
 * waiter canceled from the head lets those behind it in; a grant whose
 * callback frees a slab at once serves the next without recursing; a
 * request larger than the pool refused. The bypass: later waiters that
 * fit pass one that does not, up to pool_bypass_max times, or until it
 * has waited pool_bypass_ms, then it blocks them until it is served;
 * one that would take its principal past its share never blocks them.
 * The shares: a principal over its share waits while another principal
 * waits, not when it waits alone nor when it holds nothing, nor when
 * the others were seen longer than pool_bypass_ms ago; a principal all
 * of whose holders went is still itself when it comes back, and another
 * is never taken for it; each principal's pool bytes and waiters
 * counted, and back to 0 at the end.
 * The layout: replies right after the payload, each
 * result aligned, padding only where alignment needs it, a constant
 * stride for jobs of one shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	gm_shares *shares;
	gm_poolq_wait *granted[16];
	unsigned ngranted;
	int give_back; /* the callback frees each slab at once */
} t;

static void on_grant(gm_poolq_wait *w, void *arg)
{
	assert_ptr_equal(arg, &t);
	assert_non_null(w->slab);
	t.granted[t.ngranted++] = w;
	if (t.give_back)
		gm_poolq_put(t.q, w);
}

static void open_lim(const gm_poolq_limits *lim)
{
	memset(&t, 0, sizeof(t));
	assert_int_equal(gm_pool_create(arena, ARENA, &t.pool), GM_OK);
	assert_int_equal(gm_shares_create(&t.shares), GM_OK);
	assert_int_equal(
	    gm_poolq_create(t.pool, t.shares, lim, on_grant, &t, &t.q), GM_OK);
}

/* Strict order: no waiter passes another. */
static void open_q(void)
{
	gm_poolq_limits strict = {0};

	open_lim(&strict);
}

static void close_q(void)
{
	assert_int_equal(gm_poolq_waiting(t.q), 0);
	assert_int_equal(gm_poolq_waiting_bytes(t.q), 0);
	assert_int_equal(gm_pool_used(t.pool), 0);
	/* The queue holds the principals it saw last, until it goes. */
	gm_poolq_destroy(t.q);
	assert_int_equal(gm_shares_count(t.shares), 0);
	gm_shares_destroy(t.shares);
	gm_pool_destroy(t.pool);
}

/* A waiter of bytes for the principal called who (NULL: none). */
static gm_poolq_wait waiter(uint64_t bytes, const char *who)
{
	return (gm_poolq_wait){
	    .bytes = bytes,
	    .who = who != NULL ? gm_shares_hold(t.shares, who) : NULL};
}

/* Gives w's slab back and lets go of its principal, as a request's
 * record does when it goes. */
static void done(gm_poolq_wait *w)
{
	gm_poolq_put(t.q, w);
	if (w->who != NULL) {
		assert_int_equal(w->who->waiting, 0);
		gm_shares_release(t.shares, w->who);
	}
}

static void test_fifo(void **state)
{
	gm_poolq_wait big = {.bytes = 12 * UNIT}, a = {.bytes = 8 * UNIT},
		      b = {.bytes = 2 * UNIT}, c = {.bytes = 2 * UNIT};

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
	gm_poolq_put(t.q, &big);
	assert_int_equal(t.ngranted, 3);
	assert_ptr_equal(t.granted[0], &a);
	assert_ptr_equal(t.granted[1], &b);
	assert_ptr_equal(t.granted[2], &c);
	gm_poolq_put(t.q, &a);
	gm_poolq_put(t.q, &b);
	gm_poolq_put(t.q, &c);
	close_q();
}

static void test_cancel_head(void **state)
{
	gm_poolq_wait hold = {.bytes = 10 * UNIT}, a = {.bytes = 8 * UNIT},
		      b = {.bytes = 4 * UNIT};

	open_q();
	assert_int_equal(gm_poolq_get(t.q, &hold), GM_OK);
	assert_int_equal(gm_poolq_get(t.q, &a), GM_EBUSY);
	assert_int_equal(gm_poolq_get(t.q, &b), GM_EBUSY);
	gm_poolq_cancel(t.q, &a);
	assert_int_equal(t.ngranted, 1);
	assert_ptr_equal(t.granted[0], &b);
	gm_poolq_put(t.q, &b);
	gm_poolq_put(t.q, &hold);
	close_q();
}

static void test_grant_gives_back(void **state)
{
	gm_poolq_wait hold = {.bytes = 16 * UNIT}, w[3];

	open_q();
	assert_int_equal(gm_poolq_get(t.q, &hold), GM_OK);
	for (int i = 0; i < 3; i++) {
		w[i] = (gm_poolq_wait){.bytes = 16 * UNIT};
		assert_int_equal(gm_poolq_get(t.q, &w[i]), GM_EBUSY);
	}
	t.give_back = 1;
	gm_poolq_put(t.q, &hold);
	assert_int_equal(t.ngranted, 3);
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(t.granted[i], &w[i]);
	close_q();
}

static void test_too_big(void **state)
{
	gm_poolq_wait whole = {.bytes = ARENA}, over = {.bytes = ARENA + 1};

	open_q();
	assert_int_equal(gm_poolq_get(t.q, &over), GM_ETOOBIG);
	assert_int_equal(gm_poolq_get(t.q, &whole), GM_OK);
	gm_poolq_put(t.q, &whole);
	close_q();
}

/* One that does not fit (a, principal 1, 8 units of the 4 left) and two
 * that would (b and c, principal 2, 2 each) coming after it, b after
 * waiting ms. */
struct bypass_case {
	const char *what;
	uint32_t bypass_max, bypass_ms, sleep_ms;
	uint64_t share;		/* units; 0: no cap */
	int rv_b, rv_c;		/* their gets */
	const char *after_hold; /* granted, in order, once the holder goes */
};

static const struct bypass_case bypass_cases[] = {
    {"strict order", 0, 0, 0, 0, GM_EBUSY, GM_EBUSY, "abc"},
    {"one pass", 1, 10000, 0, 0, GM_OK, GM_EBUSY, "ac"},
    {"passes left", 8, 10000, 0, 0, GM_OK, GM_OK, "a"},
    {"aged", 8, 20, 40, 0, GM_EBUSY, GM_EBUSY, "abc"},
    {"a within its share blocks", 0, 0, 0, 8, GM_EBUSY, GM_EBUSY, "abc"},
    {"a past its share never blocks", 0, 0, 0, 4, GM_OK, GM_OK, "a"},
    {"... however long it waits", 8, 20, 40, 4, GM_OK, GM_OK, "a"},
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Which of a, b, c the callback was told of, in order. */
static void granted_names(gm_poolq_wait *a, gm_poolq_wait *b, char *out)
{
	for (unsigned i = 0; i < t.ngranted; i++)
		out[i] = t.granted[i] == a   ? 'a'
			 : t.granted[i] == b ? 'b'
					     : 'c';
	out[t.ngranted] = '\0';
}

static void test_bypass(void **state)
{
	for (size_t i = 0; i < sizeof(bypass_cases) / sizeof(bypass_cases[0]);
	     i++) {
		const struct bypass_case *k = &bypass_cases[i];
		gm_poolq_limits lim = {k->bypass_max, k->bypass_ms,
				       k->share * UNIT};
		gm_poolq_wait hold = {.bytes = 12 * UNIT}, a, b, c;
		char got[8];
		int rv_b, rv_c;

		open_lim(&lim);
		a = waiter(8 * UNIT, "uid 1");
		b = waiter(2 * UNIT, "uid 2");
		c = waiter(2 * UNIT, "uid 2");
		assert_int_equal(gm_poolq_get(t.q, &hold), GM_OK);
		assert_int_equal(gm_poolq_get(t.q, &a), GM_EBUSY);
		sleep_ms(k->sleep_ms);
		rv_b = gm_poolq_get(t.q, &b);
		rv_c = gm_poolq_get(t.q, &c);
		if (rv_b != k->rv_b || rv_c != k->rv_c)
			fail_msg("%s: b %d c %d, want %d %d", k->what, rv_b,
				 rv_c, k->rv_b, k->rv_c);
		assert_int_equal(gm_poolq_bypasses(t.q),
				 (rv_b == GM_OK) + (rv_c == GM_OK));
		/* Once a may not be passed, the room the others free piles
		 * up for it: none of it goes to those behind it. */
		if (rv_b == GM_OK)
			gm_poolq_put(t.q, &b);
		if (rv_c == GM_OK)
			gm_poolq_put(t.q, &c);
		assert_int_equal(t.ngranted, 0);
		gm_poolq_put(t.q, &hold);
		granted_names(&a, &b, got);
		if (strcmp(got, k->after_hold) != 0)
			fail_msg("%s: granted %s, want %s", k->what, got,
				 k->after_hold);
		done(&a);
		if (rv_b != GM_OK)
			gm_poolq_put(t.q, &b);
		if (rv_c != GM_OK)
			gm_poolq_put(t.q, &c);
		gm_shares_release(t.shares, b.who);
		gm_shares_release(t.shares, c.who);
		close_q();
	}
}

/* P and Q each hold half the pool; P's p2 waits, then Q's q1, 4 units
 * each; Q's half is given back. */
struct share_case {
	const char *what;
	uint64_t share;	   /* units; 0: no cap */
	const char *order; /* granted once Q's half is back, then P's */
};

static const struct share_case share_cases[] = {
    {"no cap: in order", 0, "pq"},
    {"P at its share: passed over while Q holds some", 8, "q/p"},
    {"P within its share", 12, "pq"},
    {"Q holds nothing: let in over its share", 2, "q/p"},
};

/* The waiters the callback was told of since the first'th, as p and q,
 * after what. */
static void names_pq(const gm_poolq_wait *p2, unsigned first, char *out)
{
	for (unsigned j = first; j < t.ngranted; j++)
		*out++ = t.granted[j] == p2 ? 'p' : 'q';
	*out = '\0';
}

static void test_share(void **state)
{
	for (size_t i = 0; i < sizeof(share_cases) / sizeof(share_cases[0]);
	     i++) {
		const struct share_case *k = &share_cases[i];
		gm_poolq_limits lim = {0, 0, k->share * UNIT};
		gm_poolq_wait p1, q0, p2, q1;
		gm_share *sp, *sq;
		char got[8];

		open_lim(&lim);
		p1 = waiter(8 * UNIT, "uid 1");
		q0 = waiter(8 * UNIT, "uid 2");
		p2 = waiter(4 * UNIT, "uid 1");
		q1 = waiter(4 * UNIT, "uid 2");
		sp = p1.who;
		sq = q0.who;
		assert_int_equal(gm_poolq_get(t.q, &p1), GM_OK);
		assert_int_equal(gm_poolq_get(t.q, &q0), GM_OK);
		assert_int_equal(gm_poolq_get(t.q, &p2), GM_EBUSY);
		assert_int_equal(gm_poolq_get(t.q, &q1), GM_EBUSY);
		assert_int_equal(sp->pool, 8 * UNIT);
		assert_int_equal(sp->waiting, 1);
		assert_int_equal(sq->waiting, 1);
		done(&q0);
		names_pq(&p2, 0, got);
		if (t.ngranted < 2) {
			unsigned first = t.ngranted;

			/* P's second waits, beside Q's, until P's first is
			 * back. */
			assert_int_equal(sp->pool, 8 * UNIT);
			done(&p1);
			strcat(got, "/");
			names_pq(&p2, first, got + strlen(got));
		} else {
			assert_int_equal(sp->pool, 12 * UNIT);
			done(&p1);
		}
		if (strcmp(got, k->order) != 0)
			fail_msg("%s: granted %s, want %s", k->what, got,
				 k->order);
		assert_int_equal(sq->pool, 4 * UNIT);
		done(&p2);
		done(&q1);
		close_q();
	}
}

/* Alone, a principal takes the whole pool, its share notwithstanding;
 * a waiter canceled is no longer counted as its principal's. */
static void test_share_alone(void **state)
{
	gm_poolq_limits lim = {0, 0, 4 * UNIT};
	gm_poolq_wait a, b, c, d;
	gm_share *s;

	open_lim(&lim);
	a = waiter(8 * UNIT, "uid 1");
	b = waiter(8 * UNIT, "uid 1");
	c = waiter(2 * UNIT, "uid 1");
	d = waiter(2 * UNIT, "uid 2");
	s = a.who;
	assert_int_equal(gm_poolq_get(t.q, &a), GM_OK);
	assert_int_equal(gm_poolq_get(t.q, &b), GM_OK);
	assert_int_equal(s->pool, 16 * UNIT);
	assert_int_equal(gm_poolq_get(t.q, &c), GM_EBUSY);
	assert_int_equal(gm_poolq_get(t.q, &d), GM_EBUSY);
	assert_int_equal(s->waiting, 1);
	gm_poolq_cancel(t.q, &c);
	assert_int_equal(s->waiting, 0);
	gm_shares_release(t.shares, c.who);
	done(&a);
	assert_int_equal(t.ngranted, 1);
	assert_ptr_equal(t.granted[0], &d);
	done(&b);
	done(&d);
	close_q();
}

/* P holds 8 units, over its share of 4, and waits for 8 more, alone:
 * granted unless another principal asked for room within
 * pool_bypass_ms, though it holds none now and waits for none (a client
 * between two requests). The one that asked first (first) let go of its
 * share before P's came; a bystander's share may be made between the
 * two, where the first one's was (moved), so that P's is not. */
struct alone_case {
	const char *what;
	const char *first;
	int moved;
	uint32_t bypass_ms;
	int rv;
};

static const struct alone_case alone_cases[] = {
    {"Q seen just now", "uid 2", 1, 10000, GM_EBUSY},
    {"P itself seen just now, its share made anew", "uid 1", 1, 10000, GM_OK},
    {"Q seen just now, P's share where Q's was", "uid 2", 0, 10000, GM_EBUSY},
    {"Q not seen within pool_bypass_ms", "uid 2", 1, 0, GM_OK},
};

static void test_share_recent(void **state)
{
	for (size_t i = 0; i < sizeof(alone_cases) / sizeof(alone_cases[0]);
	     i++) {
		const struct alone_case *k = &alone_cases[i];
		gm_poolq_limits lim = {64, k->bypass_ms, 4 * UNIT};
		gm_poolq_wait a, b, q;
		gm_share *bystander = NULL;
		int rv;

		open_lim(&lim);
		q = waiter(2 * UNIT, k->first);
		assert_int_equal(gm_poolq_get(t.q, &q), GM_OK);
		done(&q);
		if (k->moved)
			bystander = gm_shares_hold(t.shares, "uid 3");
		a = waiter(8 * UNIT, "uid 1");
		b = waiter(8 * UNIT, "uid 1");
		assert_int_equal(gm_poolq_get(t.q, &a), GM_OK);
		rv = gm_poolq_get(t.q, &b);
		if (rv != k->rv)
			fail_msg("%s: %d, want %d", k->what, rv, k->rv);
		done(&a);
		if (rv != GM_OK)
			assert_int_equal(t.ngranted, 1);
		done(&b);
		gm_shares_release(t.shares, bystander);
		close_q();
	}
}

/* Shares are found by name, and freed with their last holder. */
static void test_shares(void **state)
{
	gm_shares *ts;
	gm_share *a, *b, *a2;

	assert_int_equal(gm_shares_create(&ts), GM_OK);
	a = gm_shares_hold(ts, "uid 1000");
	b = gm_shares_hold(ts, "subject CN=svc");
	a2 = gm_shares_hold(ts, "uid 1000");
	assert_non_null(a);
	assert_ptr_equal(a, a2);
	assert_ptr_not_equal(a, b);
	assert_string_equal(b->name, "subject CN=svc");
	assert_int_equal(gm_shares_count(ts), 2);
	gm_shares_release(ts, a);
	assert_int_equal(gm_shares_count(ts), 2);
	gm_shares_release(ts, a2);
	gm_shares_release(ts, b);
	gm_shares_release(ts, NULL);
	assert_int_equal(gm_shares_count(ts), 0);
	/* A percent of a size, never 0. */
	assert_int_equal(gm_share_cap(1000, 50), 500);
	assert_int_equal(gm_share_cap(UINT64_MAX, 100), UINT64_MAX);
	assert_int_equal(gm_share_cap(1, 1), 1);
	gm_shares_destroy(ts);
}

static void test_slab_layout(void **state)
{
	gm_slab_cursor c;
	uint64_t r0, r1, r2, r3;

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
	    cmocka_unit_test(test_bypass),
	    cmocka_unit_test(test_share),
	    cmocka_unit_test(test_share_alone),
	    cmocka_unit_test(test_share_recent),
	    cmocka_unit_test(test_shares),
	    cmocka_unit_test(test_slab_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
