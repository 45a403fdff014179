/*
 * gm_reply.c - control replies on their way out; see gm_reply.h.
 */
#include "gm_reply.h"

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
	char doc[256];

	snprintf(
	    doc, sizeof(doc),
	    "{\"ok\":false,\"code\":%d,\"error\":\"%s\",\"message\":\"%s\"}",
	    code, gm_errname(code), text);
	gm_reply_json(c, id, doc);
}
