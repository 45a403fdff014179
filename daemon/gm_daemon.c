/*
 * gm_daemon.c - the daemon's lifecycle on the loop thread: open the
 * engine (and start its warm-up), the regions, the connections and the
 * listeners, serve, and on a signal (or a sticky GPU fault) stop taking
 * jobs, answer every accepted one and tear everything down. Engine
 * completions arrive on engine threads and reach the loop through an
 * inbox (gm_inbox.h); stream I/O, accepts and the warm-up's end through
 * another, of gm_event. Startup checks every step and, on failure,
 * closes what it opened and says what failed. What the loop owns is a
 * gm_loop (gm_loop.h); connections are gm_conn.c's, requests are
 * admitted in gm_admit.c and answered in gm_request.c, control requests
 * served in gm_ctrl.c.
 */
#include "gm_daemon.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gm_admit.h"
#include "gm_build.h"
#include "gm_clock.h"
#include "gm_conn.h"
#include "gm_ctrl.h"
#include "gm_listen.h"
#include "gm_log.h"
#include "gm_loop.h"
#include "gm_notify.h"
#include "gm_reload.h"
#include "gm_request.h"
#include "gm_signal.h"

#define EXIT_STARTUP 1
#define EXIT_FAULT   3
#define STOP_POLL_MS 20
/* Descriptors kept beside connections: listeners, the engine, logs. */
#define FD_RESERVE 64
/* The CPU engine's budget of work in flight: enough for a wave of
 * small jobs to go together, small enough for priorities to matter. */
#define CPU_BUDGET_BYTES (64ull << 20)
/* How long a stop waits for connections to be freed once closed. */
#define CLOSE_WAIT_US 5e6

/* The events of the daemon itself: the warm-up's end. */
typedef struct daemon_ev {
	gm_event ev;
	int status;
	double ms;
	char msg[160];
} daemon_ev;

static daemon_ev warm_ev;
static double close_started;

/* The warm-up's end is posted to the events inbox from an engine thread,
 * so the inbox must outlive that post: a stop that comes during the
 * warm-up, or a startup that fails after it began, waits for the post
 * before closing the inbox. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int pending; /* a warm-up's end is still to be posted */
} warming = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

/* Engine thread: hands job and the n - 1 after it through next back to
 * the loop, a few dozen a post: jobs that end together cost the loop one
 * wake-up, not one each. A job is read before it is posted: once back,
 * it is the loop's. (Starts cross no thread: the loop reads them,
 * gm_sched_job_state.) */
static void post_together(gm_loop *l, gm_job *job, uint32_t n)
{
	enum { AT_ONCE = 64 };
	void *back[AT_ONCE];
	size_t k = 0;
	gm_job *next;

	for (; n > 0; n--, job = next) {
		gm_sched_job *j = job->user;

		next = job->next;
		back[k++] = j;
		if (k == AT_ONCE || n == 1) {
			gm_inbox_post_all(l->done, back, k);
			k = 0;
		}
	}
}

/* Engine thread: the jobs are back. The inbox is open while any job is
 * out. */
static void on_engine_done_together(gm_job *job, uint32_t n, void *arg)
{
	post_together(arg, job, n);
}

static void on_engine_done(gm_job *job, void *arg)
{
	post_together(arg, job, 1);
}

/* Loop thread: a job back from the engine, in the order it came. */
static void on_job_back(void *item, void *arg)
{
	gm_loop *l = arg;
	gm_sched_job *j = item;

	gm_sched_complete(l->sched, &j->job);
}

/* Loop thread: an event from another thread. */
static void on_event(void *item, void *arg)
{
	gm_event *ev = item;

	ev->fn(ev, arg);
}

static void begin_stop(gm_loop *l, int code);

/* Loop thread: after the jobs handed back at one wake-up. */
static void after_jobs_back(void *arg)
{
	gm_loop *l = arg;

	if (gm_engine_faulted(l->eng) && !l->stopping) {
		GM_LOG(GM_LOG_ERROR, "sticky GPU fault: failing every job and "
				     "exiting for a restart");
		begin_stop(l, EXIT_FAULT);
	}
	gm_loop_arm_tick(l);
	gm_loop_spin(l);
}

