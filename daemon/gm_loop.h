/*
 * gm_loop.h - what the daemon's loop thread owns, in one struct: the
 * event loop, the engine, the host pool and the requests waiting for
 * it, the scheduler, the stats, the detached jobs, the regions, the
 * listeners and the connections; and the things about it that every
 * request path moves: events handed over from other threads, the tick
 * timer (deadlines, detached results, parked waits) and draining.
 *
 * gm_daemon.c opens and closes what is in it; gm_listen.c and gm_conn.c
 * carry the transport, gm_admit.c, gm_request.c, gm_reply.c and
 * gm_ctrl.c serve requests with it. Loop thread only, but gm_loop_post.
 */
#ifndef GM_LOOP_H
#define GM_LOOP_H

#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "gm_config.h"
#include "gm_detach.h"
#include "gm_http.h"
#include "gm_inbox.h"
#include "gm_poller.h"
#include "gm_pool.h"
#include "gm_poolq.h"
#include "gm_region_srv.h"
#include "gm_regions.h"
#include "gm_sched.h"

typedef struct gm_loop gm_loop;
typedef struct gm_listen gm_listen;
typedef struct gm_conn gm_conn;
typedef struct gm_peers gm_peers;

/* Something another thread hands to the loop: fn runs there with it.
 * The poster's struct embeds it; nothing is allocated per post. */
typedef struct gm_event gm_event;
struct gm_event {
	void *link; /* the inbox's */
	void (*fn)(gm_event *ev, gm_loop *l);
};

/* Every connection (gm_conn.h), for the caps, the deadlines, the sends
 * and the stats. */
typedef struct gm_conns {
	gm_peers *peers;       /* open connections by peer */
	gm_conn *head;	       /* all of them, refused ones lingering too */
	gm_conn *flush;	       /* those with frames queued since a flush */
	gm_conn *wake;	       /* those whose reading may go on */
	uint32_t next_id;      /* for the scheduler's turns; never 0 */
	uv_timer_t timer;      /* deadlines; runs while one is pending */
	int timer_on;	       /* started */
	uint64_t sweep_ms;     /* its period */
	uv_prepare_t flusher;  /* sends what the loop's turn queued */
	double refusal_logged; /* when a refusal was last logged */
	gm_stats_conns n;      /* counts for the stats document */
	/* Connections whose peer had gone before they were accepted: the
	 * accepting nng thread frees them and counts them here, in
	 * n.accepted once the counts are read (gm_listen.c says why). */
	atomic_ulong gone;
} gm_conns;

struct gm_loop {
	const gm_config *cfg;
	/* SIGHUP's (gm_reload.h): the same configuration, writable, and how
	 * to build it again from its sources. */
	gm_config *cfg_own;
	gm_config_source_fn reread;
	void *reread_arg;
	uv_loop_t uv;
	gm_engine *eng;
	gm_pool *pool;
	gm_poolq *poolq;   /* requests waiting for pool room */
	gm_shares *shares; /* what each principal holds (gm_share.h) */
	gm_sched *sched;
	gm_listen *listen;
	gm_conns conns;
	gm_http *http; /* "metrics_listen"; NULL when off */
	gm_stats stats;
	gm_limits lim;
	gm_inbox *done;		   /* jobs the engine started or returned */
	gm_inbox *events;	   /* gm_event: I/O, accepts, warm-up */
	gm_detach *detach;	   /* detached jobs and their results */
	gm_regions *regions;	   /* shared-memory regions mapped */
	gm_region_srv *region_srv; /* their hand-off socket; NULL when off */
	uint64_t requests;	   /* GEMM request records alive */
	struct gm_request *live;   /* ... the records, newest first */
	uint64_t next_seq;	   /* orders requests and frames */
	uv_timer_t stop_timer;
	uv_timer_t tick;   /* queued deadlines, detached results and waits */
	double tick_due;   /* when tick fires (gm_clock_now_us); 0: stopped */
	uv_idle_t spin;	   /* polls while active (gm_loop_spin) */
	gm_poller *poller; /* connections' receives it takes while it polls */
	bool spin_busy;	   /* the last turn's inboxes had something */
	double poll_next;  /* when a turn may try receives again (jobs run) */
	unsigned spin_us;  /* 0: the loop never polls */
	double spin_until; /* when it stops polling */
	int warm;	   /* the engine's warm-up ended */
	int draining;	   /* drained: new jobs refused with EDRAINING */
	int stopping;	   /* a stop began: new jobs refused, then exit */
	int exit_code;
};

/* Hands ev to the loop, where ev->fn runs. Any thread. Returns false
 * once the loop's events are closed (the daemon is exiting). */
bool gm_loop_post(gm_loop *l, gm_event *ev);

/* Initializes the tick timer on l->uv. GM_OK, or GM_EINTERNAL (logged);
 * an initialized timer is closed with every handle of the loop. */
int gm_loop_open_tick(gm_loop *l);

/* Sets the tick timer for the first of: a queued job's deadline, a
 * detached result or record coming due, a parked wait's timeout. Call
 * after anything that may move one of them. */
void gm_loop_arm_tick(gm_loop *l);

/* Initializes the polling handle on l->uv, as the tick's, and the
 * poller of connections' receives (gm_poller.h). */
int gm_loop_open_spin(gm_loop *l);

/* Stops the polling, if on: receives parked go to nng. Before the
 * handles close. */
void gm_loop_stop_spin(gm_loop *l);

/* Frees the poller, once every connection is freed. */
void gm_loop_free_spin(gm_loop *l);

/* Keeps the loop polling instead of sleeping for l->spin_us from now
 * (the "spin_us" key; set only with the CUDA engine). A wake-up from
 * epoll costs tens of µs on the path of a small job: the news of its
 * return, and the next request of a client that sends one at a time.
 * Meanwhile the loop drains its inboxes at each turn, so posts to them
 * do not wake it (gm_inbox_polled), and takes its connections' receives
 * itself (gm_poller.h): a request that comes then wakes no thread
 * either. Called as events arrive, so an idle daemon sleeps. */
void gm_loop_spin(gm_loop *l);

/* Turns draining on or off, logging why. */
void gm_loop_set_draining(gm_loop *l, int on, const char *why);

#endif
