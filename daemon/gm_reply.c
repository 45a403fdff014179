/*
 * gm_reply.c - refusals, control replies and finished replies on their
 * way out; see gm_reply.h.
 */
#include "gm_reply.h"

#include <stdio.h>
#include <string.h>

#include "gm_log.h"

void gm_reply_send(gm_loop *l, gm_work *w, nng_msg *reply)
{
	l->stats.bytes_out += nng_msg_len(reply);
	gm_server_reply(w, reply);
}

void gm_reply_error(gm_loop *l, gm_work *w, uint64_t id, int code,
		    const char *text)
{
	nng_msg *m;

	l->stats.requests_refused++;
	l->stats.errors[code]++;
	if (nng_msg_alloc(&m, GM_HDR_SIZE + GM_ERROR_SIZE) != 0) {
		GM_LOG(GM_LOG_ERROR, "request %llu: out of memory for reply",
		       (unsigned long long)id);
		gm_server_drop(w);
		return;
	}
	gm_proto_put_error(nng_msg_body(m), id, (uint32_t)code, text);
	GM_LOG(GM_LOG_DEBUG, "request %llu refused: %s: %s",
	       (unsigned long long)id, gm_errname(code), text);
	gm_reply_send(l, w, m);
}

void gm_reply_json(gm_loop *l, gm_work *w, uint64_t id, const char *json)
{
	size_t n = strlen(json);
	nng_msg *m;

	if (nng_msg_alloc(&m, GM_HDR_SIZE + n) != 0) {
		gm_reply_error(l, w, id, GM_ENOMEM, "no memory for the reply");
		return;
	}
	gm_proto_put_hdr(nng_msg_body(m), GM_MSG_CTRL_REPLY, id, (uint32_t)n);
	memcpy((uint8_t *)nng_msg_body(m) + GM_HDR_SIZE, json, n);
	gm_reply_send(l, w, m);
}

void gm_reply_refusal(gm_loop *l, gm_work *w, uint64_t id, int code,
		      const char *text)
{
	char doc[256];

	snprintf(
	    doc, sizeof(doc),
	    "{\"ok\":false,\"code\":%d,\"error\":\"%s\",\"message\":\"%s\"}",
	    code, gm_errname(code), text);
	gm_reply_json(l, w, id, doc);
}
