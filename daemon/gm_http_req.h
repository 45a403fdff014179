/*
 * gm_http_req.h - reading an HTTP/1.x request head (RFC 9112): where it
 * ends, its request line, and the few headers the endpoints heed.
 *
 * Pure functions over bytes the caller holds: nothing is allocated and
 * nothing is copied, so the endpoints can bound a request by the size
 * of their buffer alone. Only what a GET or HEAD of gemmd's endpoints
 * needs is read; anything malformed is refused rather than guessed at
 * (NUL bytes, a line without a colon, obsolete line folding, a version
 * other than HTTP/1.0 or 1.1). Any thread.
 */
#ifndef GM_HTTP_REQ_H
#define GM_HTTP_REQ_H

#include <stddef.h>

enum gm_http_method { GM_HTTP_GET, GM_HTTP_HEAD, GM_HTTP_OTHER };

typedef struct gm_http_req {
	int method;	  /* enum gm_http_method */
	const char *path; /* the target up to '?': not NUL-terminated */
	size_t path_len;
	int keep_alive; /* the connection may serve another request */
	int has_body;	/* Content-Length other than 0, or Transfer-Encoding */
} gm_http_req;

/* The length of the head at buf (request line, headers and the empty
 * line that ends them, CRLF or bare LF), or 0 when len bytes hold no
 * complete head yet. from: bytes already searched by an earlier call on
 * the same buffer, so a head read in pieces is searched once. */
size_t gm_http_req_end(const char *buf, size_t len, size_t from);

/* Parses the head of len bytes at buf (as gm_http_req_end measured it)
 * into r, which points into buf. 0, or -1 when it is malformed. */
int gm_http_req_parse(const char *buf, size_t len, gm_http_req *r);

/* Whether r's path is path. */
int gm_http_req_is(const gm_http_req *r, const char *path);

#endif
