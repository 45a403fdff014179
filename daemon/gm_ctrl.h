/*
 * gm_ctrl.h - control requests, on the loop thread: ping and stats, the
 * status, wait and cancel of a detached job (its owner's alone), drain
 * and resume (an admin's alone), each answered with a small JSON
 * document; and the same live view of the daemon for the HTTP
 * endpoints. Bodies are read strictly (gm_ctrlreq.h), in the order
 * PROTOCOL.md 7.3 gives.
 */
#ifndef GM_CTRL_H
#define GM_CTRL_H

#include <stdint.h>

#include "gm_conn.h"
#include "gm_http.h"
#include "gm_loop.h"

/* The HTTP endpoints' view of the daemon (gm_http.h); arg the gm_loop. */
extern const gm_http_ops gm_ctrl_http_ops;

/* A control request (header h, JSON body of h->length bytes, at most
 * max_ctrl_bytes) on c: answers it, a wait perhaps later (it then holds
 * c, and counts as one of its requests in flight). */
void gm_ctrl_handle(gm_loop *l, gm_conn *c, const gm_hdr *h,
		    const uint8_t *body);

/* gm_detach's callback (arg the gm_loop): a parked wait's answer on its
 * connection w, the result frame (taken) or a refusal. */
void gm_ctrl_answer_wait(void *w, uint64_t id, uint8_t *result, uint64_t len,
			 int code, const char *text, void *arg);

#endif
