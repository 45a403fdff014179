/*
 * gm_http.c - the HTTP endpoints' server on libuv's TCP, on the loop
 * thread: accepting and the connection cap, reading requests, the
 * loop's turns, writing the answers gm_http_reply.c decides and what
 * comes after one: the next request of a keep-alive connection, or,
 * after a last answer, a shutdown of the sending side and a moment in
 * which what the client still sends is read and dropped before the
 * close (closing a socket with unread bytes resets it, and the reset can
 * destroy the answer, a 400 or a 431, before the client reads it); the
 * deadlines. See gm_http.h and gm_http_impl.h.
 *
 * One timer sweeps the deadlines while any connection is open; one idle
 * handle runs the turns while anything waits for one, which also keeps
 * the loop from sleeping in between.
 */
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_http.h"

#include "gm_clock.h"
#include "gm_error.h"
#include "gm_http_impl.h"
#include "gm_http_reply.h"
#include "gm_http_req.h"
#include "gm_log.h"

/* Per turn of the loop: connections accepted, requests answered. With
 * a cached /metrics body an answer is one writev, so a turn spends a
 * millisecond or so on HTTP, and what else the loop has to do (a ping,
 * a finished job) waits no longer than that behind a storm of scrapes. */
#define ACCEPT_BUDGET 64
#define ANSWER_BUDGET 32
/* Connections the kernel completes before gemmd accepts them (it caps
 * this at net.core.somaxconn): a storm of them must not overflow it
 * while the loop takes its turns, or the overflow waits a second for a
 * retransmitted SYN-ACK. Beyond http_max_connections they are closed
 * as they are accepted. */
#define BACKLOG 4096
/* A refusal, or a failed accept, is logged at most once this often. */
#define LOG_EVERY_US 1e6

static const char refusal[] = "HTTP/1.1 503 Service Unavailable\r\n"
			      "Content-Type: text/plain\r\n"
			      "Content-Length: 21\r\n"
			      "Connection: close\r\n\r\n"
			      "too many connections\n";

static void handle_closed(gm_http *h)
{
	if (--h->handles == 0 && h->closing)
		free(h);
}

static void on_own_closed(uv_handle_t *hd)
{
	handle_closed(hd->data);
}

static void on_conn_closed(uv_handle_t *hd)
{
	gm_http_conn *c = hd->data;
	gm_http *h = c->h;

	free(c->buf);
	free(c);
	handle_closed(h);
}

static void unqueue(gm_http *h, gm_http_conn *c)
{
	gm_http_conn **p = &h->queue_head;

	while (*p != NULL && *p != c)
		p = &(*p)->queue_next;
	if (*p == NULL)
		return;
	*p = c->queue_next;
	if (h->queue_tail == c) {
		h->queue_tail = NULL;
		for (gm_http_conn *q = h->queue_head; q != NULL;
		     q = q->queue_next)
			h->queue_tail = q;
	}
}

