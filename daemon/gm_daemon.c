/*
 * gm_daemon.c - request handling on the loop thread: decode and validate
 * a request, queue its jobs, and build its one reply when the last job
 * is back; a detached request's jobs are queued one by one and their
 * replies kept in gm_detach for waits. Control requests, drain and
 * resume. One timer fails queued jobs at their deadlines and drops
 * detached results when they come due. Engine completions arrive on
 * engine threads and are handed over through a locked list and a
 * uv_async, like nng's receives.
 */
#include "gm_daemon.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "gm_build.h"
#include "gm_detach.h"
#include "gm_http.h"
#include "gm_log.h"
#include "gm_metrics.h"
#include "gm_notify.h"
#include "gm_pool.h"
#include "gm_region.h"
#include "gm_region_srv.h"
#include "gm_sched.h"
#include "gm_server.h"
#include "gm_slab.h"

#define EXIT_FAULT   3
#define STOP_POLL_MS 20

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
	uv_async_t done_async;
	pthread_mutex_t done_lock;
	gm_sjob *done_head;  /* returned by the engine; under done_lock */
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
typedef struct dbatch dbatch;
typedef struct dreq {
	gm_work *w;
	nng_msg *req, *rep;
	dbatch *batch;	    /* detached: the request's jobs */
	uint64_t detach_id; /* detached: the job's id */
	gm_sreq *r;
	gm_region_holds *holds; /* regions its jobs point into, or NULL */
} dreq;

struct dbatch {
	nng_msg *req;
	uint32_t left; /* jobs not yet done */
	dreq jobs[];
};

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
		gm_server_drop(w);
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
	gm_server_count sc;

	gm_server_counts(d->srv, &sc);
	l->contexts = sc.contexts;
	l->contexts_busy = sc.busy;
	l->conn_open = sc.open;
	l->conn_refused = sc.refused;
	l->engine = gm_engine_name(d->eng);
	l->queue_depth = gm_sched_queued(d->sched);
	l->queue_limit = d->cfg->queue_depth;
	l->inflight = gm_sched_inflight(d->sched);
	l->pool_used = gm_pool_used(d->pool);
	l->pool_size = gm_pool_size(d->pool);
	l->pool_slabs = gm_pool_slabs(d->pool);
	for (unsigned p = 0; p <= GM_BATCH_PRIO_MAX; p++) {
		l->queued_prio[p] = gm_sched_queued_prio(d->sched, p);
		l->limit_prio[p] = d->cfg->queue_depth_prio[p];
	}
	gm_detach_counts(d->detach, &l->detached);
	gm_regions_counts(d->regions, &l->regions);
	l->regions.connections = gm_region_srv_conns(d->rsrv);
	l->draining = d->draining || d->stopping;
	l->stopping = d->stopping;
	l->eng = d->eng;
}

/* The HTTP endpoints' view of the daemon (gm_http.h); loop thread. */
static char *metrics_text(void *arg)
{
	gm_daemon *d = arg;
	gm_stats_live l;

	live_stats(d, &l);
	return gm_metrics_render(&d->stats, &l);
}

static int is_ready(void *arg, const char **why)
{
	gm_daemon *d = arg;

	if (gm_engine_faulted(d->eng))
		*why = "GPU fault";
	else if (d->stopping || d->draining)
		*why = "draining";
	else
		return 1;
	return 0;
}

static const gm_http_ops http_ops = {.metrics = metrics_text,
				     .ready = is_ready};

