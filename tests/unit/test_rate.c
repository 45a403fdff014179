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

#define GAP (61 + 61 * 5) /* past the ring, five times over */

/* The steps of scripts, each on a fresh gm_rate started at 0 or at the
 * at of its window -1 step: window 0 adds value jobs at at, times times a
 * second apart; any other window asks for the rate over it at at. */
static const struct step {
	const char *script;
	double at;
	int window;
	double value;
	int times;
} steps[] = {
    /* Ten jobs every second for 100 s: every window says 10/s. */
    {"steady", 0.5, 0, 10, 100},
    {"steady", 100.2, 1, 10, 0},
    {"steady", 100.2, 10, 10, 0},
    {"steady", 100.2, 60, 10, 0},
    /* Only whole seconds count: jobs in the current second show up once
     * it has ended. */
    {"current second", 10.1, 0, 7, 1},
    {"current second", 10.9, 0, 3, 1},
    {"current second", 10.95, 1, 0, 0},
    {"current second", 11.0, 1, 10, 0},
    {"current second", 11.99, 10, 1, 0},
    {"current second", 12.0, 1, 0, 0},
    {"current second", 12.0, 10, 1, 0},
    /* A burst of 100 jobs in second 50, asked for at 51 s and later: the
     * 60 s window reaches back before the start (51 s long), and the
     * burst is out of every window once 60 whole seconds have passed. */
    {"burst", 50.3, 0, 100, 1},
    {"burst", 51.0, 1, 100, 0},
    {"burst", 51.0, 10, 10, 0},
    {"burst", 51.0, 60, 100.0 / 51, 0},
    {"burst", 70.0, 60, 100.0 / 60, 0},
    {"burst", 110.0, 60, 100.0 / 60, 0},
    {"burst", 111.0, 60, 0, 0},
    /* A start in the middle of a second: the first window is the time
     * since the start, not the whole second. */
    {"cut at start", 5.75, -1, 0, 0},
    {"cut at start", 5.8, 0, 1, 1},
    {"cut at start", 5.9, 1, 0, 0},
    {"cut at start", 6.0, 1, 4, 0},
    {"cut at start", 6.0, 60, 4, 0},
    {"cut at start", 7.0, 60, 1 / 1.25, 0},
    /* Nothing added for longer than the ring holds (GAP): old buckets
     * must not come back when the ring index wraps onto them. Then a gap
     * shorter than the ring: the seconds skipped read empty. */
    {"long gap", 0, 0, 1000, 61},
    {"long gap", GAP + 0.5, 0, 6, 1},
    {"long gap", GAP + 1, 1, 6, 0},
    {"long gap", GAP + 1, 60, 0.1, 0},
    {"long gap", GAP + 30.5, 0, 12, 1},
    {"long gap", GAP + 31, 60, 0.3, 0},
    {"long gap", GAP + 31, 10, 1.2, 0},
    /* Reading does not clear stale buckets, so it must skip them
     * itself. */
    {"after idle", 10.5, 0, 60, 1},
    {"after idle", 65.0, 60, 1, 0},
    {"after idle", 70.0, 60, 1, 0},
    {"after idle", 71.0, 60, 0, 0},
    {"after idle", 10.0 + 61 * 3, 60, 0, 0},
    /* A time before the newest bucket counts in it rather than
     * rewriting history. */
    {"going back", 20.5, 0, 1, 1},
    {"going back", 19.5, 0, 2, 1},
    {"going back", 20.9, 1, 0, 0},
    {"going back", 21.0, 1, 3, 0},
};

static void test_scripts(void **state)
{
	gm_rate r;

	(void)state;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *p = &steps[i];

		if (i == 0 || strcmp(p->script, steps[i - 1].script) != 0) {
			print_message("script %s\n", p->script);
			gm_rate_init(&r, 0);
		}
		if (p->window < 0)
			gm_rate_init(&r, p->at * S);
		else if (p->window > 0)
			assert_near(jobs_rate(&r, p->at, (unsigned)p->window),
				    p->value);
		for (int t = 0; t < p->times; t++)
			add_jobs(&r, p->at + t, p->value);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_scripts),
	    cmocka_unit_test(test_wrapping),
	    cmocka_unit_test(test_values_and_clamp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
