/*
 * gm_http_ops.h - what the HTTP endpoints (gm_http.h) need from the
 * daemon: the /metrics body and whether gemmd is ready. Apart from
 * gm_http.h so that the answers (gm_http_reply.c) see it without the
 * server's header.
 */
#ifndef GM_HTTP_OPS_H
#define GM_HTTP_OPS_H

typedef struct gm_http_ops gm_http_ops;

/* What the endpoints need from the daemon; called on the loop thread. */
struct gm_http_ops {
	/* The /metrics body: malloc'd text, or NULL when out of memory. */
	char *(*metrics)(void *arg);
	/* Non-zero when gemmd takes work; else *why says why not. */
	int (*ready)(void *arg, const char **why);
};

#endif