static char *ctrl_answer(gm_daemon *d, const char *op)
{
	char head[256];
	gm_stats_live l;
	char *doc, *out;

	if (strcmp(op, "ping") == 0) {
		snprintf(head, sizeof(head),
			 "{\"ok\":true,\"version\":\"%s\",\"engine\":\"%s\","
			 "\"devices\":%u,\"uptime_s\":%.3f,\"draining\":%s}",
			 GEMMD_VERSION, gm_engine_name(d->eng),
			 gm_engine_devices(d->eng),
			 (gm_now_us() - d->stats.start_us) / 1e6,
			 d->draining || d->stopping ? "true" : "false");
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

static void arm_tick(gm_daemon *d);

/* The "job" member of a control request: an id as gm_detach gives them,
 * a whole number below 2^53. */
static int job_member(const cJSON *req, uint64_t *id, char *text, size_t len)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(req, "job");

	if (!cJSON_IsNumber(j) || j->valuedouble < 1 ||
	    j->valuedouble >= 9007199254740992.0 ||
	    j->valuedouble != floor(j->valuedouble)) {
		snprintf(text, len, "member job must be a job id");
		return GM_EINVAL;
	}
	*id = (uint64_t)j->valuedouble;
	return GM_OK;
}

/* "timeout_ms" of a wait: milliseconds, or -1 when absent (no limit). */
static int timeout_member(const cJSON *req, int64_t *ms, char *text, size_t len)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(req, "timeout_ms");

	*ms = -1;
	if (t == NULL)
		return GM_OK;
	if (!cJSON_IsNumber(t) || t->valuedouble < 0 || t->valuedouble > 1e12) {
		snprintf(text, len, "member timeout_ms must be 0 or more");
		return GM_EINVAL;
	}
	*ms = (int64_t)t->valuedouble;
	return GM_OK;
}

/* status, wait and cancel of a detached job: GM_OK with the reply in
 * *ans, -1 when the wait answers on its own (now or later), or a
 * refusal with text for it. */
static int job_answer(gm_daemon *d, gm_work *w, uint64_t id, const cJSON *req,
		      const char *op, char **ans, char *text, size_t len)
{
	uint64_t job;
	int64_t ms;
	int rv, state;

	if ((rv = job_member(req, &job, text, len)) != 0)
		return rv;
	if (strcmp(op, "wait") == 0) {
		if ((rv = timeout_member(req, &ms, text, len)) != 0)
			return rv;
		rv = gm_detach_wait(d->detach, job, ms, w, id, text, len);
		return rv == GM_OK ? -1 : rv;
	}
	if (strcmp(op, "status") == 0)
		rv = gm_detach_status(d->detach, job, ans);
	else if ((rv = gm_detach_cancel(d->detach, job, &state)) == 0 &&
		 (*ans = malloc(96)) != NULL)
		snprintf(*ans, 96,
			 "{\"ok\":true,\"job\":%" PRIu64 ",\"state\":\"%s\"}",
			 job, gm_detach_state_name(state));
	if (rv == GM_ENOTFOUND)
		snprintf(text, len, "no detached job %" PRIu64, job);
	if (rv == GM_OK && *ans == NULL) {
		rv = GM_ENOMEM;
		snprintf(text, len, "no memory for the reply");
	}
	return rv;
}

static void job_op(gm_daemon *d, gm_work *w, uint64_t id, const cJSON *req,
		   const char *op)
{
	char text[160], err[256], *ans = NULL;
	int rv = job_answer(d, w, id, req, op, &ans, text, sizeof(text));

	if (rv > 0) {
		ctrl_fail(err, sizeof(err), rv, text);
		reply_ctrl(d, w, id, err);
	} else if (rv == 0) {
		reply_ctrl(d, w, id, ans);
	}
	free(ans);
	arm_tick(d);
}

static void set_draining(gm_daemon *d, int on, const char *why)
{
	if (d->draining == on)
		return;
	d->draining = on;
	if (on)
		GM_LOG(GM_LOG_INFO,
		       "draining (%s): refusing new jobs, finishing %" PRIu64
		       " queued and %" PRIu64 " running",
		       why, gm_sched_queued(d->sched),
		       gm_sched_inflight(d->sched));
	else
		GM_LOG(GM_LOG_INFO, "resumed (%s): accepting jobs", why);
}

