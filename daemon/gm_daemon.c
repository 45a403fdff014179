/*
 * gm_daemon.c - the daemon's lifecycle on the loop thread: open the
 * engine, the regions and the listeners, serve, and on a signal (or a
 * sticky GPU fault) stop taking jobs, answer every accepted one and tear
 * everything down. One timer fails queued jobs at their deadlines and
 * drops detached results when they come due. Engine completions arrive
 * on engine threads and reach the loop through an inbox (gm_inbox.h),
 * like nng's receives. Startup checks every step and, on failure, closes
 * what it opened and says what failed. Requests are handled in
 * gm_request.c, gm_dreq.c and gm_ctrl.c.
 */
#include "gm_daemon.h"

#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gm_build.h"
#include "gm_daemon_impl.h"
#include "gm_log.h"
#include "gm_notify.h"

#define EXIT_STARTUP 1
#define EXIT_FAULT   3
#define STOP_POLL_MS 20

/* Engine thread: hand the job back to the loop. The inbox is open while
 * any job is out. */
static void on_engine_done(gm_job *job, void *arg)
{
	gm_daemon *d = arg;

	gm_inbox_post(d->done, job->user);
}

/* Loop thread: a job the engine returned, in the order it did. */
static void on_job_back(void *item, void *arg)
{
	gm_daemon *d = arg;
	gm_sjob *j = item;

	gm_sched_complete(d->sched, &j->job);
}

static void begin_stop(gm_daemon *d, int code);

/* Loop thread: after the jobs handed back at one wake-up. */
static void after_jobs_back(void *arg)
{
	gm_daemon *d = arg;

	if (gm_engine_faulted(d->eng) && !d->stopping) {
		GM_LOG(GM_LOG_ERROR, "sticky GPU fault: failing every job and "
				     "exiting for a restart");
		begin_stop(d, EXIT_FAULT);
	}
	gm_daemon_arm_tick(d);
}

static double earliest(double a, double b)
{
	return a == 0.0 || (b != 0.0 && b < a) ? b : a;
}

static void tick_cb(uv_timer_t *t)
{
	gm_daemon *d = t->data;

	d->tick_due = 0.0;
	gm_sched_expire(d->sched);
	gm_detach_sweep(d->detach);
	gm_daemon_arm_tick(d);
}

/* Sets tick for the first of: a queued job's deadline (so a job that
 * waits behind a long one fails near its deadline, not when the queue
 * next moves), a detached result or record coming due, a parked wait's
 * timeout. */
void gm_daemon_arm_tick(gm_daemon *d)
{
	double due = earliest(gm_sched_next_deadline(d->sched),
			      gm_detach_next_due(d->detach));
	double ms;

	if (due == d->tick_due)
		return;
	d->tick_due = due;
	if (due == 0.0) {
		uv_timer_stop(&d->tick);
		return;
	}
	uv_update_time(&d->loop);
	ms = ceil((due - gm_now_us()) / 1000.0);
	uv_timer_start(&d->tick, tick_cb, ms > 0 ? (uint64_t)ms : 0, 0);
}

/* The server, the region socket and HTTP; NULL ones are skipped. */
static void close_listeners(gm_daemon *d)
{
	if (d->srv != NULL)
		gm_server_close(d->srv);
	d->srv = NULL;
	if (d->http != NULL)
		gm_http_close(d->http);
	d->http = NULL;
	gm_region_srv_close(d->rsrv);
	d->rsrv = NULL;
}

static void close_handle(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* Closes every handle of the loop, the engine's inbox first (it frees
 * itself when its handle is closed). */
static void close_all_handles(gm_daemon *d)
{
	if (d->done != NULL)
		gm_inbox_close(d->done, NULL, NULL);
	d->done = NULL;
	uv_walk(&d->loop, close_handle, NULL);
}

static void stop_poll(uv_timer_t *t)
{
	gm_daemon *d = t->data;

	if (gm_sched_requests(d->sched) != 0 || !gm_server_flushed(d->srv))
		return;
	GM_LOG(GM_LOG_INFO, "every accepted job answered; exiting");
	close_listeners(d);
	close_all_handles(d);
}