/* Loop thread: after the events handed over at one wake-up. */
static void after_events(void *arg)
{
	gm_loop_spin(arg);
}

/* Whether the loop has told systemd it is ready. */
static int announced;

/* READY once the listeners are up and the engine is warm, whichever
 * comes last. */
static void announce(gm_loop *l)
{
	char msg[128];

	if (announced || !l->warm || l->listen == NULL)
		return;
	announced = 1;
	GM_LOG(GM_LOG_INFO, "gemmd %s ready", GEMMD_VERSION);
	snprintf(msg, sizeof(msg), "serving on %u listener(s), engine %s",
		 l->cfg->nlisten, gm_engine_name(l->eng));
	gm_notify_ready(msg);
}

/* Loop thread: the engine's warm-up ended. */
static void on_warm(gm_event *ev, gm_loop *l)
{
	daemon_ev *w = (daemon_ev *)(void *)ev;

	l->warm = 1;
	if (w->status == GM_OK)
		GM_LOG(GM_LOG_INFO, "engine %s warm in %.1f ms",
		       gm_engine_name(l->eng), w->ms);
	else
		GM_LOG(GM_LOG_WARN,
		       "engine %s warm-up failed after %.1f ms: %s: %s; "
		       "serving anyway",
		       gm_engine_name(l->eng), w->ms, gm_errname(w->status),
		       w->msg);
	announce(l);
}

/* Engine thread: the warm-up ended; say so on the loop. */
static void warm_done(void *arg, int status, double ms, const char *msg)
{
	gm_loop *l = arg;

	warm_ev.ev.fn = on_warm;
	warm_ev.status = status;
	warm_ev.ms = ms;
	snprintf(warm_ev.msg, sizeof(warm_ev.msg), "%s", msg ? msg : "");
	gm_loop_post(l, &warm_ev.ev);
	pthread_mutex_lock(&warming.mu);
	warming.pending = 0;
	pthread_cond_broadcast(&warming.cv);
	pthread_mutex_unlock(&warming.mu);
}

/* The listeners, the connections, the region socket and HTTP; NULL
 * ones are skipped. Connections close; they are freed as the loop
 * runs on. */
static void close_listeners(gm_loop *l)
{
	if (l->listen != NULL)
		gm_listen_close(l->listen);
	l->listen = NULL;
	gm_conns_close(l);
	if (l->http != NULL)
		gm_http_close(l->http);
	l->http = NULL;
	gm_region_srv_close(l->region_srv);
	l->region_srv = NULL;
}