/* drain and resume; answers on w. */
static void drain_op(gm_daemon *d, gm_work *w, uint64_t id, int on)
{
	char ans[160];

	if (!on && d->stopping) {
		ctrl_fail(ans, sizeof(ans), GM_ESHUTDOWN,
			  "gemmd is stopping; it cannot resume");
	} else {
		set_draining(d, on, on ? "drain request" : "resume request");
		snprintf(ans, sizeof(ans),
			 "{\"ok\":true,\"draining\":%s,\"queued\":%" PRIu64
			 ",\"running\":%" PRIu64 "}",
			 on ? "true" : "false", gm_sched_queued(d->sched),
			 gm_sched_inflight(d->sched));
	}
	reply_ctrl(d, w, id, ans);
}

/* The ops that answer on w themselves (a wait perhaps later); returns 1
 * when op is one of them. */
static int reply_op(gm_daemon *d, gm_work *w, uint64_t id, const cJSON *req,
		    const char *op)
{
	if (strcmp(op, "status") == 0 || strcmp(op, "wait") == 0 ||
	    strcmp(op, "cancel") == 0)
		job_op(d, w, id, req, op);
	else if (strcmp(op, "drain") == 0 || strcmp(op, "resume") == 0)
		drain_op(d, w, id, op[0] == 'd');
	else
		return 0;
	return 1;
}

static void handle_ctrl(gm_daemon *d, gm_work *w, const gm_hdr *h,
			const uint8_t *body)
{
	cJSON *req = cJSON_ParseWithLength((const char *)body, h->count);
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
	char err[256];
	char *ans = NULL;

	d->stats.ctrl_requests++;
	if (cJSON_IsString(op) && reply_op(d, w, h->id, req, op->valuestring)) {
		cJSON_Delete(req);
		return;
	}
	if (req == NULL)
		ctrl_fail(err, sizeof(err), GM_EJSON, "body is not JSON");
	else if (!cJSON_IsString(op))
		ctrl_fail(err, sizeof(err), GM_EINVAL,
			  "missing string member \\\"op\\\"");
	else if ((ans = ctrl_answer(d, op->valuestring)) == NULL)
		ctrl_fail(err, sizeof(err), GM_EINVAL,
			  "unknown op; known: ping, stats, status, wait, "
			  "cancel, drain, resume");
	reply_ctrl(d, w, h->id, ans ? ans : err);
	free(ans);
	cJSON_Delete(req);
}

/* Reply bytes for a checked request: each job's fixed part + result
 * (none for a result written to a region). */