static void begin_stop(gm_daemon *d, int code)
{
	if (d->stopping)
		return;
	d->stopping = 1;
	d->exit_code = code;
	gm_notify_stopping(code == EXIT_FAULT
			       ? "GPU fault: failing every job, then exiting"
			       : "stopping: answering every accepted job");
	gm_sched_stop(d->sched);
	gm_region_srv_stop(d->rsrv);
	uv_timer_start(&d->stop_timer, stop_poll, 0, STOP_POLL_MS);
}

static void signal_cb(uv_signal_t *h, int signum)
{
	gm_daemon *d = h->data;

	GM_LOG(GM_LOG_INFO, "%s: finishing %llu queued and %llu running jobs",
	       strsignal(signum), (unsigned long long)gm_sched_queued(d->sched),
	       (unsigned long long)gm_sched_inflight(d->sched));
	begin_stop(d, 0);
}

static void drain_signal_cb(uv_signal_t *h, int signum)
{
	gm_daemon *d = h->data;

	gm_ctrl_set_draining(d, 1, strsignal(signum));
}

/* Calls cb on signum from now on. A handle initialized here is closed
 * with the others, whatever happens next. */
static int watch_signal(gm_daemon *d, uv_signal_t *h, uv_signal_cb cb,
			int signum)
{
	int rv;

	h->data = d;
	if ((rv = uv_signal_init(&d->loop, h)) == 0 &&
	    (rv = uv_signal_start(h, cb, signum)) == 0)
		return GM_OK;
	GM_LOG(GM_LOG_ERROR, "watching %s: %s", strsignal(signum),
	       uv_strerror(rv));
	return GM_EINTERNAL;
}

/* The loop's own handles: the engine's inbox, the signals, the timers.
 * On failure the caller closes those made (close_all_handles). */
static int open_handles(gm_daemon *d)
{
	char msg[256];
	int rv;

	if ((rv = gm_inbox_open(&d->loop, offsetof(gm_sjob, link), on_job_back,
				after_jobs_back, d, &d->done, msg,
				sizeof(msg))) != 0) {
		GM_LOG(GM_LOG_ERROR, "%s", msg);
		return rv;
	}
	if ((rv = watch_signal(d, &d->sigint, signal_cb, SIGINT)) != 0 ||
	    (rv = watch_signal(d, &d->sigterm, signal_cb, SIGTERM)) != 0 ||
	    (rv = watch_signal(d, &d->sigusr1, drain_signal_cb, SIGUSR1)) != 0)
		return rv;
	d->tick.data = d->stop_timer.data = d;
	if ((rv = uv_timer_init(&d->loop, &d->tick)) != 0 ||
	    (rv = uv_timer_init(&d->loop, &d->stop_timer)) != 0) {
		GM_LOG(GM_LOG_ERROR, "timers: %s", uv_strerror(rv));
		return GM_EINTERNAL;
	}
	signal(SIGPIPE, SIG_IGN);
	return GM_OK;
}

/* The engine, its host pool, the scheduler, the detached-job table and
 * the region table; on failure what was made is closed again. */
static int open_core(gm_daemon *d)
{
	char msg[256];
	uint64_t size;
	void *arena;
	int rv;

	rv = gm_engine_open(&d->cfg->engine, on_engine_done, d, &d->eng, msg,
			    sizeof(msg));
	if (rv != 0) {
		GM_LOG(GM_LOG_ERROR, "engine: %s: %s", gm_strerror(rv), msg);
		return rv;
	}
	if (d->cfg->engine.kind == GM_ENGINE_AUTO)
		GM_LOG(GM_LOG_INFO, "engine auto: %s",
		       strcmp(gm_engine_name(d->eng), "cuda") == 0
			   ? "CUDA device found, using cuda"
			   : "no CUDA device found, using cpu");
	arena = gm_engine_arena(d->eng, &size);
	if ((rv = gm_pool_create(arena, size, &d->pool)) != 0) {
		GM_LOG(GM_LOG_ERROR, "host pool: %s", gm_strerror(rv));
		goto fail_pool;
	}
	GM_LOG(GM_LOG_INFO, "engine %s: %u device(s), host pool %llu MiB",
	       gm_engine_name(d->eng), gm_engine_devices(d->eng),
	       (unsigned long long)(size >> 20));
	if ((rv = gm_sched_create(d->eng, d->pool, d->cfg->queue_depth,
				  &d->stats, gm_request_done, d, &d->sched)) !=
	    0) {
		GM_LOG(GM_LOG_ERROR, "scheduler: %s", gm_strerror(rv));
		goto fail_sched;
	}
	gm_sched_set_limits(d->sched, d->cfg->queue_depth_prio);
	if ((rv = gm_detach_create(d->sched, d->cfg->detach_keep_s,
				   d->cfg->detach_max_bytes,
				   gm_ctrl_answer_wait, d, &d->detach)) != 0) {
		GM_LOG(GM_LOG_ERROR, "detached jobs: %s", gm_strerror(rv));
		goto fail_detach;
	}
	if ((rv = gm_regions_create(d->eng, &d->regions)) != 0) {
		GM_LOG(GM_LOG_ERROR, "out of memory for the region table");
		goto fail_regions;
	}
	return GM_OK;
fail_regions:
	gm_detach_destroy(d->detach);
	d->detach = NULL;
fail_detach:
	gm_sched_destroy(d->sched);
	d->sched = NULL;
fail_sched:
	gm_pool_destroy(d->pool);
	d->pool = NULL;
fail_pool:
	gm_engine_close(d->eng);
	d->eng = NULL;
	return rv;
}

