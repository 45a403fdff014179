/*
 * gm_http_req.c - an HTTP/1.x request head, read in place; see
 * gm_http_req.h.
 */
#include "gm_http_req.h"

#include <string.h>
#include <strings.h>

/* A span of the head: [p, p + n). */
typedef struct span {
	const char *p;
	size_t n;
} span;

size_t gm_http_req_end(const char *buf, size_t len, size_t from)
{
	/* The terminator may have begun in what was searched before. */
	for (size_t i = from > 3 ? from - 3 : 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

static span trim(span s)
{
	while (s.n > 0 && is_space(s.p[0])) {
		s.p++;
		s.n--;
	}
	while (s.n > 0 && is_space(s.p[s.n - 1]))
		s.n--;
	return s;
}

/* Header names and tokens are case-insensitive, methods are not. */
static int span_is(span s, const char *text)
{
	return s.n == strlen(text) && strncasecmp(s.p, text, s.n) == 0;
}

static int span_eq(span s, const char *text)
{
	return s.n == strlen(text) && memcmp(s.p, text, s.n) == 0;
}

/* Whether the comma-separated list v names tok (case aside). */
static int has_token(span v, const char *tok)
{
	const char *end = v.p + v.n, *comma;

	for (const char *p = v.p; p < end; p = comma + 1) {
		comma = memchr(p, ',', (size_t)(end - p));
		if (comma == NULL)
			comma = end;
		if (span_is(trim((span){p, (size_t)(comma - p)}), tok))
			return 1;
	}
	return 0;
}

/* The next line at *p before end, without its CR LF; *p moves past it.
 * A head always ends with an empty line, so one is always found. */
static span next_line(const char **p, const char *end)
{
	const char *eol = memchr(*p, '\n', (size_t)(end - *p));
	span s = {*p, 0};

	if (eol == NULL)
		eol = end;
	s.n = (size_t)(eol - *p);
	if (s.n > 0 && s.p[s.n - 1] == '\r')
		s.n--;
	*p = eol < end ? eol + 1 : end;
	return s;
}

/* "METHOD SP TARGET SP HTTP/1.x" */
static int request_line(span l, gm_http_req *r)
{
	const char *end = l.p + l.n, *sp1, *sp2, *q;
	span method, version;

	if ((sp1 = memchr(l.p, ' ', l.n)) == NULL)
		return -1;
	method = (span){l.p, (size_t)(sp1 - l.p)};
	r->method = span_eq(method, "GET")    ? GM_HTTP_GET
		    : span_eq(method, "HEAD") ? GM_HTTP_HEAD
					      : GM_HTTP_OTHER;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
	if (sp2 == NULL || sp2 == sp1 + 1)
		return -1;
	version = (span){sp2 + 1, (size_t)(end - sp2 - 1)};
	if (!span_eq(version, "HTTP/1.1") && !span_eq(version, "HTTP/1.0"))
		return -1;
	/* HTTP/1.1 keeps the connection unless told otherwise; 1.0 closes
	 * it unless told otherwise. */
	r->keep_alive = version.p[7] == '1';
	r->path = sp1 + 1;
	q = memchr(r->path, '?', (size_t)(sp2 - r->path));
	r->path_len = (size_t)((q != NULL ? q : sp2) - r->path);
	return 0;
}

static int header(span l, gm_http_req *r)
{
	const char *colon = memchr(l.p, ':', l.n);
	span name, value;

	/* A line that begins with space continues the last (obsolete
	 * folding): refused, as RFC 9112 5.2 allows. */
	if (colon == NULL || colon == l.p || is_space(l.p[0]))
		return -1;
	name = (span){l.p, (size_t)(colon - l.p)};
	value = trim((span){colon + 1, (size_t)(l.p + l.n - colon - 1)});
	if (span_is(name, "Connection")) {
		if (has_token(value, "close"))
			r->keep_alive = 0;
		else if (has_token(value, "keep-alive"))
			r->keep_alive = 1;
	} else if (span_is(name, "Content-Length")) {
		r->has_body |= value.n == 0;
		for (size_t i = 0; i < value.n; i++)
			r->has_body |= value.p[i] != '0';
	} else if (span_is(name, "Transfer-Encoding")) {
		r->has_body = 1;
	}
	return 0;
}

int gm_http_req_parse(const char *buf, size_t len, gm_http_req *r)
{
	const char *p = buf, *end = buf + len;
	span l;

	memset(r, 0, sizeof(*r));
	if (memchr(buf, '\0', len) != NULL)
		return -1;
	/* Empty lines before the request line are skipped (RFC 9112 2.2). */
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	if (request_line(next_line(&p, end), r) != 0)
		return -1;
	while ((l = next_line(&p, end)).n > 0)
		if (header(l, r) != 0)
			return -1;
	return 0;
}

int gm_http_req_is(const gm_http_req *r, const char *path)
{
	return r->path_len == strlen(path) &&
	       memcmp(r->path, path, r->path_len) == 0;
}
