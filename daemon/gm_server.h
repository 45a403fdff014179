/*
 * gm_server.h - the nng side of gemmd: one rep0 socket, its listeners,
 * and a fixed pool of contexts, each a small state machine (RECV, WAIT,
 * SEND) after nng's demo/async server.
 *
 * nng completes receives on its own threads; those callbacks only post
 * the context to the loop (gm_inbox.h). The request handler and
 * gm_server_reply run on the loop thread. A context takes no new request
 * until its reply is handed over, so at most `contexts` requests are in
 * the daemon at once; beyond that nng holds them in the transport.
 *
 * Connections: an ipc:// peer is let in when allow_uids names its uid or
 * allow_gids its gid (both empty: everyone the socket's mode lets
 * connect), checked with its kernel credentials as the connection is
 * added, on an nng thread; a refused one is closed before it can send a
 * request. tcp:// and tls+tcp:// peers are not subject to the lists.
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
 * gm_server_reply(w, ...) exactly once, now or later (gm_server_drop
 * when there is no memory for a reply), or the context stays busy for
 * good. Loop thread. */
typedef void (*gm_server_req_fn)(gm_work *w, nng_msg *msg, void *arg);

/*
 * Opens the socket, sets the receive size limit, hooks the allow-lists
 * on, starts a listener on every configured URL (ipc:// sockets get mode
 * 0660 in a directory created 0750; tls+tcp:// needs tls_cert, tls_key
 * and tls_ca and requires client certificates; plain tcp:// off the
 * loopback is logged as a warning) and posts a receive on every context.
 * On failure nothing is left open and msg names the URL or file. cfg
 * must outlive the server: its allow-lists are read on nng threads.
 */
int gm_server_open(uv_loop_t *loop, const gm_config *cfg, gm_server_req_fn fn,
		   void *arg, gm_server **out, char *msg, size_t msglen);

/* Sends reply (ownership passes) on w and re-arms w. Loop thread. */
void gm_server_reply(gm_work *w, nng_msg *reply);

/* Abandons w's request without a reply (there is no memory for one; the
 * client's timeout tells it) and re-arms w. Loop thread. */
void gm_server_drop(gm_work *w);

/* Replies handed over but not yet passed to their connection. nng
 * completes a reply's send once the connection has it queued, not once
 * it is written: a reply can still be on its way when this is 0. Any
 * thread. */
unsigned gm_server_sending(gm_server *s);

/* Non-zero once every reply handed over has had time to be written: nng
 * counts a reply sent when it is queued on its connection, so closing the
 * socket right after the last one would cut a large reply off. The
 * estimate assumes a rate well under what the transports reach; with no
 * connection left there is nothing to wait for. Loop thread. */
int gm_server_flushed(gm_server *s);

/* What the stats document shows of the server. */
typedef struct gm_server_count {
	unsigned contexts; /* the pool's size */
	unsigned busy;	   /* contexts holding a request or its reply */
	uint64_t open;	   /* connections now */
	uint64_t refused;  /* connections closed by the allow-lists */
} gm_server_count;

/* Reads the counters, each atomically (not all at one instant). Any
 * thread. */
void gm_server_counts(gm_server *s, gm_server_count *out);

/* Closes the socket (pending sends are abandoned) and frees everything.
 * Loop thread; the loop must run afterwards for the inbox's handle to
 * close. */
void gm_server_close(gm_server *s);

#endif
