/*
 * gm_rate.c - the ring of one-second buckets behind the stats' rates.
 */
#include "gm_rate.h"

#include <math.h>
#include <string.h>

#define RING (GM_RATE_SECONDS + 1)

static int64_t second_of(double us)
{
	return (int64_t)floor(us / 1e6);
}

/* The ring index of second t; t may be negative before the epoch. */
static unsigned slot(int64_t t)
{
	int64_t i = t % RING;

	return (unsigned)(i < 0 ? i + RING : i);
}

void gm_rate_init(gm_rate *r, double now_us)
{
	memset(r, 0, sizeof(*r));
	r->start_us = now_us;
	r->cur = second_of(now_us);
}

void gm_rate_add(gm_rate *r, double now_us, const double v[GM_RATE_NVAL])
{
	int64_t now = second_of(now_us);
	double *b;

	if (now > r->cur) {
		/* Seconds with nothing counted get empty buckets; past a
		 * whole ring every bucket is stale. */
		int64_t from = now - r->cur > RING ? now - RING : r->cur;

		for (int64_t t = from + 1; t <= now; t++)
			memset(r->b[slot(t)], 0, sizeof(r->b[0]));
		r->cur = now;
	}
	b = r->b[slot(r->cur)];
	for (int i = 0; i < GM_RATE_NVAL; i++)
		b[i] += v[i];
}

void gm_rate_get(const gm_rate *r, double now_us, unsigned window_s,
		 double out[GM_RATE_NVAL])
{
	int64_t now = second_of(now_us);
	double from, span;

	memset(out, 0, GM_RATE_NVAL * sizeof(out[0]));
	if (window_s < 1)
		window_s = 1;
	if (window_s > GM_RATE_SECONDS)
		window_s = GM_RATE_SECONDS;
	/* The window is [now - window_s, now) in seconds. */
	from = fmax((double)(now - (int64_t)window_s) * 1e6, r->start_us);
	span = ((double)now * 1e6 - from) / 1e6;
	if (span <= 0)
		return;
	for (int64_t t = now - (int64_t)window_s; t < now; t++) {
		/* Seconds after the newest bucket saw nothing; the ring
		 * still holds every second the window can reach. */
		if (t > r->cur || t <= r->cur - RING)
			continue;
		for (int i = 0; i < GM_RATE_NVAL; i++)
			out[i] += r->b[slot(t)][i];
	}
	for (int i = 0; i < GM_RATE_NVAL; i++)
		out[i] /= span;
}