static uint64_t reply_size(const uint8_t *body, size_t len)
{
	uint64_t size = GM_HDR_SIZE;
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;

	gm_proto_jobs_begin(body, len, &it);
	while (gm_proto_jobs_next_ops(&it, &jd, &ops) == 0) {
		gm_job_sizes_of(&jd, &z);
		size += GM_REPLY_JOB_SIZE +
			(gm_ref_in_region(ops.ref, GM_OPND_OUT) ? 0 : z.out);
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

/* Fills job j described by jd with payload a; its result goes after the
 * reply record at rec, so the engine writes it there directly. Returns
 * the bytes of record and result. */
static uint64_t fill_job(const gm_daemon *d, gm_job *j, const gm_job_desc *jd,
			 const uint8_t *a, uint8_t *rec)
{
	gm_job_sizes z;

	j->d = *jd;
	if (j->d.kernel == GM_KERNEL_DEFAULT)
		j->d.kernel = default_kernel(d, j->d.dtype);
	gm_job_sizes_of(&j->d, &z);
	j->copy_in = a;
	j->copy_in_bytes = z.a + z.b + z.c;
	j->copy_out = rec + GM_REPLY_JOB_SIZE;
	return GM_REPLY_JOB_SIZE + z.out;
}

/* A job naming regions (checked by gm_regions_check_req): points those
 * operands into them, holding each in h, and stages only the inline
 * ones. Returns the reply bytes the result no longer needs: all of them
 * when it goes to a region. */
static uint64_t place_regions(gm_daemon *d, gm_sjob *j,
			      const gm_job_operands *ops, gm_region_holds *h)
{
	gm_job_sizes z;

	j->placed = gm_regions_bind(d->regions, ops, &j->job, h);
	j->job.copy_in = ops->inline_bytes != 0 ? ops->inline_start : NULL;
	j->job.copy_in_bytes = ops->inline_bytes;
	if (!(j->placed & GM_PLACED(GM_OPND_OUT)))
		return 0;
	j->job.copy_out = NULL;
	gm_job_sizes_of(&j->job.d, &z);
	return z.out;
}

/* Fills r's jobs from the request, each result at its place in the
 * reply or in its region. */
static void fill_jobs(gm_daemon *d, gm_sreq *r, const uint8_t *body, size_t len,
		      uint8_t *rep, gm_region_holds *h)
{
	uint64_t off = GM_HDR_SIZE;
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc jd;

	gm_proto_jobs_begin(body, len, &it);
	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_proto_jobs_next_ops(&it, &jd, &ops);
		off += fill_job(d, &r->jobs[i].job, &jd, ops.inline_start,
				rep + off);
		if (jd.flags & GM_JOB_REGIONS)
			off -= place_regions(d, &r->jobs[i], &ops, h);
	}
}

/* Why the scheduler has no room for njobs more jobs of batch b. */
static void no_room(const gm_daemon *d, int rv, const gm_batch *b,
		    uint32_t njobs, char *text, size_t len)
{
	unsigned lim = d->cfg->queue_depth_prio[b->priority];

	if (rv != GM_EBUSY)
		snprintf(text, len, "gemmd is shutting down");
	else if (lim != 0 &&
		 gm_sched_queued_prio(d->sched, b->priority) + njobs > lim)
		snprintf(text, len,
			 "priority %u queue full (%u jobs): try again later",
			 b->priority, lim);
	else
		snprintf(text, len, "queue full: try again later");
}

static void free_detached(dbatch *db, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (db->jobs[i].rep != NULL)
			nng_msg_free(db->jobs[i].rep);
		gm_sched_free_req(db->jobs[i].r);
	}
	free(db);
}

/* What a detached request's jobs count against detach_max_bytes. */
static uint64_t detached_cost(nng_msg *msg)
{
	uint64_t cost = 0;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;
	const uint8_t *a, *b, *c;

	gm_proto_jobs_begin(nng_msg_body(msg), nng_msg_len(msg), &it);
	while (gm_proto_jobs_next(&it, &jd, &a, &b, &c) == 0) {
		gm_job_sizes_of(&jd, &z);
		cost += gm_detach_cost(GM_HDR_SIZE + GM_REPLY_JOB_SIZE + z.out);
	}
	return cost;
}

/* Drops a job's hold on its detached batch; the last frees it. */
static void release_batch(dbatch *db)
{
	if (--db->left != 0)
		return;
	nng_msg_free(db->req);
	free(db);
}

/*
 * Allocates everything a detached request needs before any of it is
 * queued, so that it is refused whole or not at all: the batch, and per
 * job a one-job scheduler request and a one-job reply message of its
 * own, which the result lands in and the table keeps; and *ans, room
 * for the reply listing the ids.
 */
