/*
 * gemmd_ctrl.c - the client library's control calls that are a request
 * and a parsed reply on top of gemmd_ctrl: ping, stats, a detached job's
 * status and its cancel, drain and resume, and the job state names.
 * gemmd_ctrl itself, and gemmd_wait (a control request that a GEMM reply
 * answers), are in gemmd_call.c with the other calls that make a request.
 */
#include "gemmd.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmc_error.h"
#include "gm_jobstate.h"
#include "gm_proto.h"

int gemmd_ping(gemmd_client *c, char **reply, int timeout_ms)
{
	return gemmd_ctrl(c, "{\"op\":\"ping\"}", reply, timeout_ms);
}

int gemmd_stats(gemmd_client *c, char **reply, int timeout_ms)
{
	return gemmd_ctrl(c, "{\"op\":\"stats\"}", reply, timeout_ms);
}

/* ---- detached jobs ---- */

/* The public states are the wire's, one for one. */
#define SAME_STATE(name, val, wire)                                 \
	_Static_assert((int)GEMMD_JOB_##name == GM_JOBSTATE_##name, \
		       "GEMMD_JOB_" #name " is GM_JOBSTATE_" #name);
GM_JOBSTATE_MAP(SAME_STATE)
#undef SAME_STATE
_Static_assert(GEMMD_JOB_EXPIRED + 1 == GM_JOBSTATE_COUNT,
	       "every wire state is public");

const char *gemmd_job_state_name(int state)
{
	return gm_jobstate_name(state);
}

/* gemmd_ctrl whose reply is parsed; *doc is the caller's to delete. */
static int ctrl_doc(gemmd_client *c, const char *request, cJSON **doc,
		    int timeout_ms)
{
	char *reply;
	int rv;

	if ((rv = gemmd_ctrl(c, request, &reply, timeout_ms)) != GM_OK)
		return rv;
	*doc = cJSON_Parse(reply);
	free(reply);
	return *doc != NULL ? GM_OK : gmc_error_set(GM_ENOMEM, "out of memory");
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *key)
{
	const char *v =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	return v != NULL ? v : "";
}

static void read_info(const cJSON *doc, gemmd_job_info *info)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(doc, "timings");

	memset(info, 0, sizeof(*info));
	info->id = (uint64_t)num(doc, "job");
	info->state = gm_jobstate_parse(str(doc, "state"));
	info->status = (int)num(doc, "status");
	snprintf(info->message, sizeof(info->message), "%s",
		 str(doc, "message"));
	info->has_result =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "result"));
	info->priority = (int)num(doc, "priority");
	info->dtype = gm_dtype_parse(str(doc, "dtype"));
	info->layout = strcmp(str(doc, "layout"), "col") == 0 ? GEMMD_COL_MAJOR
							      : GEMMD_ROW_MAJOR;
	info->m = (uint32_t)num(doc, "m");
	info->n = (uint32_t)num(doc, "n");
	info->k = (uint32_t)num(doc, "k");
	info->t.queue_us = num(t, "queue_us");
	info->t.h2d_us = num(t, "h2d_us");
	info->t.kernel_us = num(t, "kernel_us");
	info->t.d2h_us = num(t, "d2h_us");
	info->t.total_us = num(t, "total_us");
	info->t.start_seq = (uint64_t)num(t, "start_seq");
}

int gemmd_job_status(gemmd_client *c, uint64_t id, gemmd_job_info *info,
		     int timeout_ms)
{
	char req[64];
	cJSON *doc;
	int rv;

	if (info == NULL)
		return gmc_error_set(GM_EINVAL, "no place for the status");
	snprintf(req, sizeof(req), "{\"op\":\"status\",\"job\":%" PRIu64 "}",
		 id);
	if ((rv = ctrl_doc(c, req, &doc, timeout_ms)) != GM_OK)
		return rv;
	read_info(doc, info);
	cJSON_Delete(doc);
	if (info->state < 0)
		return gmc_error_set(GM_EJSON,
				     "status reply has an unknown state");
	return GM_OK;
}

int gemmd_cancel(gemmd_client *c, uint64_t id, int *state, int timeout_ms)
{
	char req[64];
	cJSON *doc;
	int rv, st;

	snprintf(req, sizeof(req), "{\"op\":\"cancel\",\"job\":%" PRIu64 "}",
		 id);
	if ((rv = ctrl_doc(c, req, &doc, timeout_ms)) != GM_OK)
		return rv;
	st = gm_jobstate_parse(str(doc, "state"));
	cJSON_Delete(doc);
	if (st < 0)
		return gmc_error_set(GM_EJSON,
				     "cancel reply has an unknown state");
	if (state != NULL)
		*state = st;
	return GM_OK;
}

int gemmd_drain(gemmd_client *c, int timeout_ms)
{
	return gemmd_ctrl(c, "{\"op\":\"drain\"}", NULL, timeout_ms);
}

int gemmd_resume(gemmd_client *c, int timeout_ms)
{
	return gemmd_ctrl(c, "{\"op\":\"resume\"}", NULL, timeout_ms);
}
