/*
 * test_rate.c - gm_rate: steady and bursty rates over 1, 10 and 60 s,
 * the second still being counted left out, windows cut at the start,
 * gaps longer than the ring, and the ring wrapping many times.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "gm_rate.h"

#define S 1e6 /* one second in µs */

static void add_jobs(gm_rate *r, double at_s, double jobs)
{
	double v[GM_RATE_NVAL] = {[GM_RATE_JOBS] = jobs};

	gm_rate_add(r, at_s * S, v);
}

static double jobs_rate(const gm_rate *r, double at_s, unsigned window)
{
	double out[GM_RATE_NVAL];

	gm_rate_get(r, at_s * S, window, out);
	return out[GM_RATE_JOBS];
}

static void assert_near(double got, double want)
{
	if (!(fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want))))
		fail_msg("got %.17g, want %.17g", got, want);
}

static void test_empty(void **state)
{
	double out[GM_RATE_NVAL];
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 1000 * S);
	for (unsigned w = 1; w <= GM_RATE_SECONDS; w++) {
		gm_rate_get(&r, 1234.5 * S, w, out);
		for (int i = 0; i < GM_RATE_NVAL; i++)
			assert_true(out[i] == 0);
	}
}

/* Ten jobs every second for 100 s: every window says 10/s. */
static void test_steady(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	for (int s = 0; s < 100; s++)
		add_jobs(&r, s + 0.5, 10);
	assert_near(jobs_rate(&r, 100.2, 1), 10);
	assert_near(jobs_rate(&r, 100.2, 10), 10);
	assert_near(jobs_rate(&r, 100.2, 60), 10);
}

/* Only whole seconds count: jobs in the current second show up once it
 * has ended. */
static void test_current_second_left_out(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	add_jobs(&r, 10.1, 7);
	add_jobs(&r, 10.9, 3);
	assert_near(jobs_rate(&r, 10.95, 1), 0);
	assert_near(jobs_rate(&r, 11.0, 1), 10);
	assert_near(jobs_rate(&r, 11.99, 10), 1);
	assert_near(jobs_rate(&r, 12.0, 1), 0);
	assert_near(jobs_rate(&r, 12.0, 10), 1);
}

/* A burst of 100 jobs in second 50, asked for at 51 s and later. */
static void test_burst(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	add_jobs(&r, 50.3, 100);
	assert_near(jobs_rate(&r, 51.0, 1), 100);
	assert_near(jobs_rate(&r, 51.0, 10), 10);
	/* The 60 s window reaches back before the start: 51 s long. */
	assert_near(jobs_rate(&r, 51.0, 60), 100.0 / 51);
	assert_near(jobs_rate(&r, 70.0, 60), 100.0 / 60);
	/* Out of every window once 60 whole seconds have passed. */
	assert_near(jobs_rate(&r, 110.0, 60), 100.0 / 60);
	assert_near(jobs_rate(&r, 111.0, 60), 0);
}

/* A start in the middle of a second: the first window is the time since
 * the start, not the whole second. */
static void test_window_cut_at_start(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 5.75 * S);
	add_jobs(&r, 5.8, 1);
	assert_near(jobs_rate(&r, 5.9, 1), 0);
	assert_near(jobs_rate(&r, 6.0, 1), 4);
	assert_near(jobs_rate(&r, 6.0, 60), 4);
	assert_near(jobs_rate(&r, 7.0, 60), 1 / 1.25);
}

/* Nothing added for longer than the ring holds: old buckets must not
 * come back when the ring index wraps onto them. */
static void test_long_gap(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	for (int s = 0; s < 61; s++)
		add_jobs(&r, s, 1000);
	add_jobs(&r, 61 + 61 * 5 + 0.5, 6);
	assert_near(jobs_rate(&r, 61 + 61 * 5 + 1, 1), 6);
	assert_near(jobs_rate(&r, 61 + 61 * 5 + 1, 60), 0.1);
	/* A gap shorter than the ring: the seconds skipped read empty. */
	add_jobs(&r, 61 + 61 * 5 + 30.5, 12);
	assert_near(jobs_rate(&r, 61 + 61 * 5 + 31, 60), 0.3);
	assert_near(jobs_rate(&r, 61 + 61 * 5 + 31, 10), 1.2);
}

/* Reading does not clear stale buckets, so it must skip them itself. */
static void test_get_after_idle(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	add_jobs(&r, 10.5, 60);
	assert_near(jobs_rate(&r, 65.0, 60), 1);
	assert_near(jobs_rate(&r, 70.0, 60), 1);
	assert_near(jobs_rate(&r, 71.0, 60), 0);
	assert_near(jobs_rate(&r, 10.0 + 61 * 3, 60), 0);
}

/* The value of second s is s, for 1000 s: the ring wraps 16 times and
 * each window averages its own seconds. */
static void test_wrapping(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	for (int s = 0; s < 1000; s++)
		add_jobs(&r, s + 0.25, s);
	assert_near(jobs_rate(&r, 1000.0, 1), 999);
	assert_near(jobs_rate(&r, 1000.0, 10), (990 + 999) / 2.0);
	assert_near(jobs_rate(&r, 1000.0, 60), (940 + 999) / 2.0);
}

/* Each value has its own sums; windows outside 1..60 are clamped. */
static void test_values_and_clamp(void **state)
{
	double v[GM_RATE_NVAL] = {1, 2e9, 3e6, 4e6};
	double out[GM_RATE_NVAL];
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	for (int s = 0; s < 120; s++)
		gm_rate_add(&r, (s + 0.5) * S, v);
	gm_rate_get(&r, 120 * S, 0, out);
	for (int i = 0; i < GM_RATE_NVAL; i++)
		assert_near(out[i], v[i]);
	gm_rate_get(&r, 120 * S, 100000, out);
	for (int i = 0; i < GM_RATE_NVAL; i++)
		assert_near(out[i], v[i]);
	assert_near(jobs_rate(&r, 120, GM_RATE_SECONDS + 1),
		    jobs_rate(&r, 120, GM_RATE_SECONDS));
}

/* A time before the newest bucket counts in it rather than rewriting
 * history. */
static void test_time_going_back(void **state)
{
	gm_rate r;

	(void)state;
	gm_rate_init(&r, 0);
	add_jobs(&r, 20.5, 1);
	add_jobs(&r, 19.5, 2);
	assert_near(jobs_rate(&r, 20.9, 1), 0);
	assert_near(jobs_rate(&r, 21.0, 1), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_steady),
	    cmocka_unit_test(test_current_second_left_out),
	    cmocka_unit_test(test_burst),
	    cmocka_unit_test(test_window_cut_at_start),
	    cmocka_unit_test(test_long_gap),
	    cmocka_unit_test(test_get_after_idle),
	    cmocka_unit_test(test_wrapping),
	    cmocka_unit_test(test_values_and_clamp),
	    cmocka_unit_test(test_time_going_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
