/*
 * gm_loop.c - the tick that fails queued jobs at their deadlines and
 * drops detached results when they come due, the loop's polling after
 * events, and draining; see gm_loop.h.
 */
#include "gm_loop.h"

#include <inttypes.h>
#include <math.h>

#include "gm_clock.h"
#include "gm_log.h"

/* How often a polling loop tries its connections' receives while jobs
 * run (poll_due). */
#define POLL_BUSY_US 100.0

static double earliest(double a, double b)
{
	return a == 0.0 || (b != 0.0 && b < a) ? b : a;
}

static void tick_cb(uv_timer_t *t)
{
	gm_loop *l = t->data;

	l->tick_due = 0.0;
	gm_sched_expire(l->sched);
	gm_detach_sweep(l->detach);
	gm_loop_arm_tick(l);
}

int gm_loop_open_tick(gm_loop *l)
{
	int rv;

	l->tick.data = l;
	if ((rv = uv_timer_init(&l->uv, &l->tick)) != 0) {
		GM_LOG(GM_LOG_ERROR, "tick timer: %s", uv_strerror(rv));
		return GM_EINTERNAL;
	}
	return GM_OK;
}

/* A queued job's deadline is among the times, so that a job that waits
 * behind a long one fails near its deadline, not when the queue next
 * moves. */
void gm_loop_arm_tick(gm_loop *l)
{
	double due = earliest(gm_sched_next_deadline(l->sched),
			      gm_detach_next_due(l->detach));
	double ms;

	if (due == l->tick_due)
		return;
	l->tick_due = due;
	if (due == 0.0) {
		uv_timer_stop(&l->tick);
		return;
	}
	uv_update_time(&l->uv);
	ms = ceil((due - gm_clock_now_us()) / 1000.0);
	uv_timer_start(&l->tick, tick_cb, ms > 0 ? (uint64_t)ms : 0, 0);
}

/* Whether the loop polls its inboxes (see gm_inbox.h). */
static void set_polled(gm_loop *l, bool on)
{
	if (l->done != NULL)
		gm_inbox_polled(l->done, on);
	if (l->events != NULL)
		gm_inbox_polled(l->events, on);
}

/* Whether either inbox had anything. */
static bool poll_inboxes(gm_loop *l)
{
	bool any = l->done != NULL && gm_inbox_poll(l->done);

	return (l->events != NULL && gm_inbox_poll(l->events)) || any;
}

/* Whether this turn tries the connections' receives. Each try is a
 * system call or two: after every turn that found the inboxes empty
 * while no job runs (a request then waits for no more than a turn),
 * else every POLL_BUSY_US, so that a loop busy with thousands of jobs
 * coming back pays little for it and a parked receive still waits no
 * longer than that however busy the loop stays. */
static bool poll_due(gm_loop *l)
{
	double now;

	if (!l->spin_busy && gm_sched_inflight(l->sched) == 0)
		return true;
	if ((now = gm_clock_now_us()) < l->poll_next)
		return false;
	l->poll_next = now + POLL_BUSY_US;
	return true;
}

/* Each turn of a polling loop: what the inboxes hold, then whether to
 * stop. What came while they were polled is drained after the stop; it
 * may start the polling again (gm_loop_spin). The inboxes are NULL once
 * closed, the handle with them. */
static void spin_cb(uv_idle_t *h)
{
	gm_loop *l = h->data;

	if (poll_due(l))
		gm_poller_poll(l->poller);
	l->spin_busy = poll_inboxes(l);
	if (gm_clock_now_us() < l->spin_until ||
	    !uv_is_active((uv_handle_t *)h))
		return;
	gm_loop_stop_spin(l);
	poll_inboxes(l);
}

void gm_loop_stop_spin(gm_loop *l)
{
	if (!uv_is_active((uv_handle_t *)&l->spin))
		return;
	uv_idle_stop(&l->spin);
	set_polled(l, false);
	gm_poller_stop(l->poller);
}

int gm_loop_open_spin(gm_loop *l)
{
	int rv;

	l->spin.data = l;
	if (gm_poller_new(0, &l->poller) != GM_OK) {
		GM_LOG(GM_LOG_ERROR, "out of memory for the poller");
		return GM_ENOMEM;
	}
	if ((rv = uv_idle_init(&l->uv, &l->spin)) != 0) {
		GM_LOG(GM_LOG_ERROR, "poll handle: %s", uv_strerror(rv));
		return GM_EINTERNAL;
	}
	return GM_OK;
}

void gm_loop_free_spin(gm_loop *l)
{
	gm_poller_free(l->poller);
	l->poller = NULL;
}

void gm_loop_spin(gm_loop *l)
{
	if (l->spin_us == 0 || l->stopping)
		return;
	l->spin_until = gm_clock_now_us() + l->spin_us;
	if (uv_is_active((uv_handle_t *)&l->spin))
		return;
	uv_idle_start(&l->spin, spin_cb);
	set_polled(l, true);
	gm_poller_start(l->poller);
}

void gm_loop_set_draining(gm_loop *l, int on, const char *why)
{
	if (l->draining == on)
		return;
	l->draining = on;
	if (on)
		GM_LOG(GM_LOG_INFO,
		       "draining (%s): refusing new jobs, finishing %" PRIu64
		       " queued and %" PRIu64 " running",
		       why, gm_sched_queued(l->sched),
		       gm_sched_inflight(l->sched));
	else
		GM_LOG(GM_LOG_INFO, "resumed (%s): accepting jobs", why);
}

bool gm_loop_post(gm_loop *l, gm_event *ev)
{
	return gm_inbox_post(l->events, ev);
}
