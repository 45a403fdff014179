/*
 * gm_reply.h - control replies on their way out: a CTRL_REPLY with a
 * JSON document, or one saying why a control request failed. Refusals
 * of whole requests are ERROR frames (gm_conn_error). Loop thread.
 */
#ifndef GM_REPLY_H
#define GM_REPLY_H

#include <stdint.h>

#include "gm_conn.h"

/* Answers request id on c with a CTRL_REPLY carrying json (copied);
 * an ERROR ENOMEM when there is no memory for it. */
void gm_reply_json(gm_conn *c, uint64_t id, const char *json);

/* Answers control request id on c with {"ok":false,...}: code, its name
 * and text, UTF-8, escaped here; an ERROR ENOMEM when there is no memory
 * for it. */
void gm_reply_refusal(gm_conn *c, uint64_t id, int code, const char *text);

#endif
