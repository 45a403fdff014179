/*
 * test_http_req.c - gm_http_req: where a request head ends (CRLF and bare
 * LF, found again when read in pieces), and a table of heads with what
 * each parses to, or that it is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "gm_http_req.h"

static void test_end(void **state)
{
	static const char crlf[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET";
	static const char lf[] = "GET / HTTP/1.1\nHost: x\n\nnext";
	size_t whole = strlen(crlf) - 3;

	(void)state;
	assert_int_equal(gm_http_req_end(crlf, strlen(crlf), 0), whole);
	assert_int_equal(gm_http_req_end(lf, strlen(lf), 0), strlen(lf) - 4);
	/* Byte by byte, each call told what the last one searched: the end
	 * is found at the byte that completes it, and not before. */
	for (size_t n = 1; n <= whole; n++)
		assert_int_equal(gm_http_req_end(crlf, n, n - 1),
				 n == whole ? whole : 0);
	assert_int_equal(gm_http_req_end("GET / HTTP/1.1\r\n", 16, 0), 0);
	assert_int_equal(gm_http_req_end("", 0, 0), 0);
}

static const struct head_case {
	const char *head;
	int rv;
	int method;
	const char *path;
	int keep_alive, has_body;
} heads[] = {
    {"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", 0, GM_HTTP_GET, "/metrics", 1,
     0},
    {"HEAD /healthz HTTP/1.1\r\n\r\n", 0, GM_HTTP_HEAD, "/healthz", 1, 0},
    {"GET /readyz?x=1 HTTP/1.0\r\n\r\n", 0, GM_HTTP_GET, "/readyz", 0, 0},
    {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 0, GM_HTTP_GET, "/", 1,
     0},
    {"GET / HTTP/1.1\r\nconnection: foo, close\r\n\r\n", 0, GM_HTTP_GET, "/", 0,
     0},
    {"GET / HTTP/1.1\nX: y\n\n", 0, GM_HTTP_GET, "/", 1, 0},
    {"\r\nGET / HTTP/1.1\r\n\r\n", 0, GM_HTTP_GET, "/", 1, 0},
    {"GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 0, GM_HTTP_GET, "/", 1, 0},
    {"GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 0, GM_HTTP_GET, "/", 1, 1},
    {"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 0, GM_HTTP_GET,
     "/", 1, 1},
    {"POST /metrics HTTP/1.1\r\n\r\n", 0, GM_HTTP_OTHER, "/metrics", 1, 0},
    {"get /metrics HTTP/1.1\r\n\r\n", 0, GM_HTTP_OTHER, "/metrics", 1, 0},
    /* Refused. */
    {"GET /metrics\r\n\r\n", -1, 0, NULL, 0, 0},
    {"GET /metrics HTTP/2.0\r\n\r\n", -1, 0, NULL, 0, 0},
    {"GET /a b HTTP/1.1\r\n\r\n", -1, 0, NULL, 0, 0},
    {"GET  HTTP/1.1\r\n\r\n", -1, 0, NULL, 0, 0},
    {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", -1, 0, NULL, 0, 0},
    {"GET / HTTP/1.1\r\n: empty name\r\n\r\n", -1, 0, NULL, 0, 0},
    {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", -1, 0, NULL, 0, 0},
    {"\r\n\r\n", -1, 0, NULL, 0, 0},
};

static void test_heads(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		const struct head_case *t = &heads[i];
		gm_http_req r;
		int rv = gm_http_req_parse(t->head, strlen(t->head), &r);

		if (rv != t->rv)
			fail_msg("case %zu: %d, want %d", i, rv, t->rv);
		if (rv != 0)
			continue;
		assert_int_equal(r.method, t->method);
		assert_true(gm_http_req_is(&r, t->path));
		assert_int_equal(r.keep_alive, t->keep_alive);
		assert_int_equal(r.has_body, t->has_body);
	}
}

/* A NUL byte anywhere in the head is refused. */
static void test_nul(void **state)
{
	static const char head[] = "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n";
	gm_http_req r;

	(void)state;
	assert_int_equal(gm_http_req_parse(head, sizeof(head) - 1, &r), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_end),
	    cmocka_unit_test(test_heads),
	    cmocka_unit_test(test_nul),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
