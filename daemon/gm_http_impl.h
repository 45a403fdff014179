/*
 * gm_http_impl.h - private to gm_http.c: the HTTP server's and its
 * connections' records. Loop thread only.
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
#include "gm_http_reply.h"
#include "gm_stats.h"

typedef struct gm_http gm_http;

/* How long a connection lingers after its last answer, at most. */
#define GM_HTTP_LINGER_US 1e6

enum gm_http_state {
	GM_HTTP_READING,
	GM_HTTP_QUEUED,
	GM_HTTP_WRITING,
	GM_HTTP_IDLE,
	GM_HTTP_LINGERING,
};

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
	gm_stats_http *n;
	gm_http_routes routes; /* the answers': the same cfg and n */
	uv_tcp_t server;
	uv_timer_t sweep;
	uv_idle_t pump;
	gm_http_conn *conns;
	gm_http_conn *queue_head, *queue_tail;
	unsigned accepts;   /* this turn */
	int accept_waiting; /* libuv holds one for us to accept */
	double refusal_logged, accept_err_logged;
	unsigned handles; /* not yet closed; h goes with the last */
	int closing;
};

#endif
