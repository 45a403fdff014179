/*
 * gm_ctrl.c - control requests on the loop thread: ping and stats, the
 * status, wait and cancel of a detached job, drain and resume, each
 * answered with a small JSON document; and the same live view of the
 * daemon for the HTTP endpoints (metrics, readiness).
 */
#include "gm_ctrl.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_build.h"
#include "gm_clock.h"
#include "gm_metrics.h"
#include "gm_reply.h"

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

static char *ctrl_answer(gm_loop *l, const char *op)
{
	char head[256];
	gm_stats_live live;
	char *doc, *out;

	if (strcmp(op, "ping") == 0) {
		snprintf(head, sizeof(head),
			 "{\"ok\":true,\"version\":\"%s\",\"engine\":\"%s\","
			 "\"devices\":%u,\"uptime_s\":%.3f,\"draining\":%s}",
			 GEMMD_VERSION, gm_engine_name(l->eng),
			 gm_engine_devices(l->eng),
			 (gm_clock_now_us() - l->stats.start_us) / 1e6,
			 l->draining || l->stopping ? "true" : "false");
		return strdup(head);
	}
	if (strcmp(op, "stats") != 0)
		return NULL;
	live_stats(l, &live);
	if ((doc = gm_stats_render(&l->stats, &live)) == NULL)
		return NULL;
	out = malloc(strlen(doc) + 32);
	if (out != NULL)
		sprintf(out, "{\"ok\":true,\"stats\":%s}", doc);
	cJSON_free(doc);
	return out;
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
static int job_answer(gm_loop *l, gm_conn *c, uint64_t id, const cJSON *req,
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
		/* A wait that parks holds c and counts against its cap
		 * until answered; one answered at once lets go there. */
		gm_conn_hold(c);
		gm_conn_begin(c);
		rv = gm_detach_wait(l->detach, job, ms, c, id, text, len);
		if (rv != GM_OK) {
			gm_conn_end(c);
			gm_conn_release(c);
		}
		return rv == GM_OK ? -1 : rv;
	}
	if (strcmp(op, "status") == 0)
		rv = gm_detach_status(l->detach, job, ans);
	else if ((rv = gm_detach_cancel(l->detach, job, &state)) == 0 &&
		 (*ans = malloc(96)) != NULL)
		snprintf(*ans, 96,
			 "{\"ok\":true,\"job\":%" PRIu64 ",\"state\":\"%s\"}",
			 job, gm_jobstate_name(state));
	if (rv == GM_ENOTFOUND)
		snprintf(text, len, "no detached job %" PRIu64, job);
	if (rv == GM_OK && *ans == NULL) {
		rv = GM_ENOMEM;
		snprintf(text, len, "no memory for the reply");
	}
	return rv;
}

static void job_op(gm_loop *l, gm_conn *c, uint64_t id, const cJSON *req,
		   const char *op)
{
	char text[160], *ans = NULL;
	int rv = job_answer(l, c, id, req, op, &ans, text, sizeof(text));

	if (rv > 0)
		gm_reply_refusal(c, id, rv, text);
	else if (rv == 0)
		gm_reply_json(c, id, ans);
	free(ans);
	gm_loop_arm_tick(l);
}

/* drain and resume; answers on c. */
static void drain_op(gm_loop *l, gm_conn *c, uint64_t id, int on)
{
	char ans[160];

	if (!on && l->stopping) {
		gm_reply_refusal(c, id, GM_ESHUTDOWN,
				 "gemmd is stopping; it cannot resume");
		return;
	}
	gm_loop_set_draining(l, on, on ? "drain request" : "resume request");
	snprintf(ans, sizeof(ans),
		 "{\"ok\":true,\"draining\":%s,\"queued\":%" PRIu64
		 ",\"running\":%" PRIu64 "}",
		 on ? "true" : "false", gm_sched_queued(l->sched),
		 gm_sched_inflight(l->sched));
	gm_reply_json(c, id, ans);
}

/* The ops that answer on c themselves (a wait perhaps later); returns 1
 * when op is one of them. */
static int reply_op(gm_loop *l, gm_conn *c, uint64_t id, const cJSON *req,
		    const char *op)
{
	if (strcmp(op, "status") == 0 || strcmp(op, "wait") == 0 ||
	    strcmp(op, "cancel") == 0)
		job_op(l, c, id, req, op);
	else if (strcmp(op, "drain") == 0 || strcmp(op, "resume") == 0)
		drain_op(l, c, id, op[0] == 'd');
	else
		return 0;
	return 1;
}

void gm_ctrl_handle(gm_loop *l, gm_conn *c, const gm_hdr *h,
		    const uint8_t *body)
{
	cJSON *req = cJSON_ParseWithLength((const char *)body, h->length);
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
	char *ans = NULL;

	l->stats.ctrl_requests++;
	if (req == NULL)
		gm_reply_refusal(c, h->id, GM_EJSON, "body is not JSON");
	else if (!cJSON_IsString(op))
		gm_reply_refusal(c, h->id, GM_EINVAL,
				 "missing string member \\\"op\\\"");
	else if (reply_op(l, c, h->id, req, op->valuestring))
		; /* answered, or a wait parked */
	else if ((ans = ctrl_answer(l, op->valuestring)) != NULL)
		gm_reply_json(c, h->id, ans);
	else
		gm_reply_refusal(c, h->id, GM_EINVAL,
				 "unknown op; known: ping, stats, status, "
				 "wait, cancel, drain, resume");
	free(ans);
	cJSON_Delete(req);
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