static void close_handle(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* Closes every handle of the loop, the inboxes first (they free
 * themselves when their handle is closed). */
static void close_all_handles(gm_loop *l)
{
	gm_signal_close();
	pthread_mutex_lock(&warming.mu);
	while (warming.pending)
		pthread_cond_wait(&warming.cv, &warming.mu);
	pthread_mutex_unlock(&warming.mu);
	if (l->done != NULL)
		gm_inbox_close(l->done, NULL, NULL);
	l->done = NULL;
	if (l->events != NULL)
		gm_inbox_close(l->events, NULL, NULL);
	l->events = NULL;
	gm_loop_stop_spin(l);
	uv_walk(&l->uv, close_handle, NULL);
}

/* A stop: once every accepted job is answered and written, and every
 * request frame begun is read and answered (gm_conns_quiet), the
 * listeners and connections close; once the connections are freed (or
 * after CLOSE_WAIT_US), every handle. */
static void stop_poll(uv_timer_t *t)
{
	gm_loop *l = t->data;

	if (close_started == 0.0) {
		if (gm_sched_requests(l->sched) != 0 || l->requests != 0 ||
		    !gm_conns_quiet(l))
			return;
		GM_LOG(GM_LOG_INFO, "every accepted job answered; exiting");
		close_listeners(l);
		close_started = gm_clock_now_us();
	}
	if (l->conns.head != NULL &&
	    gm_clock_now_us() < close_started + CLOSE_WAIT_US)
		return;
	close_all_handles(l);
}

static void begin_stop(gm_loop *l, int code)
{
	if (l->stopping)
		return;
	l->stopping = 1;
	l->exit_code = code;
	gm_notify_stopping(code == EXIT_FAULT
			       ? "GPU fault: failing every job, then exiting"
			       : "stopping: answering every accepted job");
	gm_sched_stop(l->sched);
	gm_region_srv_stop(l->region_srv);
	uv_timer_start(&l->stop_timer, stop_poll, 0, STOP_POLL_MS);
}

/* Loop thread: a signal (gm_signal.h), count times since the last. */
static void on_signal(int signum, unsigned count, void *arg)
{
	gm_loop *l = arg;

	switch (signum) {
	case SIGINT:
	case SIGTERM:
		GM_LOG(GM_LOG_INFO,
		       "SIG%s: finishing %llu queued and %llu running jobs",
		       sigabbrev_np(signum),
		       (unsigned long long)gm_sched_queued(l->sched),
		       (unsigned long long)gm_sched_inflight(l->sched));
		begin_stop(l, 0);
		break;
	case SIGUSR1:
		gm_loop_set_draining(l, 1, strsignal(signum));
		break;
	case SIGHUP:
		gm_reload_run(l);
		break;
	default:
		if (count == 1)
			GM_LOG(GM_LOG_INFO, "SIG%s ignored",
			       sigabbrev_np(signum));
		else
			GM_LOG(GM_LOG_INFO, "SIG%s ignored (%u times)",
			       sigabbrev_np(signum), count);
	}
}

/* The loop's own handles: the inboxes, the signals, the timers. On
 * failure the caller closes those made (close_all_handles). */
static int open_handles(gm_loop *l)
{
	char msg[256];
	int rv;

	if ((rv = gm_inbox_open(&l->uv, offsetof(gm_sched_job, link),
				on_job_back, after_jobs_back, l, &l->done, msg,
				sizeof(msg))) != 0 ||
	    (rv = gm_inbox_open(&l->uv, offsetof(gm_event, link), on_event,
				after_events, l, &l->events, msg,
				sizeof(msg))) != 0) {
		GM_LOG(GM_LOG_ERROR, "%s", msg);
		return rv;
	}
	if ((rv = gm_signal_open(&l->uv, on_signal, l, msg, sizeof(msg))) !=
	    0) {
		GM_LOG(GM_LOG_ERROR, "%s", msg);
		return rv;
	}
	if ((rv = gm_loop_open_tick(l)) != 0 ||
	    (rv = gm_loop_open_spin(l)) != 0)
		return rv;
	l->stop_timer.data = l;
	if ((rv = uv_timer_init(&l->uv, &l->stop_timer)) != 0) {
		GM_LOG(GM_LOG_ERROR, "stop timer: %s", uv_strerror(rv));
		return GM_EINTERNAL;
	}
	return GM_OK;
}

/* How much work the scheduler keeps on the engine: what the devices'
 * memory holds (CUDA), or CPU_BUDGET_BYTES; jobs, as many as a queue. */
static void engine_budget(gm_loop *l, gm_sched_budget *b)
{
	gm_device_stats ds;

	b->jobs = l->cfg->queue_depth;
	b->bytes = 0;
	for (unsigned d = 0; d < gm_engine_devices(l->eng); d++) {
		gm_engine_device_stats(l->eng, d, &ds);
		b->bytes += ds.mem_total;
	}
	if (b->bytes == 0)
		b->bytes = CPU_BUDGET_BYTES;
}

/* Requests larger than the pool go to pageable memory, up to the
 * configured cap, which half of the host's memory bounds. */
static void open_pageable(gm_loop *l)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t host =
	    pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	uint64_t want = l->cfg->pageable_max_bytes;
	uint64_t cap = gm_pageable_init(&l->stats.pageable, want, host,
					l->cfg->principal_share_pct);

	if (cap == 0)
		GM_LOG(GM_LOG_INFO, "requests larger than the pool: refused "
				    "(pageable_max_bytes=0)");
	else
		GM_LOG(GM_LOG_INFO,
		       "requests larger than the pool: up to %" PRIu64
		       " MiB at once in pageable memory (pageable_max_bytes="
		       "%" PRIu64 " MiB%s)",
		       cap >> 20, want >> 20,
		       cap < want ? ", cut to half the host's memory" : "");
}

