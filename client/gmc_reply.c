/*
 * gmc_reply.c - replies put into the caller's jobs and documents; see
 * gmc_reply.h.
 */
#include "gmc_reply.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A wait for a job given without out: the shape is the result's, and
 * out is made to hold it. */
static int adopt_shape(gemmd_job *j, const gm_reply_job *r, char *msg,
		       size_t msglen)
{
	j->dtype = r->dtype;
	j->layout = r->layout;
	j->m = r->m;
	j->n = r->n;
	if ((j->out = malloc(r->result_bytes ? r->result_bytes : 1)) == NULL) {
		snprintf(msg, msglen, "no memory for the result");
		return GM_ENOMEM;
	}
	return GM_OK;
}

int gmc_reply_check(gemmd_job *j, const gm_reply_job *r, uint64_t result_bytes,
		    bool alloc_out, int mismatch, char *msg, size_t msglen)
{
	if (r->status != GM_OK)
		return GM_OK;
	if (alloc_out)
		return adopt_shape(j, r, msg, msglen);
	/* A reply echoes the job's dtype, layout, m and n (PROTOCOL.md 5.1);
	 * anything else must not reach the caller's out. */
	if (r->dtype == j->dtype && r->m == j->m && r->n == j->n &&
	    r->layout == j->layout && r->result_bytes == result_bytes)
		return GM_OK;
	snprintf(msg, msglen,
		 "reply is %" PRIu32 "x%" PRIu32 " %s layout %u with %" PRIu64
		 " bytes, job was %" PRIu32 "x%" PRIu32 " %s layout %d",
		 r->m, r->n, gm_dtype_name(r->dtype), r->layout,
		 r->result_bytes, j->m, j->n, gm_dtype_name(j->dtype),
		 j->layout);
	return mismatch;
}

void gmc_reply_take(gemmd_job *j, const gm_reply_job *r)
{
	size_t n = strnlen(r->message, sizeof(j->message) - 1);

	j->t.queue_us = r->t.queue_us;
	j->t.h2d_us = r->t.h2d_us;
	j->t.kernel_us = r->t.kernel_us;
	j->t.d2h_us = r->t.d2h_us;
	j->t.total_us = r->t.total_us;
	j->t.start_seq = r->t.start_seq;
	j->status = (int)r->status;
	memcpy(j->message, r->message, n);
	j->message[n] = '\0';
}

int gmc_reply_ctrl(const char *body, size_t len, char **doc, char *msg,
		   size_t msglen)
{
	cJSON *d = cJSON_ParseWithLength(body, len);
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(d, "ok");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(d, "code");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(d, "message");
	int rv = GM_OK;

	*doc = NULL;
	if (!cJSON_IsObject(d) || !cJSON_IsBool(ok)) {
		rv = GM_EJSON;
		snprintf(msg, msglen, "reply is not a JSON object with \"ok\"");
	} else if (cJSON_IsTrue(ok) && (*doc = strndup(body, len)) == NULL) {
		rv = GM_ENOMEM;
		snprintf(msg, msglen, "out of memory");
	} else if (cJSON_IsFalse(ok)) {
		rv = cJSON_IsNumber(code) && code->valueint > 0 ? code->valueint
								: GM_EINTERNAL;
		snprintf(msg, msglen, "%s",
			 cJSON_IsString(text) ? text->valuestring : "refused");
	}
	cJSON_Delete(d);
	return rv;
}

int gmc_reply_ids(const char *body, size_t len, uint64_t *ids, uint32_t n,
		  char *msg, size_t msglen)
{
	const cJSON *list, *id = NULL;
	cJSON *d;
	char *text;
	uint32_t i = 0;
	int rv;

	if ((rv = gmc_reply_ctrl(body, len, &text, msg, msglen)) != GM_OK)
		return rv;
	d = cJSON_Parse(text);
	free(text);
	list = cJSON_GetObjectItemCaseSensitive(d, "jobs");
	cJSON_ArrayForEach(id, list)
	{
		if (i == n || !cJSON_IsNumber(id) || id->valuedouble < 1 ||
		    id->valuedouble >= 0x1p53)
			break;
		ids[i++] = (uint64_t)id->valuedouble;
	}
	if (i != n || id != NULL) {
		rv = GM_EJSON;
		snprintf(msg, msglen,
			 "bad reply: want %" PRIu32 " job ids in \"jobs\"", n);
	}
	cJSON_Delete(d);
	return rv;
}
