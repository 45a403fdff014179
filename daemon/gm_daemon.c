/*
 * gm_daemon.c - request handling on the loop thread: decode and validate
 * a request, queue its jobs, and build its one reply when the last job
 * is back. Engine completions arrive on engine threads and are handed
 * over through a locked list and a uv_async, like nng's receives.
 */
#include "gm_daemon.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "gm_build.h"
#include "gm_log.h"
#include "gm_pool.h"
#include "gm_sched.h"
#include "gm_server.h"

#define EXIT_FAULT   3
#define STOP_POLL_MS 20

typedef struct gm_daemon {
	const gm_config *cfg;
	uv_loop_t loop;
	gm_engine *eng;
	gm_pool *pool;
	gm_sched *sched;
	gm_server *srv;
	gm_stats stats;
	gm_limits lim;
	uv_async_t done_async;
	pthread_mutex_t done_lock;
	gm_sjob *done_head; /* returned by the engine; under done_lock */
	uv_signal_t sigint, sigterm;
	uv_timer_t stop_timer;
	int stopping;
	int exit_code;
} gm_daemon;

/* What the daemon keeps beside a scheduler request. */
typedef struct dreq {
	gm_work *w;
	nng_msg *req, *rep;
} dreq;

static void reply_error(gm_daemon *d, gm_work *w, uint64_t id, int code,
			const char *text)
{
	nng_msg *m;

	d->stats.requests_refused++;
	d->stats.errors[code]++;
	if (nng_msg_alloc(&m, GM_HDR_SIZE + GM_ERROR_SIZE) != 0) {
		/* Nothing to say it with; the client's timeout tells. */
		GM_LOG(GM_LOG_ERROR, "request %llu: out of memory for reply",
		       (unsigned long long)id);
		return;
	}
	gm_proto_put_error(nng_msg_body(m), id, (uint32_t)code, text);
	GM_LOG(GM_LOG_DEBUG, "request %llu refused: %s: %s",
	       (unsigned long long)id, gm_errname(code), text);
	d->stats.bytes_out += nng_msg_len(m);
	gm_server_reply(w, m);
}

static void reply_ctrl(gm_daemon *d, gm_work *w, uint64_t id, const char *json)
{
	size_t n = strlen(json);
	nng_msg *m;

	if (nng_msg_alloc(&m, GM_HDR_SIZE + n) != 0) {
		reply_error(d, w, id, GM_ENOMEM, "no memory for the reply");
		return;
	}
	gm_proto_put_hdr(nng_msg_body(m), GM_MSG_CTRL_REPLY, id, (uint32_t)n);
	memcpy((uint8_t *)nng_msg_body(m) + GM_HDR_SIZE, json, n);
	d->stats.bytes_out += nng_msg_len(m);
	gm_server_reply(w, m);
}

static void live_stats(gm_daemon *d, gm_stats_live *l)
{
	l->engine = gm_engine_name(d->eng);
	l->queue_depth = gm_sched_queued(d->sched);
	l->queue_limit = d->cfg->queue_depth;
	l->inflight = gm_sched_inflight(d->sched);
	l->pool_used = gm_pool_used(d->pool);
	l->pool_size = gm_pool_size(d->pool);
	l->pool_slabs = gm_pool_slabs(d->pool);
	l->draining = d->stopping;
	l->eng = d->eng;
}

static char *ctrl_answer(gm_daemon *d, const char *op)
{
	char head[256];
	gm_stats_live l;
	char *doc, *out;

	if (strcmp(op, "ping") == 0) {
		snprintf(head, sizeof(head),
			 "{\"ok\":true,\"version\":\"%s\",\"engine\":\"%s\","
			 "\"devices\":%u,\"uptime_s\":%.3f}",
			 GEMMD_VERSION, gm_engine_name(d->eng),
			 gm_engine_devices(d->eng),
			 (gm_now_us() - d->stats.start_us) / 1e6);
		return strdup(head);
	}
	if (strcmp(op, "stats") != 0)
		return NULL;
	live_stats(d, &l);
	if ((doc = gm_stats_render(&d->stats, &l)) == NULL)
		return NULL;
	out = malloc(strlen(doc) + 32);
	if (out != NULL)
		sprintf(out, "{\"ok\":true,\"stats\":%s}", doc);
	cJSON_free(doc);
	return out;
}

static void ctrl_fail(char *buf, size_t len, int code, const char *text)
{
	snprintf(
	    buf, len,
	    "{\"ok\":false,\"code\":%d,\"error\":\"%s\",\"message\":\"%s\"}",
	    code, gm_errname(code), text);
}