/* The engine (its warm-up started), its host pool and the queue for
 * it, the scheduler, the detached-job table and the region table; on
 * failure what was made is closed again. */
static int open_core(gm_loop *l)
{
	gm_sched_budget budget;
	char msg[1024]; /* a plugin's path and the loader's text */
	uint64_t size;
	void *arena;
	int rv;

	rv = gm_engine_open(&l->cfg->engine, on_engine_done, l, &l->eng, msg,
			    sizeof(msg));
	if (rv != 0) {
		GM_LOG(GM_LOG_ERROR, "engine: %s: %s", gm_strerror(rv), msg);
		return rv;
	}
	gm_engine_on_done_together(l->eng, on_engine_done_together);
	if (l->cfg->engine.kind == GM_ENGINE_AUTO) { /* and what CUDA lacked */
		int ndev = gm_engine_cuda_probe(msg, sizeof(msg));
		GM_LOG(GM_LOG_INFO,
		       "engine auto: using %s (%d CUDA device(s): %s)",
		       gm_engine_name(l->eng), ndev, msg);
	}
	/* The CPU engine's BLAS threads want every core: no polling. */
	if (strcmp(gm_engine_name(l->eng), "cuda") == 0)
		l->spin_us = l->cfg->engine.spin_us;
	/* Cold libraries load while the rest opens; /readyz says "warming
	 * up" until it is done. */
	warming.pending = 1; /* before: the end may come at once */
	if ((rv = gm_engine_warmup(l->eng, warm_done, l)) != GM_OK) {
		warming.pending = 0;
		GM_LOG(GM_LOG_WARN, "engine warm-up: %s", gm_strerror(rv));
		l->warm = 1;
	}
	arena = gm_engine_arena(l->eng, &size);
	if ((rv = gm_pool_create(arena, size, &l->pool)) != 0 ||
	    (rv = gm_admit_open(l)) != 0) {
		GM_LOG(GM_LOG_ERROR, "host pool: %s", gm_strerror(rv));
		goto fail_pool;
	}
	GM_LOG(GM_LOG_INFO, "engine %s: %u device(s), host pool %llu MiB",
	       gm_engine_name(l->eng), gm_engine_devices(l->eng),
	       (unsigned long long)(size >> 20));
	open_pageable(l);
	engine_budget(l, &budget);
	if ((rv = gm_sched_create(l->eng, l->cfg->queue_depth, &budget,
				  &l->stats, gm_request_job_done, NULL, l,
				  &l->sched)) != 0) {
		GM_LOG(GM_LOG_ERROR, "scheduler: %s", gm_strerror(rv));
		goto fail_sched;
	}
	if ((rv = gm_detach_create(l->sched, l->cfg->detach_keep_s,
				   l->cfg->detach_max_bytes,
				   gm_ctrl_answer_wait, l, &l->detach)) != 0) {
		GM_LOG(GM_LOG_ERROR, "detached jobs: %s", gm_strerror(rv));
		goto fail_detach;
	}
	if ((rv = gm_regions_create(l->eng, &l->regions)) != 0) {
		GM_LOG(GM_LOG_ERROR, "out of memory for the region table");
		goto fail_regions;
	}
	return GM_OK;
fail_regions:
	gm_detach_destroy(l->detach);
	l->detach = NULL;
fail_detach:
	gm_sched_destroy(l->sched);
	l->sched = NULL;
fail_sched:
fail_pool:
	gm_admit_close(l);
	if (l->pool != NULL)
		gm_pool_destroy(l->pool);
	l->pool = NULL;
	gm_engine_close(l->eng);
	l->eng = NULL;
	return rv;
}