static int make_detached(gm_daemon *d, nng_msg *msg, const gm_hdr *h,
			 const gm_batch *b, dbatch **out, char **ans)
{
	uint32_t conn = nng_pipe_id(nng_msg_get_pipe(msg));
	dbatch *db = calloc(1, sizeof(*db) + h->count * sizeof(dreq));
	double now = gm_now_us();
	const uint8_t *a, *bb, *c;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;

	if (db == NULL || (*ans = malloc(32 + 21 * (size_t)h->count)) == NULL) {
		free(db);
		return GM_ENOMEM;
	}
	db->req = msg;
	gm_proto_jobs_begin(nng_msg_body(msg), nng_msg_len(msg), &it);
	for (uint32_t i = 0; i < h->count; i++) {
		dreq *dr = &db->jobs[i];
		gm_sreq *r = dr->r = gm_sched_new_req(1);

		gm_proto_jobs_next(&it, &jd, &a, &bb, &c);
		gm_job_sizes_of(&jd, &z);
		if (r == NULL ||
		    nng_msg_alloc(&dr->rep, GM_HDR_SIZE + GM_REPLY_JOB_SIZE +
						z.out) != 0) {
			free_detached(db, i + 1);
			free(*ans);
			return GM_ENOMEM;
		}
		r->id = h->id;
		r->batch = *b;
		r->conn = conn;
		r->recv_us = now;
		r->user = dr;
		dr->batch = db;
		fill_job(d, &r->jobs[0].job, &jd, a,
			 (uint8_t *)nng_msg_body(dr->rep) + GM_HDR_SIZE);
	}
	*out = db;
	return GM_OK;
}

/* Records and queues each job of db; writes the ids reply into ans. */
static void start_detached(gm_daemon *d, dbatch *db, uint32_t n, char *ans)
{
	size_t off = (size_t)sprintf(ans, "{\"ok\":true,\"jobs\":[");

	/* A hold of its own while queueing: a job failing at once must
	 * not free the batch under this loop. */
	db->left = n + 1;
	for (uint32_t i = 0; i < n; i++) {
		dreq *dr = &db->jobs[i];

		dr->detach_id =
		    gm_detach_add(d->detach, dr->r, nng_msg_len(dr->rep));
		off += (size_t)sprintf(ans + off, "%s%" PRIu64, i ? "," : "",
				       dr->detach_id);
		/* Cannot fail: there was room for all, on this thread. */
		(void)gm_sched_submit(d->sched, dr->r);
	}
	strcpy(ans + off, "]}");
	release_batch(db);
}

/* A request with GM_BATCH_DETACH: answered at once with its job ids. */
static void handle_detached(gm_daemon *d, gm_work *w, nng_msg *msg,
			    const gm_hdr *h, const gm_batch *b)
{
	char text[GM_MSG_TEXT + 1], *ans = NULL;
	dbatch *db = NULL;
	int rv;

	if ((rv = gm_sched_room(d->sched, b->priority, h->count)) != 0)
		no_room(d, rv, b, h->count, text, sizeof(text));
	else if ((rv = gm_detach_room(d->detach, h->count,
				      detached_cost(msg))) != 0)
		snprintf(text, sizeof(text), "%s",
			 rv == GM_EBUSY ? "no room for more detached results "
					  "(detach_max_bytes): wait for or "
					  "cancel some"
					: "no memory for the request");
	else if ((rv = make_detached(d, msg, h, b, &db, &ans)) != 0)
		snprintf(text, sizeof(text), "no memory for the request");
	if (rv != 0) {
		d->stats.jobs_rejected += rv == GM_EBUSY ? h->count : 0;
		reply_error(d, w, h->id, rv, text);
		nng_msg_free(msg);
		return;
	}
	d->stats.requests++;
	start_detached(d, db, h->count, ans);
	reply_ctrl(d, w, h->id, ans);
	free(ans);
	arm_tick(d);
}