static void conn_close(gm_http_conn *c)
{
	gm_http *h = c->h;

	if (uv_is_closing((uv_handle_t *)&c->tcp))
		return;
	if (c->served) {
		if (c->state == GM_HTTP_QUEUED)
			unqueue(h, c);
		*(c->prev != NULL ? &c->prev->next : &h->conns) = c->next;
		if (c->next != NULL)
			c->next->prev = c->prev;
		h->n->open--;
	}
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void conn_state(gm_http_conn *c, enum gm_http_state s)
{
	c->state = s;
	c->since_us = gm_clock_now_us();
}

/* ---- deadlines ---- */

/* How long a connection may stay in its state; 0: no deadline. */
static double limit_us(const gm_http *h, enum gm_http_state s)
{
	switch (s) {
	case GM_HTTP_READING:
	case GM_HTTP_WRITING:
		return h->cfg->http_header_ms * 1e3;
	case GM_HTTP_IDLE:
		return h->cfg->http_idle_ms * 1e3;
	case GM_HTTP_LINGERING:
		return GM_HTTP_LINGER_US;
	default:
		return 0;
	}
}

/* Why a deadline closes a connection in each state; -1: it is not
 * counted (a lingering one was answered in full). */
static const int reason_of_state[] = {
    [GM_HTTP_READING] = GM_HTTP_CLOSED_HEADER_TIMEOUT,
    [GM_HTTP_QUEUED] = -1,
    [GM_HTTP_WRITING] = GM_HTTP_CLOSED_SEND_TIMEOUT,
    [GM_HTTP_IDLE] = GM_HTTP_CLOSED_IDLE_TIMEOUT,
    [GM_HTTP_LINGERING] = -1,
};

static void on_sweep(uv_timer_t *t);

/* Runs the sweep while connections are open, a quarter of the shortest
 * deadline apart (5..250 ms), read again each time for a reload. */
static void arm_sweep(gm_http *h)
{
	unsigned least = h->cfg->http_header_ms < h->cfg->http_idle_ms
			     ? h->cfg->http_header_ms
			     : h->cfg->http_idle_ms;
	unsigned ms = least / 4 < 5 ? 5 : least / 4 > 250 ? 250 : least / 4;

	if (h->conns == NULL)
		uv_timer_stop(&h->sweep);
	else if (!uv_is_active((uv_handle_t *)&h->sweep))
		uv_timer_start(&h->sweep, on_sweep, ms, 0);
}

static void on_sweep(uv_timer_t *t)
{
	gm_http *h = t->data;
	double now = gm_clock_now_us(), lim;
	gm_http_conn *c, *next;

	for (c = h->conns; c != NULL; c = next) {
		next = c->next;
		lim = limit_us(h, c->state);
		if (lim > 0 && now - c->since_us > lim) {
			if (reason_of_state[c->state] >= 0)
				h->n->closed_by[reason_of_state[c->state]]++;
			conn_close(c);
		}
	}
	arm_sweep(h);
}

/* ---- turns ---- */

static void on_pump(uv_idle_t *p);
static void write_answer(gm_http_conn *c, const gm_http_ans *a);

static const gm_http_ans too_large = {
    .status = 431, .type = "text/plain", .text = "request head too large\n"};

static void start_pump(gm_http *h)
{
	if (!uv_is_active((uv_handle_t *)&h->pump))
		uv_idle_start(&h->pump, on_pump);
}

/* A complete head queues the request for its turn; a buffer full
 * without one is answered 431 and closed. */
static void take(gm_http_conn *c)
{
	gm_http *h = c->h;
	size_t end = gm_http_req_end(c->buf, c->len, c->searched);

	if (end == 0) {
		c->searched = c->len;
		if (c->len == c->cap) {
			h->n->closed_by[GM_HTTP_CLOSED_TOO_LARGE]++;
			write_answer(c, &too_large);
		}
		return;
	}
	c->head_len = end;
	uv_read_stop((uv_stream_t *)&c->tcp);
	conn_state(c, GM_HTTP_QUEUED);
	c->queue_next = NULL;
	*(h->queue_tail != NULL ? &h->queue_tail->queue_next : &h->queue_head) =
	    c;
	h->queue_tail = c;
	start_pump(h);
}

/* The buffer is made at the first byte, at the size the configuration
 * says then; a head must fit in it. */
static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b)
{
	gm_http_conn *c = hd->data;

	(void)suggested;
	if (c->buf == NULL) {
		c->cap = c->h->cfg->http_header_bytes;
		c->buf = malloc(c->cap);
	}
	*b = c->buf != NULL
		 ? uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len))
		 : uv_buf_init(NULL, 0);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	gm_http_conn *c = s->data;

	(void)b;
	if (nread < 0) { /* the client closed, or no memory for a buffer */
		conn_close(c);
		return;
	}
	if (nread == 0)
		return;
	if (c->state == GM_HTTP_LINGERING) {
		c->len = 0;
		return;
	}
	if (c->state == GM_HTTP_IDLE)
		conn_state(c, GM_HTTP_READING);
	c->len += (size_t)nread;
	take(c);
}

static int conn_read(gm_http_conn *c)
{
	return uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- answers ---- */

static void on_shut(uv_shutdown_t *sd, int status)
{
	if (status < 0)
		conn_close(sd->handle->data);
}

/* After a last answer: no more to send, and what comes is dropped until
 * the client closes or GM_HTTP_LINGER_US passes. */
static void linger(gm_http_conn *c)
{
	c->len = c->head_len = c->searched = 0;
	conn_state(c, GM_HTTP_LINGERING);
	if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shut) != 0 ||
	    conn_read(c) != 0)
		conn_close(c);
}