/* What open_core made, in reverse; NULL ones are skipped. The loop has
 * run its last turn: what regions are left are unmapped here, while the
 * engine is still open. */
static void close_core(gm_daemon *d)
{
	gm_regions_destroy(d->regions);
	gm_detach_destroy(d->detach);
	gm_sched_destroy(d->sched);
	if (d->pool != NULL)
		gm_pool_destroy(d->pool);
	if (d->eng != NULL)
		gm_engine_close(d->eng);
}

/* The nng server, the region hand-off socket and the HTTP endpoints;
 * on failure what was opened is closed again. */
static int open_listeners(gm_daemon *d)
{
	const gm_config *cfg = d->cfg;
	char msg[512];
	int rv;

	if ((rv = gm_server_open(&d->loop, cfg, gm_request_on, d, &d->srv, msg,
				 sizeof(msg))) != 0)
		goto fail_server;
	if ((rv = gm_region_srv_open(&d->loop, cfg, d->regions, &d->rsrv, msg,
				     sizeof(msg))) != 0)
		goto fail_region_srv;
	if (cfg->metrics_listen != NULL &&
	    (rv = gm_http_open(&d->loop, cfg->metrics_listen, &gm_ctrl_http_ops,
			       d, &d->http, msg, sizeof(msg))) != 0)
		goto fail_http;
	if (d->http != NULL)
		GM_LOG(GM_LOG_INFO, "metrics on http://%s/metrics",
		       cfg->metrics_listen);
	return GM_OK;
fail_http:
	gm_region_srv_close(d->rsrv);
	d->rsrv = NULL;
fail_region_srv:
	gm_server_close(d->srv);
	d->srv = NULL;
fail_server:
	GM_LOG(GM_LOG_ERROR, "%s", msg);
	return rv;
}

int gm_daemon_run(const gm_config *cfg)
{
	gm_daemon d = {.cfg = cfg};
	char msg[128];
	int rv;

	d.lim = (gm_limits){.max_jobs = cfg->max_jobs,
			    .max_dim = cfg->max_dim,
			    .max_job_bytes = cfg->max_message_bytes};
	gm_stats_init(&d.stats);
	if ((rv = uv_loop_init(&d.loop)) != 0) {
		GM_LOG(GM_LOG_ERROR, "event loop: %s", uv_strerror(rv));
		return EXIT_STARTUP;
	}
	/* Each step closes what it opened when it fails. */
	if ((rv = open_handles(&d)) != 0 || (rv = open_core(&d)) != 0 ||
	    (rv = open_listeners(&d)) != 0)
		goto fail;
	if ((rv = gm_notify_watchdog_start(&d.loop)) != 0)
		goto fail_watchdog;
	GM_LOG(GM_LOG_INFO, "gemmd %s ready", GEMMD_VERSION);
	snprintf(msg, sizeof(msg), "serving on %u listener(s), engine %s",
		 cfg->nlisten, gm_engine_name(d.eng));
	gm_notify_ready(msg);
	uv_run(&d.loop, UV_RUN_DEFAULT);
fail_watchdog:
	close_listeners(&d);
fail:
	/* The loop runs before the core goes, so that regions retire and
	 * every handle closes. */
	close_all_handles(&d);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	uv_loop_close(&d.loop);
	close_core(&d);
	return rv != 0 ? EXIT_STARTUP : d.exit_code;
}
