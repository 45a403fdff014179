/*
 * gm_http_reply.h - the HTTP endpoints' answers, for the server
 * (gm_http.c), which reads the requests and writes what this decides:
 * which answer a request gets (the routes), the /metrics body rendered
 * at most once per metrics_cache_ms and shared by the answers that send
 * it, and an answer's status line and headers. Calls nothing of the
 * server. Loop thread only.
 */
#ifndef GM_HTTP_REPLY_H
#define GM_HTTP_REPLY_H

#include <stddef.h>

#include "gm_config.h"
#include "gm_http_ops.h"
#include "gm_stats.h"

/* A rendered /metrics body, shared by the answers that send it. */
typedef struct gm_http_body {
	unsigned refs; /* the cache's, and each write's */
	size_t len;
	double made_us;
	char *text;
} gm_http_body;

/* What the answers need: the server's configuration, the daemon's ops
 * (called with arg), the stats, and the cached /metrics body. */
typedef struct gm_http_routes {
	const gm_config *cfg;
	const gm_http_ops *ops;
	void *arg;
	gm_stats_http *n;
	gm_http_body *cache;
} gm_http_routes;

/* An answer, as gm_http_answer decides it and the server writes it. */
typedef struct gm_http_ans {
	int status;
	const char *type;
	const char *text;   /* the short body, when body is NULL */
	gm_http_body *body; /* the shared /metrics body: a reference */
	int head_only;	    /* HEAD: the headers alone */
	int keep; /* serve another request after it, else linger and close */
	char made[160]; /* text, where it is made for this answer */
} gm_http_ans;

/* The answer to the request head req[0..len), counted in its stats. */
void gm_http_answer(gm_http_routes *r, const char *req, size_t len,
		    gm_http_ans *a);

/* a's status line and headers into head (and the short text too unless
 * it has a body or is HEAD); their length, or -1 where they do not fit
 * in len. */
int gm_http_ans_head(const gm_http_ans *a, char *head, size_t len);

/* Drops a reference to b (NULL: nothing). */
void gm_http_body_release(gm_http_body *b);

/* Drops r's cached /metrics body. */
void gm_http_routes_drop(gm_http_routes *r);

#endif
