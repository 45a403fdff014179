/*
 * gm_daemon.c - the daemon's lifecycle on the loop thread: open the
 * engine, the regions and the listeners, serve, and on a signal (or a
 * sticky GPU fault) stop taking jobs, answer every accepted one and tear
 * everything down. One timer fails queued jobs at their deadlines and
 * drops detached results when they come due. Engine completions arrive
 * on engine threads and are handed over through a locked list and a
 * uv_async, like nng's receives. Requests are handled in gm_request.c,
 * gm_dreq.c and gm_ctrl.c.
 */
#include "gm_daemon.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "gm_build.h"
#include "gm_daemon_impl.h"
#include "gm_log.h"
#include "gm_notify.h"

#define EXIT_FAULT   3
#define STOP_POLL_MS 20

/* Engine thread: hand the job to the loop. */
static void on_engine_done(gm_job *job, void *arg)
{
	gm_daemon *d = arg;
	gm_sjob *j = job->user;

	pthread_mutex_lock(&d->done_lock);
	j->qnext = d->done_head;
	d->done_head = j;
	pthread_mutex_unlock(&d->done_lock);
	uv_async_send(&d->done_async);
}

static void begin_stop(gm_daemon *d, int code);

static void done_cb(uv_async_t *h)
{
	gm_daemon *d = h->data;
	gm_sjob *list, *oldest = NULL;

	pthread_mutex_lock(&d->done_lock);
	list = d->done_head;
	d->done_head = NULL;
	pthread_mutex_unlock(&d->done_lock);
	/* The list is newest first: complete, and reply, in the order the
	 * engine returned the jobs. */
	while (list != NULL) {
		gm_sjob *j = list;

		list = list->qnext;
		j->qnext = oldest;
		oldest = j;
	}
	while (oldest != NULL) {
		gm_sjob *j = oldest;

		oldest = oldest->qnext;
		gm_sched_complete(d->sched, &j->job);
	}
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

static void close_handle(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void stop_poll(uv_timer_t *t)
{
	gm_daemon *d = t->data;

	if (gm_sched_requests(d->sched) != 0 || !gm_server_flushed(d->srv))
		return;
	GM_LOG(GM_LOG_INFO, "every accepted job answered; exiting");
	gm_server_close(d->srv);
	d->srv = NULL;
	if (d->http != NULL)
		gm_http_close(d->http);
	d->http = NULL;
	gm_region_srv_close(d->rsrv);
	d->rsrv = NULL;
	uv_walk(&d->loop, close_handle, NULL);
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

static void init_handles(gm_daemon *d)
{
	pthread_mutex_init(&d->done_lock, NULL);
	d->done_async.data = d;
	uv_async_init(&d->loop, &d->done_async, done_cb);
	d->sigint.data = d->sigterm.data = d->stop_timer.data = d;
	uv_signal_init(&d->loop, &d->sigint);
	uv_signal_init(&d->loop, &d->sigterm);
	uv_signal_start(&d->sigint, signal_cb, SIGINT);
	uv_signal_start(&d->sigterm, signal_cb, SIGTERM);
	d->sigusr1.data = d->tick.data = d;
	uv_signal_init(&d->loop, &d->sigusr1);
	uv_signal_start(&d->sigusr1, drain_signal_cb, SIGUSR1);
	uv_timer_init(&d->loop, &d->tick);
	uv_timer_init(&d->loop, &d->stop_timer);
	signal(SIGPIPE, SIG_IGN);
}

static int open_engine(gm_daemon *d)
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
	if ((rv = gm_pool_create(arena, size, &d->pool)) != 0)
		return rv;
	GM_LOG(GM_LOG_INFO, "engine %s: %u device(s), host pool %llu MiB",
	       gm_engine_name(d->eng), gm_engine_devices(d->eng),
	       (unsigned long long)(size >> 20));
	if ((rv = gm_sched_create(d->eng, d->pool, d->cfg->queue_depth,
				  &d->stats, gm_request_done, d, &d->sched)) !=
	    0)
		return rv;
	gm_sched_set_limits(d->sched, d->cfg->queue_depth_prio);
	return gm_detach_create(d->sched, d->cfg->detach_keep_s,
				d->cfg->detach_max_bytes, gm_ctrl_answer_wait,
				d, &d->detach);
}

static void teardown(gm_daemon *d)
{
	if (d->srv != NULL)
		gm_server_close(d->srv);
	if (d->http != NULL)
		gm_http_close(d->http);
	gm_region_srv_close(d->rsrv);
	uv_walk(&d->loop, close_handle, NULL);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	uv_loop_close(&d->loop);
	gm_detach_destroy(d->detach);
	gm_sched_destroy(d->sched);
	/* The loop ran every retirement it had queued: what is left is
	 * unmapped here, while the engine is still open. */
	gm_regions_destroy(d->regions);
	if (d->pool != NULL)
		gm_pool_destroy(d->pool);
	if (d->eng != NULL)
		gm_engine_close(d->eng);
	pthread_mutex_destroy(&d->done_lock);
}

int gm_daemon_run(const gm_config *cfg)
{
	gm_daemon d = {.cfg = cfg};
	char msg[512];
	int rv;

	d.lim = (gm_limits){.max_jobs = cfg->max_jobs,
			    .max_dim = cfg->max_dim,
			    .max_job_bytes = cfg->max_message_bytes};
	gm_stats_init(&d.stats);
	uv_loop_init(&d.loop);
	init_handles(&d);
	if ((rv = open_engine(&d)) != 0) {
		teardown(&d);
		return 1;
	}
	if (gm_regions_create(d.eng, &d.regions) != 0) {
		GM_LOG(GM_LOG_ERROR, "out of memory for the region table");
		teardown(&d);
		return 1;
	}
	rv = gm_server_open(&d.loop, cfg, gm_request_on, &d, &d.srv, msg,
			    sizeof(msg));
	if (rv == 0)
		rv = gm_region_srv_open(&d.loop, cfg, d.regions, &d.rsrv, msg,
					sizeof(msg));
	if (rv != 0) {
		GM_LOG(GM_LOG_ERROR, "%s", msg);
		teardown(&d);
		return 1;
	}
	if (cfg->metrics_listen != NULL &&
	    gm_http_open(&d.loop, cfg->metrics_listen, &gm_ctrl_http_ops, &d,
			 &d.http, msg, sizeof(msg)) != 0) {
		GM_LOG(GM_LOG_ERROR, "%s", msg);
		teardown(&d);
		return 1;
	}
	if (d.http != NULL)
		GM_LOG(GM_LOG_INFO, "metrics on http://%s/metrics",
		       cfg->metrics_listen);
	GM_LOG(GM_LOG_INFO, "gemmd %s ready", GEMMD_VERSION);
	snprintf(msg, sizeof(msg), "serving on %u listener(s), engine %s",
		 cfg->nlisten, gm_engine_name(d.eng));
	gm_notify_watchdog_start(&d.loop);
	gm_notify_ready(msg);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	teardown(&d);
	return d.exit_code;
}
