/*
 * test_hist.c - gm_hist: bucket edges, quantiles against inputs whose
 * quantiles are known, the empty and overflow cases, and merging.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "gm_hist.h"

#define LAST (GM_HIST_BUCKETS - 1)

/* One bucket is a factor of 10^0.1: an estimate inside the right bucket
 * is within this of the true value. */
#define BUCKET_RATIO 1.2589254117941673

static void assert_within_bucket(double got, double want)
{
	if (!(got <= want * BUCKET_RATIO && got >= want / BUCKET_RATIO))
		fail_msg("%.17g is more than one bucket from %.17g", got, want);
}

static unsigned only_bucket(const gm_hist *h)
{
	for (unsigned i = 0; i < GM_HIST_BUCKETS; i++)
		if (h->b[i] != 0)
			return i;
	fail_msg("histogram is empty");
	return 0;
}

static unsigned bucket_of(double us)
{
	gm_hist h;

	gm_hist_init(&h);
	gm_hist_add(&h, us);
	assert_int_equal(h.count, 1);
	return only_bucket(&h);
}

static void test_layout(void **state)
{
	(void)state;
	assert_int_equal(GM_HIST_BUCKETS, 82);
	assert_true(gm_hist_upper(0) == 1.0);
	assert_true(gm_hist_upper(10) == 10.0);
	assert_true(gm_hist_upper(30) == 1000.0);
	assert_true(gm_hist_upper(LAST - 1) == 1e8);
	assert_true(isinf(gm_hist_upper(LAST)));
	for (unsigned i = 0; i < LAST; i++) {
		double want = pow(10.0, i / 10.0);

		assert_true(fabs(gm_hist_upper(i) / want - 1) < 1e-15);
		assert_true(gm_hist_upper(i + 1) > gm_hist_upper(i));
	}
}

/* A value equal to a bound closes that bucket; the next double up opens
 * the next one. */
static void test_edges_exact(void **state)
{
	(void)state;
	for (unsigned i = 0; i < LAST; i++) {
		double up = gm_hist_upper(i);

		assert_int_equal(bucket_of(up), i);
		assert_int_equal(bucket_of(nextafter(up, INFINITY)), i + 1);
		if (i > 0)
			assert_int_equal(bucket_of(nextafter(up, 0)), i);
	}
}

/* The constant-time bucket choice agrees with a linear search over the
 * bounds, across the whole range. */
static void test_matches_linear_search(void **state)
{
	uint64_t x = 88172645463325252u;

	(void)state;
	for (int n = 0; n < 200000; n++) {
		unsigned i = 0;
		double us;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		us = pow(10.0,
			 (double)(x >> 11) / 9007199254740992.0 * 9.0 - 0.5);
		while (i < LAST && us > gm_hist_upper(i))
			i++;
		assert_int_equal(bucket_of(us), i);
	}
}

static void test_small_and_invalid_values(void **state)
{
	gm_hist h;

	(void)state;
	assert_int_equal(bucket_of(0), 0);
	assert_int_equal(bucket_of(0.5), 0);
	assert_int_equal(bucket_of(1e-300), 0);
	assert_int_equal(bucket_of(-5), 0);
	assert_int_equal(bucket_of(NAN), 0);
	gm_hist_init(&h);
	gm_hist_add(&h, -5);
	gm_hist_add(&h, NAN);
	assert_int_equal(h.count, 2);
	assert_true(h.sum == 0 && h.max == 0);
	assert_true(gm_hist_quantile(&h, 0.5) == 0);
}

static void test_empty(void **state)
{
	gm_hist h;

	(void)state;
	gm_hist_init(&h);
	assert_int_equal(h.count, 0);
	assert_true(gm_hist_quantile(&h, 0) == 0);
	assert_true(gm_hist_quantile(&h, 0.5) == 0);
	assert_true(gm_hist_quantile(&h, 1) == 0);
}

static void test_uniform(void **state)
{
	gm_hist h;

	(void)state;
	gm_hist_init(&h);
	for (int v = 1; v <= 10000; v++)
		gm_hist_add(&h, v);
	assert_int_equal(h.count, 10000);
	assert_true(h.sum == 50005000.0);
	assert_true(h.max == 10000.0);
	assert_within_bucket(gm_hist_quantile(&h, 0.5), 5000);
	assert_within_bucket(gm_hist_quantile(&h, 0.9), 9000);
	assert_within_bucket(gm_hist_quantile(&h, 0.99), 9900);
	assert_within_bucket(gm_hist_quantile(&h, 0.01), 100);
	assert_true(gm_hist_quantile(&h, 1) == 10000.0);
	assert_true(gm_hist_quantile(&h, 0) <= 1.0);
}

static void test_monotone_and_clamped(void **state)
{
	double prev = 0;
	gm_hist h;

	(void)state;
	gm_hist_init(&h);
	for (int v = 1; v <= 1000; v++)
		gm_hist_add(&h, v * v * 0.37);
	for (double q = 0; q <= 1.0; q += 0.001) {
		double x = gm_hist_quantile(&h, q);

		assert_true(x >= prev);
		assert_true(x <= h.max);
		prev = x;
	}
	assert_true(gm_hist_quantile(&h, -1) == gm_hist_quantile(&h, 0));
	assert_true(gm_hist_quantile(&h, NAN) == gm_hist_quantile(&h, 0));
	assert_true(gm_hist_quantile(&h, 7) == h.max);
}