static void handle_ctrl(gm_daemon *d, gm_work *w, const gm_hdr *h,
			const uint8_t *body)
{
	cJSON *req = cJSON_ParseWithLength((const char *)body, h->count);
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
	char err[256];
	char *ans = NULL;

	d->stats.ctrl_requests++;
	if (req == NULL)
		ctrl_fail(err, sizeof(err), GM_EJSON, "body is not JSON");
	else if (!cJSON_IsString(op))
		ctrl_fail(err, sizeof(err), GM_EINVAL,
			  "missing string member \\\"op\\\"");
	else if ((ans = ctrl_answer(d, op->valuestring)) == NULL)
		ctrl_fail(err, sizeof(err), GM_EINVAL,
			  "unknown op; known: ping, stats");
	reply_ctrl(d, w, h->id, ans ? ans : err);
	free(ans);
	cJSON_Delete(req);
}

/* Reply bytes for a checked request: each job's fixed part + result. */
static uint64_t reply_size(const uint8_t *body, size_t len)
{
	uint64_t size = GM_HDR_SIZE;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;
	const uint8_t *a, *b, *c;

	gm_proto_jobs_begin(body, len, &it);
	while (gm_proto_jobs_next(&it, &jd, &a, &b, &c) == 0) {
		gm_job_sizes_of(&jd, &z);
		size += GM_REPLY_JOB_SIZE + z.out;
	}
	return size;
}

/* The configured kernel, unless it cannot run dtype: the tiled kernel
 * is fp64/fp32 only, so other dtypes fall back to cuBLAS. */
static uint8_t default_kernel(const gm_daemon *d, int dtype)
{
	int k = d->cfg->engine.kernel;

	if (k == GM_KERNEL_TILED && dtype != GM_FP64 && dtype != GM_FP32)
		k = GM_KERNEL_CUBLAS;
	return (uint8_t)k;
}

/* Fills r's jobs from the request and points each result at its place in
 * the reply, so the engine writes it there directly. */
static void fill_jobs(gm_daemon *d, gm_sreq *r, const uint8_t *body, size_t len,
		      uint8_t *rep)
{
	uint64_t off = GM_HDR_SIZE;
	gm_job_iter it;
	gm_job_sizes z;
	const uint8_t *a, *b, *c;

	gm_proto_jobs_begin(body, len, &it);
	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_job *j = &r->jobs[i].job;

		gm_proto_jobs_next(&it, &j->d, &a, &b, &c);
		if (j->d.kernel == GM_KERNEL_DEFAULT)
			j->d.kernel = default_kernel(d, j->d.dtype);
		gm_job_sizes_of(&j->d, &z);
		j->copy_in = a;
		j->copy_in_bytes = z.a + z.b + z.c;
		j->copy_out = rep + off + GM_REPLY_JOB_SIZE;
		off += GM_REPLY_JOB_SIZE + z.out;
	}
}

static void handle_gemm(gm_daemon *d, gm_work *w, nng_msg *msg)
{
	const uint8_t *body = nng_msg_body(msg);
	size_t len = nng_msg_len(msg);
	char text[GM_MSG_TEXT + 1];
	nng_msg *rep = NULL;
	gm_batch b;
	gm_hdr h;
	gm_sreq *r;
	dreq *dr;
	int rv;

	if ((rv = gm_proto_check_gemm(body, len, &d->lim, &h, &b, text,
				      sizeof(text))) != 0)
		goto refuse;
	rv = GM_ENOMEM;
	snprintf(text, sizeof(text), "no memory for the request");
	r = gm_sched_new_req(h.count);
	dr = malloc(sizeof(*dr));
	if (r == NULL || dr == NULL ||
	    nng_msg_alloc(&rep, (size_t)reply_size(body, len)) != 0)
		goto free;
	r->id = h.id;
	r->batch = b;
	r->recv_us = gm_now_us();
	r->user = dr;
	*dr = (dreq){.w = w, .req = msg, .rep = rep};
	fill_jobs(d, r, body, len, nng_msg_body(rep));
	d->stats.requests++;
	if ((rv = gm_sched_submit(d->sched, r)) == 0)
		return;
	snprintf(text, sizeof(text), "%s",
		 rv == GM_EBUSY ? "queue full: try again later"
				: "gemmd is shutting down");
	d->stats.requests--;
free:
	if (rep != NULL)
		nng_msg_free(rep);
	gm_sched_free_req(r);
	free(dr);
refuse:
	d->stats.jobs_rejected += rv == GM_EBUSY ? h.count : 0;
	reply_error(d, w, h.id, rv, text);
	nng_msg_free(msg);
}

