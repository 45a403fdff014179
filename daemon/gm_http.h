/*
 * gm_http.h - the daemon's HTTP endpoints, on metrics_listen:
 *
 *   /metrics  the stats in Prometheus's text format (gm_metrics.h)
 *   /healthz  200 "ok" whenever the loop answers: the process is alive
 *   /readyz   200 "ready" while gemmd takes work, else 503 and why
 *
 * A small HTTP/1.1 server on libuv's TCP, on the loop thread, bounded
 * like the rest of the daemon: at most http_max_connections at once (one
 * more is sent a 503 and closed as it is accepted, and counted); a
 * request's line and headers must arrive within http_header_timeout_ms
 * and fit in http_max_header_bytes (else 431 and closed); an answer the
 * client does not take within http_header_timeout_ms closes the
 * connection, as does a keep-alive connection idle for
 * http_idle_timeout_ms. GET and HEAD only, no request bodies (one that
 * announces a body is answered, then closed). Every close by the daemon
 * is counted by reason in gm_stats_http. The limits are read from the
 * configuration where they are used, so a reload applies them.
 *
 * On the loop thread a hung loop fails /healthz, which is what a
 * liveness probe should see; and the loop's other work must not wait
 * for a storm of scrapes, so each turn of the loop accepts and answers
 * a bounded number of connections, the rest waiting for the next turn,
 * and a /metrics body is rendered at most once per metrics_cache_ms,
 * shared by every scrape in that time: a thousand concurrent scrapes
 * cost one render.
 */
#ifndef GM_HTTP_H
#define GM_HTTP_H

#include <stddef.h>
#include <uv.h>

#include "gm_config.h"
#include "gm_http_ops.h"
#include "gm_stats.h"

typedef struct gm_http gm_http;

/*
 * Serves the endpoints on cfg->metrics_listen, "HOST:PORT" (e.g.
 * "127.0.0.1:9464", "[::1]:9464"), on loop, calling ops with arg and
 * counting into n. Binds before it returns, and logs a warning when the
 * address is not a loopback one (the endpoints have no authentication).
 * On failure (bad address, port in use) returns GM_ECONFIG or GM_ENOMEM
 * with a message naming the address, and nothing is left open. ops,
 * cfg and n must outlive h. Loop thread.
 */
int gm_http_open(uv_loop_t *loop, const gm_config *cfg, const gm_http_ops *ops,
		 void *arg, gm_stats_http *n, gm_http **out, char *msg,
		 size_t msglen);

/* Stops listening and closes every connection, answered or not; h is
 * freed once the loop has closed its handles. The ops are not called
 * after this returns. Loop thread; the loop must run afterwards. */
void gm_http_close(gm_http *h);

#endif
