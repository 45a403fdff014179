/*
 * gm_http_reply.c - the HTTP endpoints' answers: each route, the /metrics
 * render shared for metrics_cache_ms, writing an answer, and what comes
 * after it: the next request of a keep-alive connection, or, after a
 * last answer, a shutdown of the sending side and a moment in which what
 * the client still sends is read and dropped before the close (closing
 * a socket with unread bytes resets it, and the reset can destroy the
 * answer, a 400 or a 431, before the client reads it). See
 * gm_http_impl.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_clock.h"
#include "gm_http.h"
#include "gm_http_impl.h"
#include "gm_http_req.h"
#include "gm_metrics.h"

void gm_http_body_release(gm_http_body *b)
{
	if (b != NULL && --b->refs == 0) {
		free(b->text);
		free(b);
	}
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

static void on_shut(uv_shutdown_t *sd, int status)
{
	if (status < 0)
		gm_http_conn_close(sd->handle->data);
}

/* After a last answer: no more to send, and what comes is dropped until
 * the client closes or GM_HTTP_LINGER_US passes. */
static void linger(gm_http_conn *c)
{
	c->len = c->head_len = c->searched = 0;
	gm_http_conn_state(c, GM_HTTP_LINGERING);
	if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shut) != 0 ||
	    gm_http_conn_read(c) != 0)
		gm_http_conn_close(c);
}

static void on_written(uv_write_t *w, int status)
{
	gm_http_conn *c = w->handle->data;

	gm_http_body_release(c->body);
	c->body = NULL;
	if (status < 0 || c->h->closing) {
		gm_http_conn_close(c);
		return;
	}
	if (!c->keep) {
		linger(c);
		return;
	}
	/* What the client sent after this request (pipelining) is next. */
	c->len -= c->head_len;
	memmove(c->buf, c->buf + c->head_len, c->len);
	c->head_len = c->searched = 0;
	gm_http_conn_state(c, c->len > 0 ? GM_HTTP_READING : GM_HTTP_IDLE);
	if (gm_http_conn_read(c) != 0)
		gm_http_conn_close(c);
	else if (c->len > 0)
		gm_http_conn_take(c);
}

/* Writes an answer: status, type, and either the shared body b or the
 * short text (which c->head holds too). HEAD sends the headers alone. */
void gm_http_reply(gm_http_conn *c, int status, const char *type,
		   const char *text, gm_http_body *b, int head_only, int keep)
{
	size_t len = b != NULL ? b->len : strlen(text);
	uv_buf_t bufs[2];
	int n;

	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
		     "Content-Length: %zu\r\n%sConnection: %s\r\n\r\n%s",
		     status, status_text(status), type, len,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "",
		     keep ? "keep-alive" : "close",
		     b != NULL || head_only ? "" : text);
	if (n < 0 || (size_t)n >= sizeof(c->head)) {
		gm_http_body_release(b);
		gm_http_conn_close(c);
		return;
	}
	bufs[0] = uv_buf_init(c->head, (unsigned)n);
	bufs[1] = uv_buf_init(b != NULL ? b->text : NULL, (unsigned)len);
	c->body = b;
	c->keep = keep;
	uv_read_stop((uv_stream_t *)&c->tcp);
	gm_http_conn_state(c, GM_HTTP_WRITING);
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs,
		     b != NULL && !head_only ? 2 : 1, on_written) != 0) {
		gm_http_body_release(b);
		c->body = NULL;
		gm_http_conn_close(c);
	}
}

/* The /metrics body: the cached one while younger than metrics_cache_ms,
 * else a new render (which becomes the cached one). NULL without
 * memory. */
static gm_http_body *metrics_body(gm_http *h)
{
	double now = gm_clock_now_us();
	gm_http_body *b = h->cache;

	if (b != NULL && now - b->made_us < h->cfg->metrics_cache_ms * 1e3) {
		b->refs++;
		return b;
	}
	gm_http_body_release(h->cache);
	h->cache = NULL;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	h->n->renders++;
	if ((b->text = h->ops->metrics(h->arg)) == NULL) {
		free(b);
		return NULL;
	}
	b->len = strlen(b->text);
	b->made_us = now;
	b->refs = 2;
	h->cache = b;
	return b;
}

void gm_http_answer(gm_http_conn *c)
{
	gm_http *h = c->h;
	const char *why = "not ready";
	char text[160];
	gm_http_req r;
	int head, keep;
	gm_http_body *b;

	h->n->requests++;
	if (gm_http_req_parse(c->buf, c->head_len, &r) != 0) {
		h->n->closed_by[GM_HTTP_CLOSED_MALFORMED]++;
		gm_http_reply(c, 400, "text/plain", "bad request\n", NULL, 0,
			      0);
		return;
	}
	/* A body is never read: the connection ends with this answer. */
	keep = r.keep_alive && !r.has_body;
	head = r.method == GM_HTTP_HEAD;
	if (r.method == GM_HTTP_OTHER)
		gm_http_reply(c, 405, "text/plain", "GET or HEAD only\n", NULL,
			      0, keep);
	else if (gm_http_req_is(&r, "/metrics")) {
		if ((b = metrics_body(h)) != NULL)
			gm_http_reply(c, 200, GM_METRICS_CONTENT_TYPE, NULL, b,
				      head, keep);
		else
			gm_http_reply(c, 500, "text/plain", "out of memory\n",
				      NULL, head, keep);
	} else if (gm_http_req_is(&r, "/healthz"))
		gm_http_reply(c, 200, "text/plain", "ok\n", NULL, head, keep);
	else if (gm_http_req_is(&r, "/readyz")) {
		if (h->ops->ready(h->arg, &why))
			gm_http_reply(c, 200, "text/plain", "ready\n", NULL,
				      head, keep);
		else {
			snprintf(text, sizeof(text), "not ready: %s\n", why);
			gm_http_reply(c, 503, "text/plain", text, NULL, head,
				      keep);
		}
	} else
		gm_http_reply(c, 404, "text/plain", "not found\n", NULL, head,
			      keep);
}