static void test_constant(void **state)
{
	gm_hist h;

	(void)state;
	gm_hist_init(&h);
	for (int i = 0; i < 1000; i++)
		gm_hist_add(&h, 250);
	assert_int_equal(only_bucket(&h), 24); /* (199.5, 251.2] */
	assert_int_equal(h.b[24], 1000);
	for (double q = 0; q <= 1.0; q += 0.125) {
		double x = gm_hist_quantile(&h, q);

		assert_true(x <= 250.0);
		assert_within_bucket(x, 250);
	}
	assert_true(gm_hist_quantile(&h, 1) == 250.0);
}

/* Past 1e8 µs everything shares the +Inf bucket; quantiles there lie
 * between 1e8 and the largest value. */
static void test_huge(void **state)
{
	gm_hist h;

	(void)state;
	gm_hist_init(&h);
	gm_hist_add(&h, 5e8);
	gm_hist_add(&h, 1e12);
	assert_int_equal(h.b[LAST], 2);
	assert_true(h.max == 1e12);
	assert_true(gm_hist_quantile(&h, 0) == 1e8);
	assert_true(gm_hist_quantile(&h, 1) == 1e12);
	assert_true(gm_hist_quantile(&h, 0.5) > 1e8);
	assert_true(gm_hist_quantile(&h, 0.5) < 1e12);
	gm_hist_add(&h, INFINITY);
	assert_int_equal(h.b[LAST], 3);
	assert_true(isinf(h.max));
}

static void test_merge(void **state)
{
	gm_hist all, odd, even;

	(void)state;
	gm_hist_init(&all);
	gm_hist_init(&odd);
	gm_hist_init(&even);
	for (int v = 1; v <= 5000; v++) {
		gm_hist_add(&all, v * 3.5);
		gm_hist_add(v % 2 ? &odd : &even, v * 3.5);
	}
	gm_hist_merge(&odd, &even);
	assert_int_equal(odd.count, all.count);
	assert_true(odd.sum == all.sum);
	assert_true(odd.max == all.max);
	assert_memory_equal(odd.b, all.b, sizeof(all.b));
	assert_true(gm_hist_quantile(&odd, 0.5) == gm_hist_quantile(&all, 0.5));

	gm_hist_init(&even);
	gm_hist_merge(&even, &all);
	assert_memory_equal(&even, &all, sizeof(all));
}

/* Latency-like mixes whose percentiles are known exactly: n1 values of
 * v1, then n2 of v2, then n3 of v3 (v1 < v2 < v3, each a bucket edge,
 * so every estimate is at most the true value and within its bucket). */
static const struct mix_case {
	unsigned n1, n2, n3;
	double v1, v2, v3;
	double p50, p90, p99;
} mix_cases[] = {
    /* a fast majority, a slow tail and one outlier */
    {90, 9, 1, 100, 1000, 10000, 100, 100, 1000},
    /* bimodal: half cached, half a cold start */
    {50, 49, 1, 10, 1e6, 1e7, 10, 1e6, 1e6},
    /* 1% slow: p99 still the fast value, the slow one only at max */
    {990, 9, 1, 1000, 1e5, 1e8, 1000, 1000, 1000},
    /* a 2% tail: p99 falls in it */
    {980, 10, 10, 10, 100, 1000, 10, 10, 100},
};

static void test_known_percentiles(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(mix_cases) / sizeof(mix_cases[0]); i++) {
		const struct mix_case *c = &mix_cases[i];
		const double q[3] = {0.50, 0.90, 0.99};
		const double want[3] = {c->p50, c->p90, c->p99};
		gm_hist h;

		gm_hist_init(&h);
		for (unsigned k = 0; k < c->n1 + c->n2 + c->n3; k++)
			gm_hist_add(&h, k < c->n1	    ? c->v1
					: k < c->n1 + c->n2 ? c->v2
							    : c->v3);
		for (int j = 0; j < 3; j++) {
			double got = gm_hist_quantile(&h, q[j]);

			if (got > want[j])
				fail_msg("case %zu: p%.0f %.17g above %.17g", i,
					 q[j] * 100, got, want[j]);
			assert_within_bucket(got, want[j]);
		}
		assert_true(gm_hist_quantile(&h, 1) == c->v3);
		assert_true(h.max == c->v3);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout),
	    cmocka_unit_test(test_edges_exact),
	    cmocka_unit_test(test_matches_linear_search),
	    cmocka_unit_test(test_small_and_invalid_values),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_uniform),
	    cmocka_unit_test(test_monotone_and_clamped),
	    cmocka_unit_test(test_constant),
	    cmocka_unit_test(test_huge),
	    cmocka_unit_test(test_merge),
	    cmocka_unit_test(test_known_percentiles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
