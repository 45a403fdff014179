/*
 * gm_rate.h - rates over the last seconds, in constant memory.
 *
 * A ring of one-second buckets: each holds the sums of a few values
 * (jobs, FLOPs, bytes each way) counted during that second of the
 * monotonic clock. The ring keeps the second being counted plus the
 * GM_RATE_SECONDS before it, so a rate over any window up to that long
 * is a sum of whole buckets divided by the window. Only whole seconds
 * count: the one still being counted is left out, so a rate lags by up
 * to a second but never jumps when a new second starts. A window that
 * reaches back before gm_rate_init is cut to the time since then.
 *
 * A plain struct with no pointers; not locked. The daemon keeps one in
 * its stats and touches it on the loop thread only.
 */
#ifndef GM_RATE_H
#define GM_RATE_H

#include <stdint.h>

#define GM_RATE_SECONDS 60 /* the longest window */

/* What each bucket sums. */
enum gm_rate_value {
	GM_RATE_JOBS,
	GM_RATE_FLOPS,
	GM_RATE_H2D, /* bytes */
	GM_RATE_D2H, /* bytes */
	GM_RATE_NVAL
};

typedef struct gm_rate {
	double start_us; /* the clock at gm_rate_init */
	int64_t cur;	 /* the second the newest bucket counts */
	double b[GM_RATE_SECONDS + 1][GM_RATE_NVAL]; /* second t at t % size */
} gm_rate;

/* Empties r; windows start no earlier than now_us (monotonic µs). */
void gm_rate_init(gm_rate *r, double now_us);

/* Adds v[0..GM_RATE_NVAL) to the bucket of the second now_us falls in.
 * A time before the newest bucket's second counts in that bucket.
 * Constant time, apart from zeroing the buckets of seconds skipped. */
void gm_rate_add(gm_rate *r, double now_us, const double v[GM_RATE_NVAL]);

/*
 * Per-second rates of each value over the window_s (1..GM_RATE_SECONDS,
 * clamped) whole seconds before the one now_us falls in: the window's
 * sums divided by its length in seconds, or by the time since
 * gm_rate_init when that is shorter. All 0 before one whole second has
 * passed. Does not change r.
 */
void gm_rate_get(const gm_rate *r, double now_us, unsigned window_s,
		 double out[GM_RATE_NVAL]);

#endif
