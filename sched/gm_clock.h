/*
 * gm_clock.h - the monotonic clock every time in the daemon is read
 * from: queue waits, deadlines, detached results' ages, rates. In
 * microseconds as a double, which holds them exactly for centuries of
 * uptime. Any thread.
 */
#ifndef GM_CLOCK_H
#define GM_CLOCK_H

#include <time.h>

static inline double gm_clock_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#endif
