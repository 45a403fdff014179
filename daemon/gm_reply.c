/*
 * gm_reply.c - control replies on their way out; see gm_reply.h.
 */
#include "gm_reply.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gm_reply_json(gm_conn *c, uint64_t id, const char *json)
{
	size_t n = strlen(json);
	uint8_t *p = malloc(GM_HDR_SIZE + n);

	if (p == NULL) {
		gm_conn_error(c, id, GM_ENOMEM, "no memory for the reply");
		return;
	}
	gm_proto_put_hdr(p, GM_MSG_CTRL_REPLY, id, 0, n);
	memcpy(p + GM_HDR_SIZE, json, n);
	gm_conn_push_heap(c, p, GM_HDR_SIZE + n);
}

void gm_reply_refusal(gm_conn *c, uint64_t id, int code, const char *text)
{
	cJSON *o = cJSON_CreateObject();
	char *doc = NULL;

	/* cJSON escapes the text: it may quote what the client sent. */
	if (o != NULL && cJSON_AddFalseToObject(o, "ok") != NULL &&
	    cJSON_AddNumberToObject(o, "code", code) != NULL &&
	    cJSON_AddStringToObject(o, "error", gm_errname(code)) != NULL &&
	    cJSON_AddStringToObject(o, "message", text) != NULL)
		doc = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (doc == NULL) {
		gm_conn_error(c, id, GM_ENOMEM, "no memory for the reply");
		return;
	}
	gm_reply_json(c, id, doc);
	cJSON_free(doc);
}
