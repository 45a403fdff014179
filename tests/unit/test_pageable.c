/*
 * test_pageable.c - gm_pageable, the admission of requests larger than
 * the staging pool into pageable memory. The cap: as configured, cut to
 * half the host's memory, 0 turning the path off. The decision: a slab
 * that fits the pool is the pool's (up to its whole size); a larger one
 * is let in while the cap has room (up to exactly the cap), refused
 * EBUSY while others hold the room it needs and let in again once they
 * give it back, refused ETOOBIG when over the cap or with the path off,
 * each refusal counted and its message naming the keys. The memory: a
 * slab taken is mapped and writable end to end, counted while held, the
 * peak kept after it is given back. The share: a principal holding
 * nothing is let in up to the cap, one holding some only within
 * principal_share_percent of it, refused EBUSY naming the key past it
 * while another principal is let in, each principal's bytes counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_pageable.h"

#define MIB  (UINT64_C(1) << 20)
#define GIB  (UINT64_C(1) << 30)
#define POOL (4 * MIB)
#define CAP  (16 * MIB)

/* One admission: a slab of bytes against POOL, with the result wanted. */
struct admit_case {
	const char *what;
	uint64_t limit, held; /* the cap, and what others hold now */
	uint64_t bytes;
	int rv;
	bool pageable;
	const char *names[2]; /* what its message must name */
};

static const struct admit_case admit_cases[] = {
    {"small: the pool's", CAP, 0, MIB, GM_OK, false, {NULL}},
    {"the whole pool: the pool's", CAP, CAP, POOL, GM_OK, false, {NULL}},
    {"over the pool, cap free", CAP, 0, POOL + 1, GM_OK, true, {NULL}},
    {"exactly the cap", CAP, 0, CAP, GM_OK, true, {NULL}},
    {"exactly the room left", CAP, CAP - 6 * MIB, 6 * MIB, GM_OK, true, {NULL}},
    {"over the room left",
     CAP,
     CAP - 6 * MIB,
     6 * MIB + 1,
     GM_EBUSY,
     false,
     {"pageable_max_bytes=16 MiB", "try again later"}},
    {"over the cap",
     CAP,
     0,
     CAP + 1,
     GM_ETOOBIG,
     false,
     {"pool_bytes=4 MiB", "pageable_max_bytes=16 MiB"}},
    {"over the cap, cap full",
     CAP,
     CAP,
     CAP + 1,
     GM_ETOOBIG,
     false,
     {"pool_bytes", "pageable_max_bytes"}},
    {"path off",
     0,
     0,
     POOL + 1,
     GM_ETOOBIG,
     false,
     {"pool_bytes=4 MiB", "pageable_max_bytes=0"}},
    {"path off, fits the pool", 0, 0, POOL, GM_OK, false, {NULL}},
};

static void test_admit(void **state)
{
	for (size_t i = 0; i < sizeof(admit_cases) / sizeof(admit_cases[0]);
	     i++) {
		const struct admit_case *c = &admit_cases[i];
		char text[97] = "";
		gm_pageable p;
		bool pageable = !c->pageable;
		int rv;

		gm_pageable_init(&p, c->limit, 0, 100);
		p.bytes = c->held;
		rv = gm_pageable_admit(&p, POOL, c->bytes, NULL, &pageable,
				       text, sizeof(text));
		if (rv != c->rv || pageable != c->pageable)
			fail_msg("%s: rv %d pageable %d, want %d %d (%s)",
				 c->what, rv, pageable, c->rv, c->pageable,
				 text);
		for (int k = 0; k < 2 && c->names[k] != NULL; k++)
			if (strstr(text, c->names[k]) == NULL)
				fail_msg("%s: \"%s\" does not name %s", c->what,
					 text, c->names[k]);
		assert_int_equal(p.busy, rv == GM_EBUSY);
		assert_int_equal(p.too_big, rv == GM_ETOOBIG);
		/* Deciding takes nothing. */
		assert_int_equal(p.bytes, c->held);
		assert_int_equal(p.requests, 0);
	}
}

static void test_cap(void **state)
{
	gm_pageable p;

	/* As configured, within half the host. */
	assert_int_equal(gm_pageable_init(&p, 16 * GIB, 64 * GIB, 100),
			 16 * GIB);
	assert_int_equal(p.limit, 16 * GIB);
	assert_int_equal(gm_pageable_init(&p, 32 * GIB, 64 * GIB, 100),
			 32 * GIB);
	/* Cut to half the host. */
	assert_int_equal(gm_pageable_init(&p, 16 * GIB, 24 * GIB, 100),
			 12 * GIB);
	assert_int_equal(p.limit, 12 * GIB);
	/* Off stays off; an unknown host size cuts nothing. */
	assert_int_equal(gm_pageable_init(&p, 0, 24 * GIB, 100), 0);
	assert_int_equal(gm_pageable_init(&p, 16 * GIB, 0, 100), 16 * GIB);
	/* A fresh start counts nothing. */
	p.busy = p.requests = 3;
	gm_pageable_init(&p, CAP, 0, 100);
	assert_int_equal(p.busy, 0);
	assert_int_equal(p.requests, 0);
}

