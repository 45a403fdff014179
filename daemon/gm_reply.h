/*
 * gm_reply.h - what the daemon sends back on a server context: a
 * refusal, a control reply, a finished reply. Each is counted in the
 * stats (bytes out; refusals by code). Loop thread.
 */
#ifndef GM_REPLY_H
#define GM_REPLY_H

#include <nng/nng.h>
#include <stdint.h>

#include "gm_loop.h"

/* Sends reply (ownership passes) on w. */
void gm_reply_send(gm_loop *l, gm_work *w, nng_msg *reply);

/* Refuses request id on w with an ERROR message of code and text,
 * counted as a refused request. Without memory for it the request is
 * dropped (the client's timeout tells). */
void gm_reply_error(gm_loop *l, gm_work *w, uint64_t id, int code,
		    const char *text);

/* Answers request id on w with a CTRL_REPLY carrying json (copied). */
void gm_reply_json(gm_loop *l, gm_work *w, uint64_t id, const char *json);

/* Answers control request id on w with {"ok":false,...}: code, its name
 * and text (JSON-escaped already, if it needs it). */
void gm_reply_refusal(gm_loop *l, gm_work *w, uint64_t id, int code,
		      const char *text);

#endif
