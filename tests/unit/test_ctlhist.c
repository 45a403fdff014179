/*
 * test_ctlhist.c - gm_ctlhist, gemmctl bench's histograms: percentiles
 * by nearest rank within the bucket width (about 1.2%), exact count,
 * mean, min and max, and the values at and beyond either end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "gm_ctlhist.h"

#define WIDTH 0.012 /* half a bucket, relative: 10^(1/200) - 1 */

/* |got - want| within rel of want. */
static void assert_near(double got, double want, double rel)
{
	if (!(fabs(got - want) <= rel * fabs(want)))
		fail_msg("got %.9g, want %.9g (within %.3g)", got, want, rel);
}

static void test_empty(void **state)
{
	gm_ctlhist h;

	(void)state;
	gm_ctlhist_init(&h);
	assert_true(gm_ctlhist_quantile(&h, 0.5) == 0);
	assert_true(gm_ctlhist_mean(&h) == 0);
	assert_int_equal(h.count, 0);
}

/* One value: every percentile is that value, exactly (the clamp). */
static void test_one_value(void **state)
{
	gm_ctlhist h;

	(void)state;
	gm_ctlhist_init(&h);
	gm_ctlhist_add(&h, 1234.5);
	assert_true(gm_ctlhist_quantile(&h, 0) == 1234.5);
	assert_true(gm_ctlhist_quantile(&h, 0.5) == 1234.5);
	assert_true(gm_ctlhist_quantile(&h, 1) == 1234.5);
	assert_true(gm_ctlhist_mean(&h) == 1234.5);
}

/* 1..10000 µs: the nearest-rank percentiles within a bucket. */
static void test_uniform(void **state)
{
	static const struct {
		double q, want;
	} cases[] = {
	    {0.01, 100},  {0.5, 5000},	 {0.9, 9000},
	    {0.99, 9900}, {0.999, 9990}, {1, 10000},
	};
	gm_ctlhist h;

	(void)state;
	gm_ctlhist_init(&h);
	for (int v = 10000; v >= 1; v--)
		gm_ctlhist_add(&h, v);
	assert_int_equal(h.count, 10000);
	assert_true(h.min == 1 && h.max == 10000);
	assert_true(gm_ctlhist_mean(&h) == 5000.5);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_near(gm_ctlhist_quantile(&h, cases[i].q), cases[i].want,
			    WIDTH);
}

/* A tail: 99 fast values and one slow one; p99 is fast, max slow. */
static void test_tail(void **state)
{
	gm_ctlhist h;

	(void)state;
	gm_ctlhist_init(&h);
	for (int i = 0; i < 99; i++)
		gm_ctlhist_add(&h, 250);
	gm_ctlhist_add(&h, 4e6);
	assert_near(gm_ctlhist_quantile(&h, 0.99), 250, WIDTH);
	assert_true(gm_ctlhist_quantile(&h, 1) == 4e6);
}

/* Zero, negative and NaN count as 0 (the CPU's copies take none);
 * values beyond the last bucket stay exact through the clamp. */
static void test_ends(void **state)
{
	gm_ctlhist h;

	(void)state;
	gm_ctlhist_init(&h);
	gm_ctlhist_add(&h, 0);
	gm_ctlhist_add(&h, -5);
	gm_ctlhist_add(&h, NAN);
	assert_true(gm_ctlhist_quantile(&h, 0.5) == 0);
	assert_true(h.max == 0 && h.sum == 0);
	gm_ctlhist_add(&h, 0.005);
	assert_true(gm_ctlhist_quantile(&h, 1) == 0.005);
	gm_ctlhist_init(&h);
	for (int i = 0; i < 9; i++)
		gm_ctlhist_add(&h, 0.25); /* sub-µs: a queue on the CPU */
	gm_ctlhist_add(&h, 0.75);
	assert_near(gm_ctlhist_quantile(&h, 0.5), 0.25, WIDTH);
	gm_ctlhist_init(&h);
	gm_ctlhist_add(&h, 3e10);
	gm_ctlhist_add(&h, 5e10);
	assert_true(gm_ctlhist_quantile(&h, 0.5) == 3e10);
	assert_true(gm_ctlhist_quantile(&h, 1) == 5e10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),   cmocka_unit_test(test_one_value),
	    cmocka_unit_test(test_uniform), cmocka_unit_test(test_tail),
	    cmocka_unit_test(test_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
