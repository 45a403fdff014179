/*
 * test_id.c - gm_id, random ids nobody holds: within 1..max for a max
 * of 2^k - 1 (never 0), never one the set says is taken (drawn again),
 * GM_EIO when every draw is taken, and different from one call to the
 * next.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_id.h"

/* A set that holds ids below its bound, and counts the questions. */
struct set {
	uint64_t below;
	int asked;
};

static int taken(const void *p, uint64_t id)
{
	struct set *s = (struct set *)p;

	s->asked++;
	return id < s->below;
}

static void test_range(void **state)
{
	static const uint64_t maxes[] = {1, 7, 255, (UINT64_C(1) << 53) - 1,
					 UINT64_MAX};
	struct set none = {0, 0};
	uint64_t id, prev = 0;
	int differ = 0;

	(void)state;
	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++)
		for (int i = 0; i < 200; i++) {
			int rv = gm_id_fresh(maxes[m], taken, &none, &id);

			/* With max 1, a draw of 0 is retried: 8 draws all
			 * 0 are 1 in 256. */
			if (maxes[m] == 1 && rv == GM_EIO)
				continue;
			assert_int_equal(rv, GM_OK);
			assert_true(id >= 1 && id <= maxes[m]);
			differ += maxes[m] >= 255 && id != prev;
			prev = id;
		}
	/* Over the 600 draws from 255 or more ids, a repeat of the one
	 * before is rare (about 1 in 255 at worst). */
	assert_true(differ > 580);
}

/* Ids the set holds are drawn again; when all are, GM_EIO. */
static void test_taken(void **state)
{
	struct set low = {16, 0}, all = {UINT64_MAX, 0};
	uint64_t id;

	(void)state;
	for (int i = 0; i < 100; i++) {
		/* 8 draws all taken: (17/256)^8, about 2^-31. */
		assert_int_equal(gm_id_fresh(255, taken, &low, &id), GM_OK);
		assert_true(id >= 16 && id <= 255);
	}
	assert_true(low.asked >= 100);
	/* Every draw is asked about: a draw of 0, retried without asking,
	 * is 1 in 2^64 here (from 255 ids it would be 1 in 256 a draw). */
	assert_int_equal(gm_id_fresh(UINT64_MAX, taken, &all, &id), GM_EIO);
	assert_int_equal(all.asked, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_range),
	    cmocka_unit_test(test_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
