/*
 * gm_ctrl.c - control requests on the loop thread: ping and stats, the
 * status, wait and cancel of a detached job, the caller's jobs listed,
 * drain and resume, each
 * answered with a small JSON document; and the same live view of the
 * daemon for the HTTP endpoints (metrics, readiness). A body is read
 * whole by the strict parser (gm_ctrlreq.h) before anything else is
 * looked at; who asks (gm_principal.h) is checked next.
 */
#include "gm_ctrl.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_build.h"
#include "gm_clock.h"
#include "gm_ctrlreq.h"
#include "gm_log.h"
#include "gm_metrics.h"
#include "gm_reply.h"
#include "gm_request.h"

/* The most jobs one "jobs" answer lists (PROTOCOL.md 7.4): a reply of a
 * few hundred KiB at most, however many a principal has. */
#define JOBS_LIST_MAX 1000

static void live_stats(gm_loop *l, gm_stats_live *live)
{
	const gm_config *cfg = l->cfg;

	gm_conns_counts(l, &live->conns);
	live->contexts = (uint64_t)cfg->max_conns * cfg->conn_inflight;
	live->requests_inflight = gm_conns_inflight(l);
	live->pool_waiting = gm_poolq_waiting(l->poolq);
	live->engine = gm_engine_name(l->eng);
	live->queue_depth = gm_sched_queued(l->sched);
	live->queue_limit = l->cfg->queue_depth;
	live->inflight = gm_sched_inflight(l->sched);
	live->pool_used = gm_pool_used(l->pool);
	live->pool_size = gm_pool_size(l->pool);
	live->pool_slabs = gm_pool_slabs(l->pool);
	for (unsigned p = 0; p <= GM_BATCH_PRIO_MAX; p++) {
		live->queued_prio[p] = gm_sched_queued_prio(l->sched, p);
		live->limit_prio[p] = l->cfg->queue_depth_prio[p];
	}
	gm_detach_counts(l->detach, &live->detached);
	gm_regions_counts(l->regions, &live->regions);
	live->regions.connections = gm_region_srv_conns(l->region_srv);
	live->draining = l->draining || l->stopping;
	live->stopping = l->stopping;
	live->eng = l->eng;
}

/* The HTTP endpoints' view of the daemon; loop thread. */
static char *metrics_text(void *arg)
{
	gm_loop *l = arg;
	gm_stats_live live;

	live_stats(l, &live);
	return gm_metrics_render(&l->stats, &live);
}

static int is_ready(void *arg, const char **why)
{
	gm_loop *l = arg;

	if (gm_engine_faulted(l->eng))
		*why = "GPU fault";
	else if (!l->warm)
		*why = "warming up";
	else if (l->stopping || l->draining)
		*why = "draining";
	else
		return 1;
	return 0;
}

const gm_http_ops gm_ctrl_http_ops = {.metrics = metrics_text,
				      .ready = is_ready};

/* One word for what the daemon does now, as ping's "state" (PROTOCOL.md
 * 7): the first that holds of faulted, draining (a drain, or a stop
 * signal: either way queued jobs finish and new ones are refused),
 * warming, ready. */
static const char *state_word(const gm_loop *l)
{
	if (gm_engine_faulted(l->eng))
		return "faulted";
	if (l->draining || l->stopping)
		return "draining";
	return l->warm ? "ready" : "warming";
}

/* The dtypes the engine runs with the daemon's default kernel (as a job
 * that names no kernel gets it), asked of the engine itself, so that a
 * client can refuse the others before it sends a byte, with the
 * engine's own error. */
static void add_dtypes(const gm_loop *l, cJSON *doc)
{
	cJSON *list = cJSON_AddArrayToObject(doc, "dtypes");
	gm_job_desc d = {.m = 1, .n = 1, .k = 1};
	char msg[GM_MSG_TEXT + 1];
	const char *name;

	for (int t = 1; (name = gm_dtype_name(t)) != NULL; t++) {
		d.dtype = (uint8_t)t;
		d.kernel = gm_request_default_kernel(l, t);
		if (gm_engine_supports(l->eng, &d, msg, sizeof(msg)) == GM_OK)
			cJSON_AddItemToArray(list, cJSON_CreateString(name));
	}
}

/* ping's answer (malloc'd), or NULL when out of memory. */
static char *ping_answer(gm_loop *l)
{
	cJSON *doc = cJSON_CreateObject();
	const char *why;
	char *out;

	cJSON_AddTrueToObject(doc, "ok");
	cJSON_AddStringToObject(doc, "version", GEMMD_VERSION);
	cJSON_AddStringToObject(doc, "engine", gm_engine_name(l->eng));
	cJSON_AddNumberToObject(doc, "devices", gm_engine_devices(l->eng));
	/* Whole milliseconds, so that the number prints short. */
	cJSON_AddNumberToObject(
	    doc, "uptime_s",
	    (double)(uint64_t)((gm_clock_now_us() - l->stats.start_us) / 1e3) /
		1e3);
	cJSON_AddBoolToObject(doc, "draining", l->draining || l->stopping);
	cJSON_AddBoolToObject(doc, "stopping", l->stopping);
	cJSON_AddBoolToObject(doc, "ready", is_ready(l, &why));
	cJSON_AddStringToObject(doc, "state", state_word(l));
	add_dtypes(l, doc);
	out = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	return out;
}