static void on_written(uv_write_t *w, int status)
{
	gm_http_conn *c = w->handle->data;

	gm_http_body_release(c->body);
	c->body = NULL;
	if (status < 0 || c->h->closing) {
		conn_close(c);
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
	conn_state(c, c->len > 0 ? GM_HTTP_READING : GM_HTTP_IDLE);
	if (conn_read(c) != 0)
		conn_close(c);
	else if (c->len > 0)
		take(c);
}

/* Writes a, whose body reference c takes: its head (which holds a short
 * text too) and the shared body unless it is HEAD. */
static void write_answer(gm_http_conn *c, const gm_http_ans *a)
{
	gm_http_body *b = a->body;
	uv_buf_t bufs[2];
	int n;

	if ((n = gm_http_ans_head(a, c->head, sizeof(c->head))) < 0) {
		gm_http_body_release(b);
		conn_close(c);
		return;
	}
	bufs[0] = uv_buf_init(c->head, (unsigned)n);
	bufs[1] = uv_buf_init(b != NULL ? b->text : NULL,
			      b != NULL ? (unsigned)b->len : 0);
	c->body = b;
	c->keep = a->keep;
	uv_read_stop((uv_stream_t *)&c->tcp);
	conn_state(c, GM_HTTP_WRITING);
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs,
		     b != NULL && !a->head_only ? 2 : 1, on_written) != 0) {
		gm_http_body_release(b);
		c->body = NULL;
		conn_close(c);
	}
}

static void refuse(gm_http_conn *c)
{
	gm_http *h = c->h;
	uv_buf_t b = uv_buf_init((char *)refusal, sizeof(refusal) - 1);
	double now = gm_clock_now_us();

	h->n->refused++;
	if (now - h->refusal_logged >= LOG_EVERY_US) {
		h->refusal_logged = now;
		GM_LOG(GM_LOG_WARN,
		       "metrics_listen: refusing HTTP connections: "
		       "http_max_connections=%u are open",
		       h->cfg->http_max_conns);
	}
	/* Best effort: a fresh socket's buffer takes it whole. */
	uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
	conn_close(c);
}

static void accept_one(gm_http *h)
{
	gm_http_conn *c = calloc(1, sizeof(*c));

	h->accepts++;
	if (c == NULL) { /* left with libuv, for the next turn */
		h->accept_waiting = 1;
		start_pump(h);
		return;
	}
	uv_tcp_init(h->loop, &c->tcp);
	c->tcp.data = c;
	c->h = h;
	h->handles++;
	if (uv_accept((uv_stream_t *)&h->server, (uv_stream_t *)&c->tcp) != 0) {
		conn_close(c);
		return;
	}
	h->n->accepted++;
	if (h->n->open >= h->cfg->http_max_conns) {
		refuse(c);
		return;
	}
	c->served = 1;
	h->n->open++;
	c->next = h->conns;
	if (h->conns != NULL)
		h->conns->prev = c;
	h->conns = c;
	uv_tcp_nodelay(&c->tcp, 1);
	conn_state(c, GM_HTTP_READING);
	if (conn_read(c) != 0)
		conn_close(c);
	arm_sweep(h);
}

static void on_connection(uv_stream_t *srv, int status)
{
	gm_http *h = srv->data;
	double now;

	if (status < 0) { /* out of descriptors: libuv sheds the connection */
		if ((now = gm_clock_now_us()) - h->accept_err_logged >=
		    LOG_EVERY_US) {
			h->accept_err_logged = now;
			GM_LOG(GM_LOG_WARN, "metrics_listen: accept: %s",
			       uv_strerror(status));
		}
		return;
	}
	/* Not accepted now, libuv keeps it and stops listening until the
	 * next turn accepts it. */
	if (h->accepts >= ACCEPT_BUDGET) {
		h->accept_waiting = 1;
		start_pump(h);
		return;
	}
	accept_one(h);
}

static void on_pump(uv_idle_t *p)
{
	gm_http *h = p->data;
	gm_http_conn *c;
	gm_http_ans a;

	h->accepts = 0;
	if (h->accept_waiting) {
		h->accept_waiting = 0;
		accept_one(h);
	}
	for (int i = 0; i < ANSWER_BUDGET && (c = h->queue_head) != NULL; i++) {
		if ((h->queue_head = c->queue_next) == NULL)
			h->queue_tail = NULL;
		gm_http_answer(&h->routes, c->buf, c->head_len, &a);
		write_answer(c, &a);
	}
	if (h->queue_head == NULL && !h->accept_waiting)
		uv_idle_stop(p);
}