static void handle_gemm(gm_daemon *d, gm_work *w, nng_msg *msg)
{
	const uint8_t *body = nng_msg_body(msg);
	size_t len = nng_msg_len(msg);
	char text[GM_MSG_TEXT + 1];
	gm_region_holds *holds = NULL;
	nng_msg *rep = NULL;
	uint32_t nrefs;
	gm_batch b;
	gm_hdr h;
	gm_sreq *r = NULL;
	dreq *dr = NULL;
	int rv;

	if ((rv = gm_proto_check_gemm(body, len, &d->lim, &h, &b, text,
				      sizeof(text))) != 0 ||
	    (rv = gm_regions_check_req(d->regions, msg, &nrefs, text,
				       sizeof(text))) != 0)
		goto refuse;
	if ((b.flags & GM_BATCH_DETACH) && nrefs != 0) {
		rv = GM_EUNSUPPORTED;
		snprintf(text, sizeof(text),
			 "a detached request cannot name regions");
		goto refuse;
	}
	if (b.flags & GM_BATCH_DETACH) {
		handle_detached(d, w, msg, &h, &b);
		return;
	}
	rv = GM_ENOMEM;
	snprintf(text, sizeof(text), "no memory for the request");
	r = gm_sched_new_req(h.count);
	dr = malloc(sizeof(*dr));
	if (r == NULL || dr == NULL ||
	    (nrefs != 0 && (holds = gm_region_holds_new(nrefs)) == NULL) ||
	    nng_msg_alloc(&rep, (size_t)reply_size(body, len)) != 0)
		goto free;
	r->id = h.id;
	r->batch = b;
	r->conn = nng_pipe_id(nng_msg_get_pipe(msg));
	r->recv_us = gm_now_us();
	r->user = dr;
	*dr = (dreq){.w = w, .req = msg, .rep = rep, .holds = holds};
	fill_jobs(d, r, body, len, nng_msg_body(rep), holds);
	d->stats.requests++;
	if ((rv = gm_sched_submit(d->sched, r)) == 0) {
		arm_tick(d);
		return;
	}
	no_room(d, rv, &b, h.count, text, sizeof(text));
	d->stats.requests--;
free:
	if (rep != NULL)
		nng_msg_free(rep);
	gm_region_holds_drop(d->regions, holds);
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
	} else if (rv == 0 && d->draining) {
		rv = GM_EDRAINING;
		snprintf(text, sizeof(text),
			 "gemmd is draining: no new jobs until it resumes");
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
		if (j->job.status == 0 && j->job.copy_out != NULL) {
			rj.result_bytes = z.out;
			/* Usually already in place: then no pass over it. */
			if (rep + off + GM_REPLY_JOB_SIZE != j->job.copy_out)
				memmove(rep + off + GM_REPLY_JOB_SIZE,
					j->job.copy_out, z.out);
		} else if (j->job.status != 0) { /* 0: in its region */
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
	gm_region_holds_drop(d->regions, dr->holds);
	if (dr->batch != NULL) {
		/* Detached: the table keeps the reply for a wait. */
		gm_detach_done(d->detach, dr->detach_id, dr->rep);
		gm_sched_free_req(r);
		release_batch(dr->batch);
		return;
	}
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
	arm_tick(d);
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
	arm_tick(d);
}

/* Sets tick for the first of: a queued job's deadline (so a job that
 * waits behind a long one fails near its deadline, not when the queue
 * next moves), a detached result or record coming due, a parked wait's
 * timeout. */
static void arm_tick(gm_daemon *d)
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

	set_draining(d, 1, strsignal(signum));
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

/* gm_detach: a parked wait's answer, the result or a refusal. */
static void answer_wait(void *w, uint64_t id, nng_msg *result, int code,
			const char *text, void *arg)
{
	gm_daemon *d = arg;
	char err[256];

	if (result != NULL) {
		d->stats.bytes_out += nng_msg_len(result);
		gm_server_reply(w, result);
		return;
	}
	ctrl_fail(err, sizeof(err), code, text);
	reply_ctrl(d, w, id, err);
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
				  &d->stats, on_request_done, d, &d->sched)) !=
	    0)
		return rv;
	gm_sched_set_limits(d->sched, d->cfg->queue_depth_prio);
	return gm_detach_create(d->sched, d->cfg->detach_keep_s,
				d->cfg->detach_max_bytes, answer_wait, d,
				&d->detach);
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
	rv = gm_server_open(&d.loop, cfg, on_request, &d, &d.srv, msg,
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
	    gm_http_open(&d.loop, cfg->metrics_listen, &http_ops, &d, &d.http,
			 msg, sizeof(msg)) != 0) {
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