/* ping and stats: the answer (malloc'd), or NULL when out of memory. */
static char *ctrl_answer(gm_loop *l, int op)
{
	gm_stats_live live;
	char *doc, *out;

	if (op == GM_CTRLREQ_PING)
		return ping_answer(l);
	live_stats(l, &live);
	if ((doc = gm_stats_render(&l->stats, &live)) == NULL)
		return NULL;
	out = malloc(strlen(doc) + 32);
	if (out != NULL)
		sprintf(out, "{\"ok\":true,\"stats\":%s}", doc);
	cJSON_free(doc);
	return out;
}

/* status, wait and cancel of a detached job, for c's principal: GM_OK
 * with the reply in *ans, -1 when the wait answers on its own (now or
 * later), or a refusal with text for it. Another principal's job is
 * answered as an unknown id is (PROTOCOL.md 7.1). */
static int job_answer(gm_loop *l, gm_conn *c, uint64_t id, const gm_ctrlreq *q,
		      char **ans, char *text, size_t len)
{
	const gm_principal *who = gm_conn_principal(c);
	int64_t ms =
	    (q->members & GM_CTRLREQ_M_TIMEOUT) ? (int64_t)q->timeout_ms : -1;
	int rv, state;

	if (q->op == GM_CTRLREQ_WAIT) {
		/* A wait that parks holds c and counts against its cap
		 * until answered; one answered at once lets go there. */
		gm_conn_hold(c);
		gm_conn_begin(c);
		rv = gm_detach_wait(l->detach, who, q->job, ms, c, id, text,
				    len);
		if (rv != GM_OK) {
			gm_conn_end(c);
			gm_conn_release(c);
		}
		return rv == GM_OK ? -1 : rv;
	}
	if (q->op == GM_CTRLREQ_STATUS)
		rv = gm_detach_status(l->detach, who, q->job, ans);
	else if ((rv = gm_detach_cancel(l->detach, who, q->job, &state)) == 0 &&
		 (*ans = malloc(96)) != NULL)
		snprintf(*ans, 96,
			 "{\"ok\":true,\"job\":%" PRIu64 ",\"state\":\"%s\"}",
			 q->job, gm_jobstate_name(state));
	if (rv == GM_ENOTFOUND)
		snprintf(text, len, "no detached job %" PRIu64, q->job);
	if (rv == GM_OK && *ans == NULL) {
		rv = GM_ENOMEM;
		snprintf(text, len, "no memory for the reply");
	}
	return rv;
}

static void job_op(gm_loop *l, gm_conn *c, uint64_t id, const gm_ctrlreq *q)
{
	char text[160], *ans = NULL;
	int rv = job_answer(l, c, id, q, &ans, text, sizeof(text));

	if (rv > 0)
		gm_reply_refusal(c, id, rv, text);
	else if (rv == 0)
		gm_reply_json(c, id, ans);
	free(ans);
	gm_loop_arm_tick(l);
}

/* A job of a request that is not detached, while not done. */
static cJSON *live_item(const gm_request *rq, uint32_t i, const gm_sched_job *j)
{
	cJSON *o = cJSON_CreateObject();
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, rq->h.id);
	cJSON_AddRawToObject(o, "request", num);
	cJSON_AddNumberToObject(o, "index", i);
	cJSON_AddFalseToObject(o, "detached");
	/* Handed to the engine but not started there is still queued. */
	cJSON_AddStringToObject(o, "state",
				gm_sched_job_state(j) == GM_SCHED_JOB_RUNNING
				    ? "running"
				    : "queued");
	cJSON_AddStringToObject(o, "owner",
				gm_principal_name(gm_conn_principal(rq->conn)));
	cJSON_AddStringToObject(o, "dtype", gm_dtype_name(j->job.d.dtype));
	cJSON_AddNumberToObject(o, "m", j->job.d.m);
	cJSON_AddNumberToObject(o, "n", j->job.d.n);
	cJSON_AddNumberToObject(o, "k", j->job.d.k);
	cJSON_AddNumberToObject(o, "priority", rq->b.priority);
	return o;
}

/* Adds the queued and running jobs of the live requests that are not
 * detached (those are the detached table's) and who sent (NULL: all);
 * returns how many it left out for want of room. */
static uint64_t list_live(gm_loop *l, const gm_principal *who, cJSON *list,
			  uint64_t *room)
{
	uint64_t left_out = 0;

	for (const gm_request *rq = l->live; rq != NULL; rq = rq->live_next) {
		if ((rq->b.flags & GM_BATCH_DETACH) ||
		    (who != NULL &&
		     !gm_principal_same(gm_conn_principal(rq->conn), who)))
			continue;
		for (uint32_t i = 0; i < rq->sr->njobs; i++) {
			const gm_sched_job *j = &rq->sr->jobs[i];

			if (j->state == GM_SCHED_JOB_DONE)
				continue;
			if (*room == 0) {
				left_out++;
				continue;
			}
			cJSON_AddItemToArray(list, live_item(rq, i, j));
			(*room)--;
		}
	}
	return left_out;
}

