/*
 * gmc_timer.h - private to the client library: one thread per client that
 * runs events at their time: calls' deadlines, the redial of a dropped
 * connection, the freeing of a closed stream (which must not happen on
 * one of the stream's own callbacks). Events are kept in a binary heap
 * by time; the thread sleeps in a hand-off's timed wait (gm_handoff.h)
 * until the earliest.
 * An event runs on the timer thread with no lock of the library held.
 */
#ifndef GMC_TIMER_H
#define GMC_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct gmc_timer gmc_timer;

/* An event, embedded in what it belongs to. fn(arg) runs once per arm. */
typedef struct gmc_tev {
	uint64_t when; /* gmc_timer_now() clock, nanoseconds */
	void (*fn)(void *arg);
	void *arg;
	size_t slot; /* in the heap, while armed */
	bool armed;
} gmc_tev;

/* The monotonic clock the timer runs on, in nanoseconds. Any thread. */
uint64_t gmc_timer_now(void);

/* The time ms (>= 0) from now on that clock (CLOCK_MONOTONIC), as the
 * lock and condition waits that take a clock want it. Any thread. */
struct timespec gmc_timer_in(int ms);

/* Starts a timer thread. GM_OK or GM_ENOMEM. */
int gmc_timer_new(gmc_timer **out);

/* Stops the thread (an event running finishes first; armed ones are
 * dropped) and frees t. Not from an event. */
void gmc_timer_free(gmc_timer *t);

/* Sets ev up to run fn(arg); unarmed. */
void gmc_tev_init(gmc_tev *ev, void (*fn)(void *arg), void *arg);

/* Arms ev for when (re-arms it when armed). GM_OK, or GM_ENOMEM when
 * the heap cannot grow. Any thread. */
int gmc_timer_arm(gmc_timer *t, gmc_tev *ev, uint64_t when);

/* Disarms ev without waiting for it: it may be running. Any thread,
 * any lock held. */
void gmc_timer_disarm(gmc_timer *t, gmc_tev *ev);

/* Disarms ev and waits until it is not running, unless called from ev
 * itself. After it returns ev is neither armed nor running and may be
 * freed. Not with a lock held that an event takes. */
void gmc_timer_cancel(gmc_timer *t, gmc_tev *ev);

/* Whether the calling thread is t's. */
bool gmc_timer_is_self(gmc_timer *t);

#endif