/* Admits and takes bytes for who: the admission's result. */
static int take(gm_pageable *p, gm_share *who, uint64_t bytes, void **mem,
		char *text)
{
	bool pageable;
	int rv = gm_pageable_admit(p, POOL, bytes, who, &pageable, text, 97);

	if (rv == GM_OK) {
		assert_true(pageable);
		assert_int_equal(gm_pageable_take(p, who, bytes, mem), GM_OK);
	}
	return rv;
}

/* Two slabs taken, a third refused until one is given back. */
static void test_take_give(void **state)
{
	char text[97];
	gm_pageable p;
	uint8_t *a, *b, *c;
	bool pageable;

	gm_pageable_init(&p, CAP, 0, 100);
	assert_int_equal(take(&p, NULL, 10 * MIB, (void **)&a, text), GM_OK);
	a[0] = 1;
	a[10 * MIB - 1] = 2;
	assert_int_equal(take(&p, NULL, 6 * MIB, (void **)&b, text), GM_OK);
	memset(b, 0x5a, 6 * MIB);
	assert_int_equal(a[10 * MIB - 1], 2);
	assert_int_equal(p.bytes, CAP);
	assert_int_equal(p.held, 2);
	assert_int_equal(p.requests, 2);
	assert_int_equal(gm_pageable_admit(&p, POOL, POOL + 1, NULL, &pageable,
					   text, sizeof(text)),
			 GM_EBUSY);
	/* The pool's requests go on meanwhile. */
	assert_int_equal(gm_pageable_admit(&p, POOL, POOL, NULL, &pageable,
					   text, sizeof(text)),
			 GM_OK);
	assert_false(pageable);
	gm_pageable_give(&p, NULL, a, 10 * MIB);
	assert_int_equal(p.bytes, 6 * MIB);
	assert_int_equal(p.held, 1);
	assert_int_equal(take(&p, NULL, POOL + 1, (void **)&c, text), GM_OK);
	c[POOL] = 3;
	gm_pageable_give(&p, NULL, c, POOL + 1);
	gm_pageable_give(&p, NULL, b, 6 * MIB);
	assert_int_equal(p.bytes, 0);
	assert_int_equal(p.held, 0);
	assert_int_equal(p.requests, 3);
	assert_int_equal(p.peak_bytes, CAP);
	assert_int_equal(p.busy, 1);
	assert_int_equal(p.too_big, 0);
}

static void test_share(void **state)
{
	char text[97] = "";
	gm_shares *t;
	gm_share *a, *b;
	void *a1, *a2, *b1, *big;
	gm_pageable p;

	assert_int_equal(gm_shares_create(&t), GM_OK);
	a = gm_shares_hold(t, "uid 1");
	b = gm_shares_hold(t, "uid 2");
	gm_pageable_init(&p, 2 * CAP, 0, 50);
	assert_int_equal(p.share, CAP);
	/* Holding nothing, a takes more than its share. */
	assert_int_equal(take(&p, a, 20 * MIB, &big, text), GM_OK);
	assert_int_equal(a->pageable, 20 * MIB);
	assert_int_equal(take(&p, a, 5 * MIB, &a1, text), GM_EBUSY);
	assert_non_null(strstr(text, "principal_share_percent"));
	assert_non_null(strstr(text, "uid 1"));
	gm_pageable_give(&p, a, big, 20 * MIB);
	/* Within its share, then past it while b is let in. */
	assert_int_equal(take(&p, a, 10 * MIB, &a1, text), GM_OK);
	assert_int_equal(take(&p, a, 6 * MIB + 1, &a2, text), GM_EBUSY);
	assert_int_equal(take(&p, b, 10 * MIB, &b1, text), GM_OK);
	assert_int_equal(take(&p, a, 6 * MIB, &a2, text), GM_OK);
	assert_int_equal(a->pageable, CAP);
	assert_int_equal(b->pageable, 10 * MIB);
	assert_int_equal(p.bytes, 26 * MIB);
	assert_int_equal(p.busy, 2);
	gm_pageable_give(&p, a, a1, 10 * MIB);
	gm_pageable_give(&p, a, a2, 6 * MIB);
	gm_pageable_give(&p, b, b1, 10 * MIB);
	assert_int_equal(a->pageable, 0);
	assert_int_equal(b->pageable, 0);
	assert_int_equal(p.bytes, 0);
	gm_shares_release(t, a);
	gm_shares_release(t, b);
	gm_shares_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_admit),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_take_give),
	    cmocka_unit_test(test_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