/* "jobs": the caller's queued, running and detached jobs; an admin's
 * answer lists everyone's. The answer (malloc'd), or NULL when out of
 * memory. */
static char *jobs_answer(gm_loop *l, gm_conn *c)
{
	const gm_principal *who = gm_conn_principal(c);
	char why[GM_PRINCIPAL_NAME_MAX + 160];
	cJSON *doc = cJSON_CreateObject(), *list;
	uint64_t room = JOBS_LIST_MAX, left_out;
	bool all = gm_principal_is_admin(who, l->cfg, why, sizeof(why));
	char *out;

	cJSON_AddTrueToObject(doc, "ok");
	cJSON_AddBoolToObject(doc, "all", all);
	list = cJSON_AddArrayToObject(doc, "jobs");
	left_out = list_live(l, all ? NULL : who, list, &room);
	left_out += gm_detach_list(l->detach, all ? NULL : who, list, &room);
	cJSON_AddNumberToObject(doc, "left_out", (double)left_out);
	out = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	return out;
}

/* drain and resume; answers on c. */
static void drain_op(gm_loop *l, gm_conn *c, uint64_t id, int on)
{
	char ans[160], why[GM_PRINCIPAL_NAME_MAX + 32];

	if (!on && l->stopping) {
		gm_reply_refusal(c, id, GM_ESHUTDOWN,
				 "gemmd is stopping; it cannot resume");
		return;
	}
	snprintf(why, sizeof(why), "%s request from %s",
		 on ? "drain" : "resume",
		 gm_principal_name(gm_conn_principal(c)));
	gm_loop_set_draining(l, on, why);
	snprintf(ans, sizeof(ans),
		 "{\"ok\":true,\"draining\":%s,\"queued\":%" PRIu64
		 ",\"running\":%" PRIu64 "}",
		 on ? "true" : "false", gm_sched_queued(l->sched),
		 gm_sched_inflight(l->sched));
	gm_reply_json(c, id, ans);
}

/* An admin op from a principal that is not one: refused EACCES, naming
 * the key that would make it one, and logged, one line a second at
 * most (a client may ask in a loop). Returns whether it was refused. */
static bool refuse_admin(gm_loop *l, gm_conn *c, uint64_t id, int op)
{
	static double logged_us;
	const gm_principal *who = gm_conn_principal(c);
	char why[GM_PRINCIPAL_NAME_MAX + 160], text[sizeof(why) + 64];
	double now;

	if (gm_principal_is_admin(who, l->cfg, why, sizeof(why)))
		return false;
	snprintf(text, sizeof(text), "op \"%s\" needs an admin: %s",
		 gm_ctrlreq_op_name(op), why);
	now = gm_clock_now_us();
	if (now - logged_us >= 1e6) {
		logged_us = now;
		GM_LOG(GM_LOG_WARN,
		       "refused %s from %s: not an admin (one such line a "
		       "second at most)",
		       gm_ctrlreq_op_name(op), gm_principal_name(who));
	}
	gm_reply_refusal(c, id, GM_EACCES, text);
	return true;
}

/* In the order PROTOCOL.md 7.3 gives: the body (the frame header was
 * checked as it came), then who asks, then what the op finds. */
void gm_ctrl_handle(gm_loop *l, gm_conn *c, const gm_hdr *h,
		    const uint8_t *body)
{
	char text[GM_MSG_TEXT + 64], *ans;
	gm_ctrlreq q;
	int rv;

	l->stats.ctrl_requests++;
	rv = gm_ctrlreq_parse(body, h->length, &q, text, sizeof(text));
	if (rv != GM_OK) {
		gm_reply_refusal(c, h->id, rv, text);
		return;
	}
	if (gm_ctrlreq_op_admin(q.op) && refuse_admin(l, c, h->id, q.op))
		return;
	switch (q.op) {
	case GM_CTRLREQ_STATUS:
	case GM_CTRLREQ_WAIT:
	case GM_CTRLREQ_CANCEL:
		job_op(l, c, h->id, &q);
		return;
	case GM_CTRLREQ_DRAIN:
	case GM_CTRLREQ_RESUME:
		drain_op(l, c, h->id, q.op == GM_CTRLREQ_DRAIN);
		return;
	default: /* ping, stats, jobs */
		ans = q.op == GM_CTRLREQ_JOBS ? jobs_answer(l, c)
					      : ctrl_answer(l, q.op);
		if (ans != NULL)
			gm_reply_json(c, h->id, ans);
		else
			gm_reply_refusal(c, h->id, GM_ENOMEM,
					 "no memory for the reply");
		free(ans);
	}
}

void gm_ctrl_answer_wait(void *w, uint64_t id, uint8_t *result, uint64_t len,
			 int code, const char *text, void *arg)
{
	gm_conn *c = w;

	(void)arg;
	if (result != NULL)
		gm_conn_push_heap(c, result, len);
	else
		gm_reply_refusal(c, id, code, text);
	gm_conn_end(c);
	gm_conn_release(c);
}
