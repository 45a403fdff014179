/*
 * gm_daemon_impl.h - private to the daemon's loop files: the gm_daemon
 * struct they share, and what each of them offers the others.
 * gm_daemon.c holds the lifecycle (engine, listeners, signals, the tick,
 * stop and teardown), gm_request.c GEMM requests and their replies,
 * gm_dreq.c detached requests, gm_ctrl.c control requests. Loop thread
 * only, unless a prototype says otherwise.
 */
#ifndef GM_DAEMON_IMPL_H
#define GM_DAEMON_IMPL_H

#include <nng/nng.h>
#include <stdint.h>
#include <uv.h>

#include "gm_config.h"
#include "gm_detach.h"
#include "gm_http.h"
#include "gm_inbox.h"
#include "gm_pool.h"
#include "gm_region.h"
#include "gm_region_srv.h"
#include "gm_sched.h"
#include "gm_server.h"

typedef struct gm_daemon {
	const gm_config *cfg;
	uv_loop_t loop;
	gm_engine *eng;
	gm_pool *pool;
	gm_sched *sched;
	gm_server *srv;
	gm_http *http; /* "metrics_listen"; NULL when off */
	gm_stats stats;
	gm_limits lim;
	gm_inbox *done;	     /* jobs the engine returned */
	gm_detach *detach;   /* detached jobs and their results */
	gm_regions *regions; /* shared-memory regions mapped */
	gm_region_srv *rsrv; /* their hand-off socket; NULL when off */
	uv_signal_t sigint, sigterm, sigusr1;
	uv_timer_t stop_timer;
	uv_timer_t tick; /* queued deadlines, detached results and waits */
	double tick_due; /* when tick fires (gm_now_us); 0: stopped */
	int draining;	 /* drained: new jobs refused with EDRAINING */
	int stopping;
	int exit_code;
} gm_daemon;

/* What the daemon keeps beside a scheduler request. Each job of a
 * detached request is a scheduler request of its own, so that it
 * finishes, is waited for and is canceled on its own; w is then NULL,
 * and the jobs share the request message through their batch. */
typedef struct gm_dbatch gm_dbatch;
typedef struct gm_dreq {
	gm_work *w;
	nng_msg *req, *rep;
	gm_dbatch *batch;   /* detached: the request's jobs */
	uint64_t detach_id; /* detached: the job's id */
	gm_sreq *r;
	gm_region_holds *holds; /* regions its jobs point into, or NULL */
} gm_dreq;

/* gm_daemon.c */

/* Sets the tick timer for the first of: a queued job's deadline, a
 * detached result or record coming due, a parked wait's timeout. Call
 * after anything that may move one of them. */
void gm_daemon_arm_tick(gm_daemon *d);

/* gm_request.c */

/* Refuses request id on w with code and text (counted in the stats). */
void gm_request_reply_error(gm_daemon *d, gm_work *w, uint64_t id, int code,
			    const char *text);

/* Answers request id on w with a CTRL_REPLY carrying json (copied). */
void gm_request_reply_ctrl(gm_daemon *d, gm_work *w, uint64_t id,
			   const char *json);

/* Fills job j described by jd with payload a; its result goes after the
 * reply record at rec, so the engine writes it there directly. Returns
 * the bytes of record and result. */
uint64_t gm_request_fill_job(const gm_daemon *d, gm_job *j,
			     const gm_job_desc *jd, const uint8_t *a,
			     uint8_t *rec);

/* Writes into text why the scheduler has no room (rv from gm_sched) for
 * njobs more jobs of batch b. */
void gm_request_no_room(const gm_daemon *d, int rv, const gm_batch *b,
			uint32_t njobs, char *text, size_t len);

/* gm_server's callback: a request arrived on w (arg is the daemon). */
void gm_request_on(gm_work *w, nng_msg *msg, void *arg);

/* gm_sched's callback: every job of r is back (arg is the daemon). */
void gm_request_done(gm_sreq *r, void *arg);

/* gm_dreq.c */

/* A checked request msg with GM_BATCH_DETACH, header h and batch b:
 * queues its jobs and answers on w at once with their ids, or refuses
 * it. Takes msg. */
void gm_dreq_handle(gm_daemon *d, gm_work *w, nng_msg *msg, const gm_hdr *h,
		    const gm_batch *b);

/* Drops a job's hold on its detached batch; the last frees it. */
void gm_dreq_release(gm_dbatch *db);

/* gm_ctrl.c */

/* The HTTP endpoints' view of the daemon (gm_http.h); arg the daemon. */
extern const gm_http_ops gm_ctrl_http_ops;

/* A control request (header h, JSON body): answers it on w, a wait
 * perhaps later. */
void gm_ctrl_handle(gm_daemon *d, gm_work *w, const gm_hdr *h,
		    const uint8_t *body);

/* Turns draining on or off, logging why. */
void gm_ctrl_set_draining(gm_daemon *d, int on, const char *why);

/* gm_detach's callback: a parked wait's answer, the result or a refusal
 * (arg is the daemon). */
void gm_ctrl_answer_wait(void *w, uint64_t id, nng_msg *result, int code,
			 const char *text, void *arg);

#endif
