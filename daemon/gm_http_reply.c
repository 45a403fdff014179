/*
 * gm_http_reply.c - the HTTP endpoints' answers: which one each request
 * gets (the routes), the /metrics render shared for metrics_cache_ms,
 * and an answer's status line and headers. Writing it, and what comes
 * after, is gm_http.c's. See gm_http_reply.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_clock.h"
#include "gm_http_reply.h"
#include "gm_http_req.h"
#include "gm_metrics.h"

void gm_http_body_release(gm_http_body *b)
{
	if (b != NULL && --b->refs == 0) {
		free(b->text);
		free(b);
	}
}

void gm_http_routes_drop(gm_http_routes *r)
{
	gm_http_body_release(r->cache);
	r->cache = NULL;
}

static const char *status_text(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	default:
		return "Service Unavailable";
	}
}

int gm_http_ans_head(const gm_http_ans *a, char *head, size_t len)
{
	size_t body = a->body != NULL ? a->body->len : strlen(a->text);
	int n;

	n = snprintf(head, len,
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
		     "Content-Length: %zu\r\n%sConnection: %s\r\n\r\n%s",
		     a->status, status_text(a->status), a->type, body,
		     a->status == 405 ? "Allow: GET, HEAD\r\n" : "",
		     a->keep ? "keep-alive" : "close",
		     a->body != NULL || a->head_only ? "" : a->text);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

/* The /metrics body: the cached one while younger than metrics_cache_ms,
 * else a new render (which becomes the cached one). NULL without
 * memory. */
static gm_http_body *metrics_body(gm_http_routes *rt)
{
	double now = gm_clock_now_us();
	gm_http_body *b = rt->cache;

	if (b != NULL && now - b->made_us < rt->cfg->metrics_cache_ms * 1e3) {
		b->refs++;
		return b;
	}
	gm_http_body_release(rt->cache);
	rt->cache = NULL;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	rt->n->renders++;
	if ((b->text = rt->ops->metrics(rt->arg)) == NULL) {
		free(b);
		return NULL;
	}
	b->len = strlen(b->text);
	b->made_us = now;
	b->refs = 2;
	rt->cache = b;
	return b;
}

/* a is the short answer status, text. */
static void say(gm_http_ans *a, int status, const char *text)
{
	a->status = status;
	a->type = "text/plain";
	a->text = text;
}

void gm_http_answer(gm_http_routes *rt, const char *req, size_t len,
		    gm_http_ans *a)
{
	const char *why = "not ready";
	gm_http_req r;

	*a = (gm_http_ans){0};
	rt->n->requests++;
	if (gm_http_req_parse(req, len, &r) != 0) {
		rt->n->closed_by[GM_HTTP_CLOSED_MALFORMED]++;
		say(a, 400, "bad request\n");
		return;
	}
	/* A body is never read: the connection ends with this answer. */
	a->keep = r.keep_alive && !r.has_body;
	a->head_only = r.method == GM_HTTP_HEAD;
	if (r.method == GM_HTTP_OTHER) {
		a->head_only = 0;
		say(a, 405, "GET or HEAD only\n");
	} else if (gm_http_req_is(&r, "/metrics")) {
		if ((a->body = metrics_body(rt)) != NULL) {
			a->status = 200;
			a->type = GM_METRICS_CONTENT_TYPE;
		} else
			say(a, 500, "out of memory\n");
	} else if (gm_http_req_is(&r, "/healthz"))
		say(a, 200, "ok\n");
	else if (gm_http_req_is(&r, "/readyz")) {
		if (rt->ops->ready(rt->arg, &why))
			say(a, 200, "ready\n");
		else {
			snprintf(a->made, sizeof(a->made), "not ready: %s\n",
				 why);
			say(a, 503, a->made);
		}
	} else
		say(a, 404, "not found\n");
}