/* Loop thread: a request arrived on w. */
static void on_request(gm_work *w, nng_msg *msg, void *arg)
{
	gm_daemon *d = arg;
	char text[GM_MSG_TEXT + 1];
	gm_hdr h;
	int rv;

	d->stats.bytes_in += nng_msg_len(msg);
	rv = gm_proto_get_hdr(nng_msg_body(msg), nng_msg_len(msg), &h, text,
			      sizeof(text));
	if (rv == 0 && h.type == GM_MSG_CTRL) {
		handle_ctrl(d, w, &h,
			    (const uint8_t *)nng_msg_body(msg) + GM_HDR_SIZE);
		nng_msg_free(msg);
		return;
	}
	if (rv == 0 && h.type != GM_MSG_GEMM) {
		rv = GM_EMSGTYPE;
		snprintf(text, sizeof(text), "message type %u is not a request",
			 h.type);
	}
	if (rv == 0 && d->stopping) {
		rv = gm_engine_faulted(d->eng) ? GM_EGPUFAULT : GM_ESHUTDOWN;
		snprintf(text, sizeof(text), "%s", gm_strerror(rv));
	}
	if (rv != 0) {
		reply_error(d, w, h.id, rv, text);
		nng_msg_free(msg);
		return;
	}
	handle_gemm(d, w, msg);
}

/* Writes each job's reply record; a failed job carries no result, so
 * later results move down over the room it left. */
static size_t build_reply(gm_sreq *r, uint8_t *rep)
{
	size_t off = GM_HDR_SIZE;

	gm_proto_put_hdr(rep, GM_MSG_GEMM_REPLY, r->id, r->njobs);
	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_sjob *j = &r->jobs[i];
		gm_reply_job rj = {.status = (uint32_t)j->job.status,
				   .dtype = j->job.d.dtype,
				   .layout = j->job.d.layout,
				   .m = j->job.d.m,
				   .n = j->job.d.n,
				   .t = j->t};
		gm_job_sizes z;

		gm_job_sizes_of(&j->job.d, &z);
		if (j->job.status == 0) {
			rj.result_bytes = z.out;
			memmove(rep + off + GM_REPLY_JOB_SIZE, j->job.copy_out,
				z.out);
		} else {
			snprintf(rj.message, sizeof(rj.message), "%s",
				 j->job.msg[0] ? j->job.msg
					       : gm_strerror(j->job.status));
		}
		gm_proto_put_reply_job(rep + off, &rj);
		off += GM_REPLY_JOB_SIZE + rj.result_bytes;
	}
	return off;
}

/* Scheduler: every job of r is back. */
static void on_request_done(gm_sreq *r, void *arg)
{
	gm_daemon *d = arg;
	dreq *dr = r->user;
	size_t len = nng_msg_len(dr->rep);
	size_t used = build_reply(r, nng_msg_body(dr->rep));

	nng_msg_chop(dr->rep, len - used);
	d->stats.bytes_out += used;
	gm_server_reply(dr->w, dr->rep);
	nng_msg_free(dr->req);
	free(dr);
	gm_sched_free_req(r);
}

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
	gm_sjob *list;

	pthread_mutex_lock(&d->done_lock);
	list = d->done_head;
	d->done_head = NULL;
	pthread_mutex_unlock(&d->done_lock);
	while (list != NULL) {
		gm_sjob *j = list;

		list = list->qnext;
		gm_sched_complete(d->sched, &j->job);
	}
	if (gm_engine_faulted(d->eng) && !d->stopping) {
		GM_LOG(GM_LOG_ERROR, "sticky GPU fault: failing every job and "
				     "exiting for a restart");
		begin_stop(d, EXIT_FAULT);
	}
}

static void close_handle(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void stop_poll(uv_timer_t *t)
{
	gm_daemon *d = t->data;

	if (gm_sched_requests(d->sched) != 0 || gm_server_sending(d->srv) != 0)
		return;
	GM_LOG(GM_LOG_INFO, "every accepted job answered; exiting");
	gm_server_close(d->srv);
	d->srv = NULL;
	uv_walk(&d->loop, close_handle, NULL);
}

static void begin_stop(gm_daemon *d, int code)
{
	if (d->stopping)
		return;
	d->stopping = 1;
	d->exit_code = code;
	gm_sched_stop(d->sched);
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
	return gm_sched_create(d->eng, d->pool, d->cfg->queue_depth, &d->stats,
			       on_request_done, d, &d->sched);
}

static void teardown(gm_daemon *d)
{
	if (d->srv != NULL)
		gm_server_close(d->srv);
	uv_walk(&d->loop, close_handle, NULL);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	uv_loop_close(&d->loop);
	gm_sched_destroy(d->sched);
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
	rv = gm_server_open(&d.loop, cfg, on_request, &d, &d.srv, msg,
			    sizeof(msg));
	if (rv != 0) {
		GM_LOG(GM_LOG_ERROR, "%s", msg);
		teardown(&d);
		return 1;
	}
	GM_LOG(GM_LOG_INFO, "gemmd %s ready", GEMMD_VERSION);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	teardown(&d);
	return d.exit_code;
}