/* What open_core made, in reverse; NULL ones are skipped. The loop has
 * run its last turn: what regions are left are unmapped here, while the
 * engine is still open. */
static void close_core(gm_loop *l)
{
	gm_regions_destroy(l->regions);
	gm_detach_destroy(l->detach);
	gm_sched_destroy(l->sched);
	gm_admit_close(l);
	if (l->pool != NULL)
		gm_pool_destroy(l->pool);
	if (l->eng != NULL)
		gm_engine_close(l->eng);
}

/* Each connection takes a descriptor: use all the process may have, and
 * say so when that is fewer than the configuration lets in. */
static void raise_fd_limit(const gm_config *cfg)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)cfg->max_conns + FD_RESERVE)
		GM_LOG(GM_LOG_WARN,
		       "the process may open %llu descriptors, fewer than "
		       "max_connections=%u and %d more: connections beyond "
		       "them wait to be accepted (raise LimitNOFILE)",
		       (unsigned long long)rl.rlim_cur, cfg->max_conns,
		       FD_RESERVE);
}

/* The connections, the listeners, the region hand-off socket and the
 * HTTP endpoints; on failure what was opened is closed again. */
static int open_listeners(gm_loop *l)
{
	const gm_config *cfg = l->cfg;
	char msg[512];
	int rv;

	raise_fd_limit(cfg);
	if ((rv = gm_conns_open(l, msg, sizeof(msg))) != 0 ||
	    (rv = gm_listen_open(l, &l->listen, msg, sizeof(msg))) != 0)
		goto fail_listen;
	if ((rv = gm_region_srv_open(&l->uv, cfg, l->regions, &l->region_srv,
				     msg, sizeof(msg))) != 0)
		goto fail_region_srv;
	if (cfg->metrics_listen != NULL &&
	    (rv = gm_http_open(&l->uv, cfg, &gm_ctrl_http_ops, l,
			       &l->stats.http, &l->http, msg, sizeof(msg))) !=
		0)
		goto fail_http;
	if (l->http != NULL)
		GM_LOG(GM_LOG_INFO, "metrics on http://%s/metrics",
		       cfg->metrics_listen);
	return GM_OK;
fail_http:
	gm_region_srv_close(l->region_srv);
	l->region_srv = NULL;
fail_region_srv:
	gm_listen_close(l->listen);
	l->listen = NULL;
fail_listen:
	GM_LOG(GM_LOG_ERROR, "%s", msg);
	return rv;
}

int gm_daemon_run(gm_config *cfg, gm_config_source_fn reread, void *arg)
{
	gm_loop l = {
	    .cfg = cfg, .cfg_own = cfg, .reread = reread, .reread_arg = arg};
	char msg[256];
	int rv;

	if (gm_signal_install(msg, sizeof(msg)) != GM_OK) {
		GM_LOG(GM_LOG_ERROR, "%s", msg);
		return EXIT_STARTUP;
	}
	gm_stats_init(&l.stats);
	if ((rv = uv_loop_init(&l.uv)) != 0) {
		GM_LOG(GM_LOG_ERROR, "event loop: %s", uv_strerror(rv));
		return EXIT_STARTUP;
	}
	/* Each step closes what it opened when it fails. */
	if ((rv = open_handles(&l)) != 0 || (rv = open_core(&l)) != 0)
		goto fail;
	gm_reload_derive(&l);
	if ((rv = open_listeners(&l)) != 0)
		goto fail;
	if ((rv = gm_notify_watchdog_start(&l.uv)) != 0)
		goto fail_watchdog;
	announce(&l);
	uv_run(&l.uv, UV_RUN_DEFAULT);
fail_watchdog:
	close_listeners(&l);
fail:
	/* The loop runs before the core goes, so that regions retire,
	 * connections are freed and every handle closes. */
	close_all_handles(&l);
	uv_run(&l.uv, UV_RUN_DEFAULT);
	uv_loop_close(&l.uv);
	gm_conns_free(&l);
	gm_loop_free_spin(&l);
	close_core(&l);
	return rv != 0 ? EXIT_STARTUP : l.exit_code;
}
