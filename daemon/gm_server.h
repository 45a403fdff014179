/*
 * gm_server.h - the nng side of gemmd: one rep0 socket, its listeners,
 * and a fixed pool of contexts, each a small state machine (RECV, WAIT,
 * SEND) after nng's demo/async server.
 *
 * nng completes receives on its own threads; those callbacks only push
 * the context onto a locked hand-off list and wake the libuv loop
 * (uv_async_send coalesces, so the loop drains the whole list). The
 * request handler and gm_server_reply run on the loop thread. A context
 * takes no new request until its reply is handed over, so at most
 * `contexts` requests are in the daemon at once; beyond that nng holds
 * them in the transport.
 */
#ifndef GM_SERVER_H
#define GM_SERVER_H

#include <nng/nng.h>
#include <stdint.h>
#include <uv.h>

#include "gm_config.h"

typedef struct gm_server gm_server;
typedef struct gm_work gm_work;

/* A request arrived on context w. The handler owns msg and must call
 * gm_server_reply(w, ...) exactly once, now or later. Loop thread. */
typedef void (*gm_server_req_fn)(gm_work *w, nng_msg *msg, void *arg);

/*
 * Opens the socket, sets the receive size limit, starts a listener on
 * every configured URL (ipc:// sockets get mode 0660 in a directory
 * created 0750; tls+tcp:// needs tls_cert, tls_key and tls_ca and
 * requires client certificates) and posts a receive on every context.
 * On failure nothing is left open and msg names the URL or file.
 */
int gm_server_open(uv_loop_t *loop, const gm_config *cfg, gm_server_req_fn fn,
		   void *arg, gm_server **out, char *msg, size_t msglen);

/* Sends reply (ownership passes) on w and re-arms w. Loop thread. */
void gm_server_reply(gm_work *w, nng_msg *reply);

/* Replies handed over but not yet sent. Any thread. */
unsigned gm_server_sending(gm_server *s);

/* Closes the socket (pending sends are abandoned) and frees everything.
 * Loop thread; the loop must run afterwards for the async handle to
 * close. */
void gm_server_close(gm_server *s);

#endif
