/*
 * test_timeline.c - gm_timeline: hand-worked cases, and random
 * multi-stream schedules checked against a brute-force scan of a fine
 * time grid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_timeline.h"

static void assert_near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.17g, want %.17g", got, want);
}

static void assert_totals(const struct gm_timeline *t, double copy,
			  double kernel, double both)
{
	assert_near(t->busy_us[GM_TL_COPY], copy, 1e-9);
	assert_near(t->busy_us[GM_TL_KERNEL], kernel, 1e-9);
	assert_near(t->overlap_us, both, 1e-9);
}

/* Stream 0: copy 0-10, kernel 10-30, copy 30-40; stream 1: copy 5-15,
 * kernel 15-25, copy 25-35. Kernels run 10-30 (20), copies 0-15 and
 * 25-40 (30), both 10-15 and 25-30 (10). */
static void test_two_streams(void **state)
{
	struct gm_timeline t = {0};

	gm_tl_add(&t, GM_TL_COPY, 5, 15);
	gm_tl_add(&t, GM_TL_KERNEL, 15, 25);
	gm_tl_add(&t, GM_TL_COPY, 25, 35);
	gm_tl_add(&t, GM_TL_COPY, 0, 10);
	gm_tl_add(&t, GM_TL_KERNEL, 10, 30);
	gm_tl_add(&t, GM_TL_COPY, 30, 40);
	gm_tl_fold(&t);
	assert_totals(&t, 30, 20, 10);
	assert_int_equal(t.n[GM_TL_COPY], 0);
	gm_tl_free(&t);
}

/* One stream's phases touch end to start: nothing overlaps; untimed
 * intervals (negative or reversed) are ignored. */
static void test_back_to_back(void **state)
{
	struct gm_timeline t = {0};

	gm_tl_add(&t, GM_TL_COPY, 0, 10);
	gm_tl_add(&t, GM_TL_KERNEL, 10, 20);
	gm_tl_add(&t, GM_TL_COPY, 20, 25);
	gm_tl_add(&t, GM_TL_KERNEL, -1, 5);
	gm_tl_add(&t, GM_TL_KERNEL, 9, 3);
	gm_tl_fold(&t);
	assert_totals(&t, 15, 10, 0);
	gm_tl_free(&t);
}

/* Periods add up; a discarded period counts nothing. */
static void test_periods(void **state)
{
	struct gm_timeline t = {0};

	gm_tl_add(&t, GM_TL_KERNEL, 0, 100);
	gm_tl_add(&t, GM_TL_COPY, 50, 150);
	gm_tl_fold(&t);
	gm_tl_add(&t, GM_TL_KERNEL, 0, 1000);
	gm_tl_discard(&t);
	gm_tl_add(&t, GM_TL_KERNEL, 0, 10);
	gm_tl_add(&t, GM_TL_COPY, 5, 10);
	gm_tl_fold(&t);
	assert_totals(&t, 105, 110, 55);
	gm_tl_free(&t);
}

#define GRID 4000 /* time steps of a random schedule */

/* Streams run jobs back to back (copy, kernel, copy) with random
 * lengths on integer times; the grid scan counts each unit step. */
static void test_random_schedules(void **state)
{
	unsigned seed = (unsigned)time(NULL);

	fprintf(stderr, "seed %u\n", seed);
	srand(seed);
	for (int round = 0; round < 50; round++) {
		static unsigned char copy[GRID], kern[GRID];
		struct gm_timeline t = {0};
		int streams = 1 + rand() % 8;
		double c = 0, k = 0, b = 0;

		memset(copy, 0, sizeof(copy));
		memset(kern, 0, sizeof(kern));
		for (int s = 0; s < streams; s++) {
			int at = rand() % 50;

			while (at < GRID - 100) {
				int p[4] = {at, 0, 0, 0};

				p[1] = p[0] + 1 + rand() % 20;
				p[2] = p[1] + 1 + rand() % 30;
				p[3] = p[2] + rand() % 20;
				for (int i = p[0]; i < p[3]; i++) {
					if (i < p[1] || i >= p[2])
						copy[i] = 1;
					else
						kern[i] = 1;
				}
				gm_tl_add(&t, GM_TL_COPY, p[0], p[1]);
				gm_tl_add(&t, GM_TL_KERNEL, p[1], p[2]);
				gm_tl_add(&t, GM_TL_COPY, p[2], p[3]);
				at = p[3] + rand() % 10;
			}
		}
		gm_tl_fold(&t);
		for (int i = 0; i < GRID; i++) {
			c += copy[i];
			k += kern[i];
			b += copy[i] && kern[i];
		}
		assert_totals(&t, c, k, b);
		gm_tl_free(&t);
	}
}

/* A total that jumps when work ends is shown no faster than the wall
 * clock, never backwards, and catches up while the device rests: over
 * any two reads the share shown is between 0 and 100%. */
static void test_shown(void **state)
{
	struct gm_tl_shown s;
	double prev = 0;

	gm_tl_shown_init(&s, 1000);
	assert_near(gm_tl_show(&s, 0, 1000), 0, 0);
	/* A 3 s job ends 1 s after counting began: 1 s is shown. */
	assert_near(gm_tl_show(&s, 3e6, 1000 + 1e6), 1e6, 0);
	assert_near(gm_tl_show(&s, 3e6, 1000 + 1.5e6), 1.5e6, 0);
	/* A total read lower (an open period's host time replaced by its
	 * shorter device time) takes nothing back. */
	assert_near(gm_tl_show(&s, 1e6, 1000 + 2e6), 1.5e6, 0);
	assert_near(gm_tl_show(&s, 3e6, 1000 + 9e6), 3e6, 0);
	/* A clock that reads the same or earlier lets nothing out. */
	assert_near(gm_tl_show(&s, 5e6, 1000 + 9e6), 3e6, 0);
	assert_near(gm_tl_show(&s, 5e6, 1000 + 8e6), 3e6, 0);
	prev = 3e6;
	for (int i = 1; i <= 100; i++) {
		double now = 1000 + 9e6 + i * 1e5;
		double v =
		    gm_tl_show(&s, 3e6 + (i % 7 == 0 ? 4e6 : 0) + i * 5e4, now);

		assert_true(v >= prev && v - prev <= 1e5 + 1e-6);
		prev = v;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_streams),
	    cmocka_unit_test(test_back_to_back),
	    cmocka_unit_test(test_periods),
	    cmocka_unit_test(test_random_schedules),
	    cmocka_unit_test(test_shown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
