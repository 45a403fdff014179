/*
 * gm_ctrl.c - control requests on the loop thread: ping and stats, the
 * status, wait and cancel of a detached job, drain and resume, each
 * answered with a small JSON document; and the same live view of the
 * daemon for the HTTP endpoints (metrics, readiness).
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_build.h"
#include "gm_daemon_impl.h"
#include "gm_log.h"
#include "gm_metrics.h"

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

const gm_http_ops gm_ctrl_http_ops = {.metrics = metrics_text,
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
		gm_request_reply_ctrl(d, w, id, err);
	} else if (rv == 0) {
		gm_request_reply_ctrl(d, w, id, ans);
	}
	free(ans);
	gm_daemon_arm_tick(d);
}

void gm_ctrl_set_draining(gm_daemon *d, int on, const char *why)
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
		gm_ctrl_set_draining(d, on,
				     on ? "drain request" : "resume request");
		snprintf(ans, sizeof(ans),
			 "{\"ok\":true,\"draining\":%s,\"queued\":%" PRIu64
			 ",\"running\":%" PRIu64 "}",
			 on ? "true" : "false", gm_sched_queued(d->sched),
			 gm_sched_inflight(d->sched));
	}
	gm_request_reply_ctrl(d, w, id, ans);
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

void gm_ctrl_handle(gm_daemon *d, gm_work *w, const gm_hdr *h,
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
	gm_request_reply_ctrl(d, w, h->id, ans ? ans : err);
	free(ans);
	cJSON_Delete(req);
}

/* gm_detach: a parked wait's answer, the result or a refusal. */
void gm_ctrl_answer_wait(void *w, uint64_t id, nng_msg *result, int code,
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
	gm_request_reply_ctrl(d, w, id, err);
}
