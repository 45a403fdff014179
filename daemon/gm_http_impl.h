/*
 * gm_http_impl.h - private to gm_http.c (the server: accepting, the cap,
 * reading requests, the loop's turns, the deadlines) and gm_http_reply.c
 * (the answers: routes, the /metrics render cache, writing, and what
 * follows an answer): the server and connection records and what the
 * two files call of each other. Loop thread only.
 *
 * A connection is in one state at a time, each with its deadline:
 * READING a request's head (from the accept or its first byte), QUEUED
 * with a complete head until its turn comes (no deadline: turns come
 * every loop iteration), WRITING the answer, IDLE between requests,
 * LINGERING after a last answer. While QUEUED or WRITING it is not
 * read, so a client that pipelines requests gets them answered one at a
 * time.
 */
#ifndef GM_HTTP_IMPL_H
#define GM_HTTP_IMPL_H

#include <uv.h>

#include "gm_config.h"
#include "gm_stats.h"

/* gm_http.h's types, named here without including it, which would make
 * the two modules include each other. */
typedef struct gm_http gm_http;
typedef struct gm_http_ops gm_http_ops;

/* How long a connection lingers after its last answer, at most. */
#define GM_HTTP_LINGER_US 1e6

enum gm_http_state {
	GM_HTTP_READING,
	GM_HTTP_QUEUED,
	GM_HTTP_WRITING,
	GM_HTTP_IDLE,
	GM_HTTP_LINGERING,
};

/* A rendered /metrics body, shared by the answers that send it. */
typedef struct gm_http_body {
	unsigned refs; /* the cache's, and each write's */
	size_t len;
	double made_us;
	char *text;
} gm_http_body;

typedef struct gm_http_conn gm_http_conn;
struct gm_http_conn {
	uv_tcp_t tcp;
	gm_http *h;
	gm_http_conn *prev, *next; /* connections served */
	gm_http_conn *queue_next;  /* QUEUED: the next to answer */
	enum gm_http_state state;
	double since_us; /* when the state's deadline began */
	char *buf;	 /* request bytes not yet answered; cap of them */
	size_t len, cap;
	size_t searched; /* bytes searched for the head's end */
	size_t head_len; /* QUEUED, WRITING: the head being answered */
	int served;	 /* counted open (not a refusal) */
	int keep;	 /* serve another request after this answer */
	uv_write_t wr;
	uv_shutdown_t sd;
	gm_http_body *body; /* the answer's when it is the shared one */
	char head[512];	    /* the answer's status line and headers; small
			       bodies too */
};

struct gm_http {
	uv_loop_t *loop;
	const gm_config *cfg;
	const gm_http_ops *ops;
	void *arg;
	gm_stats_http *n;
	uv_tcp_t server;
	uv_timer_t sweep;
	uv_idle_t pump;
	gm_http_conn *conns;
	gm_http_conn *queue_head, *queue_tail;
	unsigned accepts;   /* this turn */
	int accept_waiting; /* libuv holds one for us to accept */
	gm_http_body *cache;
	double refusal_logged, accept_err_logged;
	unsigned handles; /* not yet closed; h goes with the last */
	int closing;
};

/* gm_http.c: closes c (idempotent), uncounting and unlinking it. */
void gm_http_conn_close(gm_http_conn *c);

/* gm_http.c: c enters state s, whose deadline starts now. */
void gm_http_conn_state(gm_http_conn *c, enum gm_http_state s);

/* gm_http.c: (re)starts reading c; 0 or libuv's error. */
int gm_http_conn_read(gm_http_conn *c);

/* gm_http.c: what c has read so far: a complete head queues the request
 * for its turn, a full buffer without one is answered 431. */
void gm_http_conn_take(gm_http_conn *c);

/* gm_http_reply.c: answers c's queued request. */
void gm_http_answer(gm_http_conn *c);

/* gm_http_reply.c: writes an answer: status, type, and either the
 * shared body b (whose reference it takes) or the short text. HEAD
 * (head_only) sends the headers alone; keep: the connection serves
 * another request after it, else it lingers and closes. */
void gm_http_reply(gm_http_conn *c, int status, const char *type,
		   const char *text, gm_http_body *b, int head_only, int keep);

/* gm_http_reply.c: drops a reference to b (NULL: nothing). */
void gm_http_body_release(gm_http_body *b);

#endif