/* ---- open and close ---- */

/* "HOST:PORT" or "[V6]:PORT" into host and port. */
static int split_addr(const char *addr, char *host, size_t hostlen, char *port,
		      size_t portlen)
{
	const char *colon, *h = addr, *end;

	if (addr[0] == '[') {
		h = addr + 1;
		if ((end = strchr(h, ']')) == NULL || end[1] != ':')
			return -1;
		colon = end + 1;
	} else if ((colon = strrchr(addr, ':')) == NULL)
		return -1;
	else
		end = colon;
	if (end == h || (size_t)(end - h) >= hostlen ||
	    strlen(colon + 1) >= portlen || colon[1] == '\0')
		return -1;
	snprintf(host, hostlen, "%.*s", (int)(end - h), h);
	snprintf(port, portlen, "%s", colon + 1);
	return 0;
}

static int is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const void *)sa;
	const uint8_t *a6 = s6->sin6_addr.s6_addr;

	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)
				  ->sin_addr.s_addr) >>
			24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
	       (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && a6[12] == 127);
}

/* Binds and listens on the first address addr resolves to. */
static int listen_on(gm_http *h, const char *addr, char *msg, size_t len)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char host[256], port[8];
	int rv;

	if (split_addr(addr, host, sizeof(host), port, sizeof(port)) != 0) {
		snprintf(msg, len,
			 "metrics_listen \"%.200s\": want HOST:PORT, e.g. "
			 "127.0.0.1:9464",
			 addr);
		return GM_ECONFIG;
	}
	if ((rv = getaddrinfo(host, port, &hints, &ai)) != 0) {
		snprintf(msg, len, "metrics_listen \"%.200s\": %s", addr,
			 gai_strerror(rv));
		return GM_ECONFIG;
	}
	if ((rv = uv_tcp_bind(&h->server, ai->ai_addr, 0)) == 0)
		rv = uv_listen((uv_stream_t *)&h->server, BACKLOG,
			       on_connection);
	if (rv == 0 && !is_loopback(ai->ai_addr))
		GM_LOG(GM_LOG_WARN,
		       "metrics_listen %s is not a loopback address: "
		       "/metrics, /healthz and /readyz answer whoever can "
		       "reach it, with no authentication; keep it on "
		       "127.0.0.1 unless a firewall guards it",
		       addr);
	freeaddrinfo(ai);
	if (rv == 0)
		return GM_OK;
	snprintf(msg, len, "metrics_listen \"%.200s\": %s", addr,
		 uv_strerror(rv));
	return GM_ECONFIG;
}

/* Initializes one of h's own handles, counted so that h outlives it. */
static void own(gm_http *h, uv_handle_t *hd)
{
	hd->data = h;
	h->handles++;
}

int gm_http_open(uv_loop_t *loop, const gm_config *cfg, const gm_http_ops *ops,
		 void *arg, gm_stats_http *n, gm_http **out, char *msg,
		 size_t msglen)
{
	gm_http *h = calloc(1, sizeof(*h));
	int rv;

	if (h == NULL) {
		snprintf(msg, msglen, "metrics_listen: out of memory");
		return GM_ENOMEM;
	}
	*h = (gm_http){.loop = loop,
		       .cfg = cfg,
		       .n = n,
		       .routes = {.cfg = cfg, .ops = ops, .arg = arg, .n = n}};
	uv_tcp_init(loop, &h->server);
	own(h, (uv_handle_t *)&h->server);
	uv_timer_init(loop, &h->sweep);
	own(h, (uv_handle_t *)&h->sweep);
	uv_idle_init(loop, &h->pump);
	own(h, (uv_handle_t *)&h->pump);
	if ((rv = listen_on(h, cfg->metrics_listen, msg, msglen)) != GM_OK) {
		gm_http_close(h);
		return rv;
	}
	*out = h;
	return GM_OK;
}

void gm_http_close(gm_http *h)
{
	h->closing = 1;
	h->queue_head = h->queue_tail = NULL;
	while (h->conns != NULL)
		conn_close(h->conns);
	gm_http_routes_drop(&h->routes);
	uv_close((uv_handle_t *)&h->server, on_own_closed);
	uv_close((uv_handle_t *)&h->sweep, on_own_closed);
	uv_close((uv_handle_t *)&h->pump, on_own_closed);
}
