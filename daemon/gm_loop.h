/*
 * gm_loop.h - what the daemon's loop thread owns, in one struct: the
 * event loop, the engine, the host pool, the scheduler, the stats, the
 * detached jobs, the regions and the listeners; and the two things
 * about it that every request path moves: the tick timer (deadlines,
 * detached results, parked waits) and draining.
 *
 * gm_daemon.c opens and closes what is in it; gm_admit.c, gm_request.c,
 * gm_reply.c and gm_ctrl.c serve requests with it. Loop thread only.
 */
#ifndef GM_LOOP_H
#define GM_LOOP_H

#include <uv.h>

#include "gm_config.h"
#include "gm_detach.h"
#include "gm_http.h"
#include "gm_inbox.h"
#include "gm_pool.h"
#include "gm_region_srv.h"
#include "gm_regions.h"
#include "gm_sched.h"
#include "gm_server.h"

typedef struct gm_loop {
	const gm_config *cfg;
	uv_loop_t uv;
	gm_engine *eng;
	gm_pool *pool;
	gm_sched *sched;
	gm_server *srv;
	gm_http *http; /* "metrics_listen"; NULL when off */
	gm_stats stats;
	gm_limits lim;
	gm_inbox *done;		   /* jobs the engine returned */
	gm_detach *detach;	   /* detached jobs and their results */
	gm_regions *regions;	   /* shared-memory regions mapped */
	gm_region_srv *region_srv; /* their hand-off socket; NULL when off */
	uv_signal_t sigint, sigterm, sigusr1;
	uv_timer_t stop_timer;
	uv_timer_t tick; /* queued deadlines, detached results and waits */
	double tick_due; /* when tick fires (gm_clock_now_us); 0: stopped */
	int draining;	 /* drained: new jobs refused with EDRAINING */
	int stopping;	 /* a stop began: new jobs refused, then exit */
	int exit_code;
} gm_loop;

/* Initializes the tick timer on l->uv. GM_OK, or GM_EINTERNAL (logged);
 * an initialized timer is closed with every handle of the loop. */
int gm_loop_open_tick(gm_loop *l);

/* Sets the tick timer for the first of: a queued job's deadline, a
 * detached result or record coming due, a parked wait's timeout. Call
 * after anything that may move one of them. */
void gm_loop_arm_tick(gm_loop *l);

/* Turns draining on or off, logging why. */
void gm_loop_set_draining(gm_loop *l, int on, const char *why);

#endif
