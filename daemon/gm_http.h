/*
 * gm_http.h - the daemon's HTTP endpoints, on nng's HTTP server:
 *
 *   /metrics  the stats in Prometheus's text format (gm_metrics.h)
 *   /healthz  200 "ok" whenever the loop answers: the process is alive
 *   /readyz   200 "ready" while gemmd takes work, else 503 and why
 *
 * nng runs the handlers on its own threads, but the stats belong to the
 * loop thread. So a handler only parks its request in an inbox
 * (gm_inbox.h), the way nng's receives reach the server; the loop
 * answers every parked request with the callbacks below, then completes
 * it. A hung loop therefore fails /healthz too,
 * which is what a liveness probe should see. GET (and HEAD) only.
 */
#ifndef GM_HTTP_H
#define GM_HTTP_H

#include <stddef.h>
#include <uv.h>

typedef struct gm_http gm_http;

/* What the endpoints need from the daemon; called on the loop thread. */
typedef struct gm_http_ops {
	/* The /metrics body: malloc'd text, or NULL when out of memory. */
	char *(*metrics)(void *arg);
	/* Non-zero when gemmd takes work; else *why says why not. */
	int (*ready)(void *arg, const char **why);
} gm_http_ops;

/*
 * Serves the endpoints on addr, "HOST:PORT" (e.g. "127.0.0.1:9464"), on
 * loop, calling ops with arg. Binds
 * before it returns: on failure (bad address, port in use) returns
 * GM_ECONFIG or GM_ENOMEM with a message naming the address, and
 * nothing is left open. Loop thread.
 */
int gm_http_open(uv_loop_t *loop, const char *addr, const gm_http_ops *ops,
		 void *arg, gm_http **out, char *msg, size_t msglen);

/* Stops listening, drops connections, answers requests still parked
 * with an error and frees h. The ops are not called after this returns.
 * Loop thread; the loop must run afterwards for the inbox to close. */
void gm_http_close(gm_http *h);

#endif
